"""Speculative decoding, one cycle at a time: draft, one verify pass, accept/reject, residual or
bonus, cache rollback."""
import streamlit as st

from ui.learner import count_prediction
from ui.export import export_lesson
from ui.charts import chart, figure
from ui.views import render
from ui.stepping import controls, get_replay, link, play_interval, play_speed, play_tick
from ui.sidebar import encode, get_models, sidebar
from ui.state import bounded, keep, linked, ON_OFF, slider

from specviz.drafters import ALIASES, LABELS, drafter_choices, make_drafter
from specviz.figures import spec_cycle as F
from specviz.figures import speedup as S
from specviz.views import whole_run
from specviz.views.speculative_decoding import spec_phases, spec_stages, speculative_event
from specviz.practice.predict import mark_cycle, score
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps

settings = sidebar()
st.title("Speculative decoding")
st.caption("A small draft guesses K tokens; the big target checks all of them in one forward pass and keeps "
           "the longest prefix it agrees with — plus one token of its own. The output is exactly the target's.")
models = get_models(settings)

bounded("sp_seed", 0, 2**31 - 1, 0, "seed", "Seed")
# ?drafter=ngram&mode=sampling&dynamic=1 on a first visit
linked("sp_drafter", "drafter", {**LABELS, **{old: LABELS[new] for old, new in ALIASES.items()}})
linked("sp_mode", "mode", {"greedy": "greedy match", "sampling": "rejection sampling", "block": "block verification"})
linked("sp_dynamic", "dynamic", ON_OFF)
c1, c2, c3, c4 = st.columns(4)
k = slider(c1, "K (draft tokens per cycle)", "sp_k", 1, 16, 4, "k")
drafters = drafter_choices(models)
if st.session_state.get("sp_drafter") not in drafters:  # e.g. a link asked for a draft these models lack
    st.session_state["sp_drafter"] = next(iter(drafters))
drafter_name = c2.selectbox("Drafter", list(drafters), key="sp_drafter")
mode = c3.radio("Verification", ["greedy match", "rejection sampling", "block verification"], key="sp_mode",
                horizontal=True, help="Rejection sampling judges the drafts one by one and stops at the first "
                                      "rejection; block verification (Sun et al., ICLR 2025) judges them together "
                                      "and keeps at least as many on average. Both give exactly the target's "
                                      "distribution.")
max_new = slider(c4, "Max new tokens", "sp_max", 8, 128, 48, "max_new_tokens")
c5, c6, c7, c8 = st.columns(4)
sampling = mode != "greedy match"
acceptance = "block" if mode == "block verification" else "token"  # the sampling rule (greedy is greedy either way)
temperature = slider(c5, "Temperature", "sp_temp", 0.05, 2.0, 1.0, "temperature", step=0.05, disabled=not sampling,
                     help="Greedy match uses temperature 0; rejection sampling and block verification need a "
                          "temperature above 0.")
top_p = slider(c6, "Top-p", "sp_top_p", 0.05, 1.0, 1.0, "top_p", step=0.05, disabled=not sampling)
seed = c7.number_input("Seed", 0, 2**31 - 1, key="sp_seed", disabled=not sampling)
dynamic = c8.toggle("Dynamic K", key="sp_dynamic",
                    help="K grows by 2 after a cycle with every draft accepted and shrinks by 1 after a rejection.")
keep("sp_predict")
predict = st.toggle("Predict first", key="sp_predict", disabled=acceptance == "block",
                    help="Before each cycle's verdicts are drawn, predict from the verify pass on screen which drafts "
                         "the target accepts; the next Step (→) reveals and marks each prediction. Not under block "
                         "verification: its verdicts hang on weights the verify chart does not show."
                    ) and acceptance != "block"
ee_layers = 4
if drafter_name.startswith("early exit"):
    ee_layers = slider(st.columns(4)[0], "Early-exit layers L", "sp_ee",
                       1, models.target.config.num_hidden_layers - 1, 4, "ee")

ids = encode(models, settings, max_new)
cfg = SamplingConfig(temperature if sampling else 0.0, 0, top_p if sampling else 1.0, int(seed) if sampling else 0)
kind = drafters[drafter_name]
params = (tuple(ids), k, kind, ee_layers, cfg, dynamic, max_new, settings.target, settings.draft) + (
    ("block",) if acceptance == "block" else ())  # token-wise keeps the key its recorded runs have


def factory():
    drafter = make_drafter(kind, models, early_exit_layers=ee_layers)
    return speculative_steps(models.target, drafter, models.tokenizer, ids, max_new, k, cfg, dynamic, k_max=16,
                             acceptance=acceptance)


link("spec", "Speculative_decoding", dict(
    k=k, drafter=kind, mode=("block" if acceptance == "block" else "sampling") if sampling else "greedy",
    max_new_tokens=max_new, dynamic=dynamic,
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
            cols[i % len(cols)].radio(f"{i + 1}: {F.md_escape(F.label_plain(d.text))}", ["accept", "reject"],
                                      index=None, key=keys[i], horizontal=True)
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
    last = replay.finished and replay.event == len(replay.events) - 1
    event = speculative_event(replay.events, replay.event, models.tokenizer, ids, kind, last, predict)
    stages = spec_stages(cycle)
    render(event, replay.phase, {"predictions": lambda: predictions(cycle, "decide" in stages[: replay.phase + 1])})


view()
play_speed("spec")
export_lesson("sp", "speculative", params, [replay], lambda: whole_run(
    speculative_event, list(replay.events), models.tokenizer, ids, kind), settings.prompt,
    dict(drafter=kind, K=k, verification=mode, max_new_tokens=max_new, dynamic_K=dynamic,
         **(dict(temperature=temperature, top_p=top_p, seed=int(seed)) if sampling else {})))
# Outside the cycle's fragment: drawn when the page opens (the browser loads its chart library while the learner
# reads, not on the first click) and never again while stepping (a Step reruns only the fragment)
st.markdown(f"**What K = {k} buys.** If each drafted token is accepted with probability $a$, independently, a verify "
            f"pass yields $1 + a + \\dots + a^{{{k}}} = \\frac{{1 - a^{{{k + 1}}}}}{{1 - a}}$ tokens on average: "
            f"with every cycle drafting K, the run's *Tokens per verify pass* above is rarely on the curve at its "
            f"*Accepted ÷ ruled on*: real acceptance is not independent. Where it clusters or rises with depth (a "
            f"position reached after a run of acceptances is an easy stretch, as in SpecViz's benchmark runs), "
            f"pooling it into one $a$ overstates how often the deep positions are reached and the run sits below "
            f"the curve; where it falls with depth, above. The Speedup lab adds what drafting costs.")
chart(figure(S.what_k_buys, k), key="k_buys")
