"""SpecViz entrypoint: the page list and the home page (what greedy, beam search and speculative decoding are,
and where to see each). The pages are declared (ui/registry.py) with st.navigation, not found from pages/, so that the
sidebar names every page, this one "Home" rather than the file name "app"."""
import streamlit as st

from ui.space import ensure_embedded
from ui.sidebar import encode, get_models, sidebar
from ui.registry import PAGES, navigation, page_link


def home():
    st.set_page_config(page_title="SpecViz — see LLM decoding decide")
    settings = sidebar()


    st.title("SpecViz — watch a real language model decode")
    st.markdown(
        "Every page drives **SmolLM2-135M-Instruct** (embedded, offline) one step at a time and draws each "
        "decision it makes. Pick a prompt in the sidebar, open a page, press **Step**.")

    start_here()

    st.subheader("The mental model: search vs accelerator")
    a, b, c = st.columns(3)
    with a:
        st.markdown("#### Greedy")
        st.markdown("Take the single most likely next token, every step. Fast and deterministic, but short-sighted: "
                    "a token that looks best now can lead into a less likely sentence overall.")
    with b:
        st.markdown("#### Beam search — a *search*")
        st.markdown("Keep the **B** best partial sequences by total log-probability, expand them all, prune back to B. "
                    "It usually finds likelier sequences than greedy (not always: "
                    "the greedy path itself can be pruned), "
                    "changing *what* is generated (often blander text in chat). It costs about B× the compute per "
                    "token, and the generated tokens' KV cache grows B-fold (the prompt's can be shared by all beams).")
    with c:
        st.markdown("#### Speculative decoding — an *accelerator*")
        st.markdown("A cheap draft guesses K tokens; the target verifies all of them in **one** forward pass and keeps "
                    "what it agrees with. It changes only *how fast* the target's own output appears: with the right "
                    "accept rule the output is exactly the target's — its greedy tokens, or its sampling distribution "
                    "(in exact arithmetic: floating-point kernels can flip a near-tie).")

    live_comparison(settings)

    st.subheader("Pages")
    for page in PAGES:
        page_link(page.path)
    st.caption("Each page keeps its own run per browser tab: two tabs never share a cursor.")


def start_here():
    """A one-week study path through the pages, drills and quiz, with the learner's progress on it."""
    from specviz.practice.plan import complete, status
    from ui.learner import current, name_hint, progress
    from ui.registry import BY_PATH

    me = current()
    if me is None:
        stats, cards, predictions, mocks = {}, 0, {}, 0
    else:
        p = progress()
        stats, cards = p.drill_stats(me), sum(c["seen"] for c in p.cards(me).values())
        predictions, mocks = p.predictions_by_page(me), len(p.mocks(me))
    days = status(stats, cards, predictions, mocks)
    done = sum(complete(parts) for _, parts in days)
    with st.expander(f"**Start here: a week to interview-ready** · {done} of {len(days)} days done"
                     if me is not None else "**Start here: a week to interview-ready**",
                     expanded=me is None or done < 7):
        if me is None:
            st.caption(name_hint("Type your name in the sidebar and your progress is kept (drills, quiz boxes, "
                                 "predictions, mock interviews) and ticked off here."))
        for n, (day, parts) in enumerate(days, 1):
            mark = "✅" if me is not None and complete(parts) else "▫️"
            counts = " · ".join(f"{what} {got}/{goal}" for what, got, goal in parts)
            st.markdown(f"{mark} **Day {n} · {day.title}** — {day.practise}"
                        + (f" *({counts})*" if me is not None else ""))
            targets = list(day.pages) + ["pages/10_Practice.py"] * bool(day.drills) + (
                ["pages/6_Interview_QA.py"] * bool(day.quiz_cards or day.mocks))
            targets = list(dict.fromkeys(targets))  # each page once
            for col, path in zip(st.columns(len(targets)), targets):
                col.page_link(path, label=BY_PATH[path].title, icon=BY_PATH[path].icon)
    if me is not None:
        from ui.grading import weak_points
        weak_points(me, progress(), "home")


def live_comparison(settings):
    """Greedy vs beam vs speculative on the sidebar's prompt, run live on a click (specviz.labs.side_by_side does the
    work)."""
    from specviz.drafters import drafter_choices
    from specviz.labs.side_by_side import side_by_side

    st.subheader("See it: the three on your prompt")
    st.caption("Runs greedy, beam search and speculative decoding (greedy verification) on the prompt in the sidebar "
               "with the real model. Beam may change the words; "
               "speculative gives greedy's words, in fewer target passes.")
    h1, h2, h3 = st.columns(3)
    max_new = h1.slider("New tokens", 8, 64, 24, key="home_max")
    beams = h2.slider("Beam width B", 2, 8, 3, key="home_b")
    k = h3.slider("Drafts per cycle K", 1, 8, 4, key="home_k")
    key = (settings.prompt, settings.chat, max_new, beams, k, settings.target, settings.draft)
    if st.button("Run all three ▶", type="primary", key="home_run",
                 help="Speculative decoding uses the best drafter these models have (the feature draft by default)."):
        models = get_models(settings)  # loaded on the click: the home page opens without waiting for the model
        ids = encode(models, settings, max_new)
        name, kind = next(iter(drafter_choices(models).items()))
        bar = st.progress(0.0, text="starting…")
        runs = side_by_side(models, ids, max_new, beams, k, kind, drafter_label=name,
                            progress=lambda f, m: bar.progress(f, text=m))
        bar.empty()
        st.session_state["home_runs"] = (key, runs)
    saved = st.session_state.get("home_runs")
    if not saved:
        return
    if saved[0] != key:
        st.caption("Settings or prompt changed since this run: press **Run all three** again to update it.")
    cols = st.columns(3)
    for col, r in zip(cols, saved[1]):
        with col:
            st.markdown(f"**{r.method}**")
            st.text(r.text or "(empty)")
            m1, m2 = st.columns(2)
            m1.metric("Target passes", r.target_passes, help=r.note)
            m2.metric("Time", f"{r.seconds:.2f} s", help="One run, wall-clock on this machine (noisy: ±10 % is usual).")
            if r.logprob is not None:
                st.caption(f"{r.tokens} tokens · total log p {r.logprob:.2f}")
            else:
                st.caption(f"{r.tokens} tokens · {r.note}")
            if r.method != "greedy":
                st.caption("same words as greedy ✓" if r.same_as_greedy else "different words from greedy")


ensure_embedded()  # a Hugging Face Space's first start installs the weights-only packages (ui/space.py); else nothing
navigation(home)
