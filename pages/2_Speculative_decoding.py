"""Speculative decoding, one cycle at a time: draft, one verify pass, accept/reject, residual or
bonus, cache rollback."""
import streamlit as st

from ui.learner import count_prediction
from ui.common import (ON_OFF, bounded, chart, controls, figure, encode, get_models, get_replay, keep, link, linked,
                       play_interval, play_speed, play_tick, sidebar, slider)

from specviz.drafters import ALIASES, LABELS, drafter_choices, make_drafter
from specviz.figures import spec_cycle as F
from specviz.figures import speedup as S
from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.lesson import speculative_lesson
from specviz.metrics import spec_phases, spec_stages, spec_summary
from specviz.practice.predict import mark_cycle, score
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.engine.step import output_pieces, token_text

settings = sidebar()
st.title("Speculative decoding")
st.caption("A small draft guesses K tokens; the big target checks all of them in one forward pass and keeps "
           "the longest prefix it agrees with — plus one token of its own. The output is exactly the target's.")
models = get_models(settings)

bounded("sp_seed", 0, 2**31 - 1, 0, "seed", "Seed")
# ?drafter=ngram&mode=sampling&dynamic=1 on a first visit
linked("sp_drafter", "drafter", {**LABELS, **{old: LABELS[new] for old, new in ALIASES.items()}})
linked("sp_mode", "mode", {"greedy": "greedy match", "sampling": "rejection sampling"})
linked("sp_dynamic", "dynamic", ON_OFF)
c1, c2, c3, c4 = st.columns(4)
k = slider(c1, "K (draft tokens per cycle)", "sp_k", 1, 16, 4, "k")
drafters = drafter_choices(models)
if st.session_state.get("sp_drafter") not in drafters:  # e.g. a link asked for a draft these models lack
    st.session_state["sp_drafter"] = next(iter(drafters))
drafter_name = c2.selectbox("Drafter", list(drafters), key="sp_drafter")
mode = c3.radio("Verification", ["greedy match", "rejection sampling"], key="sp_mode", horizontal=True)
max_new = slider(c4, "Max new tokens", "sp_max", 8, 128, 48, "max_new_tokens")
c5, c6, c7, c8 = st.columns(4)
sampling = mode == "rejection sampling"
temperature = slider(c5, "Temperature", "sp_temp", 0.05, 2.0, 1.0, "temperature", step=0.05, disabled=not sampling,
                     help="Greedy match uses temperature 0; rejection sampling needs a temperature above 0.")
top_p = slider(c6, "Top-p", "sp_top_p", 0.05, 1.0, 1.0, "top_p", step=0.05, disabled=not sampling)
seed = c7.number_input("Seed", 0, 2**31 - 1, key="sp_seed", disabled=not sampling)
dynamic = c8.toggle("Dynamic K", key="sp_dynamic",
                    help="K grows by 2 after a cycle with every draft accepted and shrinks by 1 after a rejection.")
keep("sp_predict")
predict = st.toggle("Predict first", key="sp_predict",
                    help="Before each cycle's verdicts are drawn, predict from the verify pass on screen which drafts "
                         "the target accepts; the next Step (→) reveals and marks each prediction.")
ee_layers = 4
if drafter_name.startswith("early exit"):
    ee_layers = slider(st.columns(4)[0], "Early-exit layers L", "sp_ee", 1, models.target.config.num_hidden_layers - 1, 4, "ee")

ids = encode(models, settings, max_new)
cfg = SamplingConfig(temperature if sampling else 0.0, 0, top_p if sampling else 1.0, int(seed) if sampling else 0)
kind = drafters[drafter_name]
params = (tuple(ids), k, kind, ee_layers, cfg, dynamic, max_new, settings.target, settings.draft)


def factory():
    drafter = make_drafter(kind, models, early_exit_layers=ee_layers)
    return speculative_steps(models.target, drafter, models.tokenizer, ids, max_new, k, cfg, dynamic, k_max=16)


link("spec", "Speculative_decoding", dict(
    k=k, drafter=kind, mode="sampling" if sampling else "greedy", max_new_tokens=max_new, dynamic=dynamic,
    **(dict(temperature=temperature, top_p=top_p, seed=int(seed)) if sampling else {}),
    **(dict(ee=ee_layers) if kind == "early-exit" else {})))
replay = get_replay("spec", params, factory, phases=spec_phases)


def predictions(cycle, revealed: bool):
    """Predict first: one accept/reject per draft while the verify pass is on screen; once the verdicts are drawn,
    each prediction marked, a wrong one explained with the numbers on screen, and the session's score."""
    keys = {i: f"sp_pred_{id(replay)}_{cycle.cycle}_{i}" for i in range(cycle.k)}
    if not revealed:
        if "verify" not in spec_stages(cycle)[: replay.phase + 1]:
            return
        st.markdown("**Your prediction** · from the verify pass above: which drafts does the target accept? Drafts "
                    "are judged in order, and the first rejection ends the cycle (later drafts are never judged). "
                    "Then **Step** (→) reveals the verdicts.")
        cols = st.columns(min(cycle.k, 8))
        for i, d in enumerate(cycle.drafts):
            cols[i % len(cols)].radio(f"{i + 1}: {F.md_escape(F.label_plain(d.text))}", ["accept", "reject"], index=None,
                                      key=keys[i], horizontal=True)
        # a plain key too: the radios are not drawn once the verdicts are, and Streamlit then drops their values
        st.session_state.setdefault("sp_guesses", {})[(id(replay), cycle.cycle)] = {
            i: st.session_state[k] == "accept" for i, k in keys.items() if st.session_state.get(k)}
        return
    stored = st.session_state.setdefault("sp_guesses", {})
    guesses = stored[(id(replay), cycle.cycle)] = stored.get((id(replay), cycle.cycle), {}) | {
        i: st.session_state[k] == "accept" for i, k in keys.items() if st.session_state.get(k)}
    marked = mark_cycle(cycle, guesses)
    right, graded = score(marked)
    total = count_prediction("speculative", (id(replay), cycle.cycle), right, graded)
    lines = []
    for m in marked:
        if m.right is None:
            lines.append(f"- {m.position + 1}: " + ("no prediction" if m.actual is not None else m.why))
        else:
            lines.append(f"- {m.position + 1}: {'✓' if m.right else '✗'} you said "
                         f"{'accept' if m.predicted else 'reject'}, it was {'accepted' if m.actual else 'rejected'}"
                         + ("" if m.right else f": {m.why}"))
    with st.container(border=True):
        st.markdown(f"**Your predictions: {right} of {graded} right** (this session: {total[0]} of {total[1]})  \n"
                    + "\n".join(lines) if graded else "**No prediction made for this cycle.**  \n" + "\n".join(lines))


@st.fragment(run_every=play_interval("spec"))
def view():
    play_tick("spec", replay)
    controls("spec", replay, whole_label="Next cycle ⏩")
    cycle = replay.current()
    if cycle is None:
        st.info("Press **Step** to watch the draft propose its first token, or **Next cycle** for a whole cycle.")
        return
    stages = spec_stages(cycle)
    upto = stages[: replay.phase + 1]
    stage = upto[-1] + (f" {upto.count('draft')}/{cycle.k}" if upto[-1] == "draft" else "")
    left = max_new - sum(len(c.emitted) for c in replay.shown()[:-1]) - 1  # the most the engine lets it draft
    short = ("few tokens left" if cycle.k >= left else
             f"the context's copy of the matched n-gram continues for only {cycle.k}" if kind == "ngram" else
             "the drafter stopped early")
    drafted = (f"K = {cycle.k}" + (f" (asked {k}: {short})" if 0 < cycle.k < k and not dynamic else "")
               if cycle.k else ("K = 0: the n-gram lookup found no match in the context, so nothing was drafted"
                                if kind == "ngram" else "K = 0: too close to the token limit to draft"))
    st.markdown(f"**Cycle {cycle.cycle + 1}** · {drafted} · stage: *{stage}*" + (" · done" if replay.at_end else ""))
    if cycle.k:
        st.markdown(f"**{F.DRAFT_TITLE}** ({F.DRAFT_CAPTION})")
        shown = upto.count("draft")
        rows = F.draft_rows(cycle.k)
        for row in rows:
            if row.start < shown:
                columns = st.columns(len(rows[0]), gap="small")  # every row as wide as the first: same-size charts
                for i in row[: shown - row.start]:
                    chart(figure(F.draft_proposal, cycle, i), key=f"draft_fig_{i}", container=columns[i - row.start])
    else:  # the stages keep their numbers: 1 and 3 say there was nothing to do
        st.markdown("**1 · Nothing drafted:** the target decodes one token alone, as plain decoding would (still one "
                    "target pass).")
    if "verify" in upto:
        # predicting: the chart gives no verdict away until the verdicts are drawn
        chart(figure(F.verify_pass, cycle, not (predict and "decide" not in upto)), key="verify_fig")
    if predict and cycle.k:
        predictions(cycle, revealed="decide" in upto)
    if "decide" in upto:
        chart(figure(F.verdicts, cycle), key="verdict_fig")
    elif not cycle.k and "resolve" in upto:
        st.markdown("**3 · Nothing to judge:** no draft token, so no accept test.")
    if "resolve" in upto:
        fig = F.resolution(cycle)
        if fig is not None:
            chart(fig, key="resolve_fig")
        else:
            st.markdown(F.resolution_text(cycle))
        note = F.rare_draw_note(cycle)
        if note:
            st.info(note)
    if "cache" in upto:
        before = [t for c in replay.shown()[:-1] for t in c.emitted]
        context = list(ids) + before
        chart(F.cache_strip(cycle, [token_text(models.tokenizer, t) for t in context[-24:]]), key="cache_fig")
        if kind == "feature":
            st.caption("The feature draft keeps only positions it built from the target's real hidden states; the "
                       "ones it built on its own guesses are dropped and rebuilt next cycle from the states this "
                       "verify pass computed.")
    if kind == "feature" and cycle.prefill:
        st.caption("Before this first cycle the target ran one prefill pass over the prompt: the feature draft "
                   "reads the target's hidden states, so it cannot draft before they exist (counted as a target pass).")

    done = replay.shown() if "resolve" in upto else replay.shown()[:-1]
    tok = models.tokenizer
    out = [(t, o) for c in done for t, o in zip(c.emitted, c.origins)]
    # decoded as a whole: an emoji's byte tokens decoded one by one would read "��"
    chips = [(piece, o, t) for piece, (t, o) in zip(output_pieces(tok, [t for t, _ in out]), out)]
    st.markdown("**Output so far** " + F.chip_legend(), unsafe_allow_html=True)
    st.markdown(F.token_chips(chips) if chips else "<i>nothing yet</i>", unsafe_allow_html=True)
    s = spec_summary(done)
    # the counters add a cycle when its tokens are decided: say so while one is on screen half-way
    st.caption(f"Totals over {len(done)} decided cycle{'s' if len(done) != 1 else ''}"
               + (f" · cycle {cycle.cycle + 1}'s passes and tokens are added at its stage 4, when its new token "
                  "is decided" if len(done) < len(replay.shown()) else ""))
    m = st.columns(6)
    m[0].metric("Target passes", s["target_passes"],
                help=f"{s['verify_passes']} verify pass{'es' if s['verify_passes'] != 1 else ''}"
                     + (f" + {s['prefill_passes']} prefill pass over the prompt" if s["prefill_passes"] else ""))
    m[1].metric("Draft passes", s["draft_passes"])
    m[2].metric("Tokens per verify pass", f"{s['mean_acceptance_length']:.2f}" if s["verify_passes"] else "—",
                help="Mean acceptance length: output tokens / verify passes, including each pass's bonus or "
                     "correction token" + (" (the prefill pass is not a verify pass)." if s["prefill_passes"] else "."))
    m[3].metric("Accepted ÷ ruled on", "—" if s["acceptance_rate"] is None else f"{s['acceptance_rate']:.0%}",
                help="Acceptance rate per drafted token the verifier ruled on: the estimate of a in the speedup "
                     "formulas. Drafts after a cycle's first rejection are never ruled on.")
    m[4].metric("Accepted ÷ proposed", "—" if s["draft_acceptance_rate"] is None
                else f"{s['draft_acceptance_rate']:.0%}",
                help="Accepted / every drafted token, ruled on or not: vLLM's \"draft acceptance rate\" "
                     "(spec_decode_num_accepted_tokens ÷ num_draft_tokens). Far below the rate at its left at a "
                     "large K, where most drafts come after a rejection.")
    m[5].metric("Target alone would need", f"{s['plain_target_passes']} pass{'es' if s['plain_target_passes'] != 1 else ''}")
    if s["per_position"]:
        st.caption("Acceptance by draft position: " + " · ".join(
            f"{i + 1}: {a:.0%} ({r})" for i, (a, r) in enumerate(zip(s["per_position"], s["reached"]))))


view()
play_speed("spec")
with st.expander("Export this run as a lesson: one HTML file that steps offline, no Python needed"):
    st.caption("The whole run with every chart of this page, the prompt and settings, and the same Step / Back / Play "
               "keys, in one file (about 2 MB for 64 tokens) that opens in any browser without a network. "
               "`python -m specviz export --prompt … --out lesson.html` makes the same from the command line.")
    if st.button("Prepare the lesson", key="sp_export"):
        with st.spinner("Recording the whole run…"):
            try:
                replay.recording.fetch_until(10_000)
                st.session_state["sp_lesson"] = (params, speculative_lesson(
                    list(replay.events), models.tokenizer, ids, settings.prompt,
                    dict(drafter=kind, K=k, verification=mode, max_new_tokens=max_new, dynamic_K=dynamic,
                         **(dict(temperature=temperature, top_p=top_p, seed=int(seed)) if sampling else {}))))
            except SpecVizError as e:
                st.error(md_escape(str(e)))
    saved = st.session_state.get("sp_lesson")
    if saved and saved[0] == params:
        st.download_button(f"Download lesson.html ({len(saved[1].encode()) / 1e6:.1f} MB)", saved[1],
                           file_name="specviz_lesson.html", mime="text/html", key="sp_lesson_dl", on_click="ignore")
# Outside the cycle's fragment: drawn when the page opens (the browser loads its chart library while the learner
# reads, not on the first click) and never again while stepping (a Step reruns only the fragment)
st.markdown(f"**What K = {k} buys.** If each drafted token is accepted with probability $a$, independently, a verify "
            f"pass yields $1 + a + \\dots + a^{{{k}}} = \\frac{{1 - a^{{{k + 1}}}}}{{1 - a}}$ tokens on average: with every "
            f"cycle drafting K, the run's *Tokens per verify pass* above comes near the curve at its *Accepted ÷ ruled on*. "
            f"The Speedup lab adds what drafting costs.")
chart(figure(S.what_k_buys, k), key="k_buys")
