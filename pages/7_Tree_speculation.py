"""Tree speculation, one cycle at a time: a tree of drafted candidates, ONE target pass over every node with
a tree attention mask, the walk from the root, and the KV cache keeping only the accepted path."""

import streamlit as st

from ui.charts import chart
from ui.views import render
from ui.stepping import controls, get_replay, link, play_interval, play_speed, play_tick
from ui.sidebar import encode, get_models, sidebar
from ui.state import keep, linked, ON_OFF, slider
from ui.learner import count_prediction
from ui.export import export_lesson
from ui.measured import on_button

from specviz.drafters import make_drafter
from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.figures import tree as T
from specviz.views import whole_run
from specviz.views.tree_speculation import tree_event
from specviz.figures.tree import (break_even_figure, chain_vs_tree_figure, fit_figure, sized_tree_figure,
                                  verify_cost_figure)
from specviz.sampling import SamplingConfig
from specviz.tokens import token_text
from specviz.engine.tree import tree_speculative_steps
from specviz.labs.tree_sizing import size_and_measure
from specviz.labs.tree_compare import break_even, comparison, finding, measure_chain_vs_tree, tree_benchmark
from specviz.medusa_choices import MAX_CHARS, parse_choices
from specviz.practice.predict import mark_tree
from specviz.labs.tree_lossless import bin_names, chi_square_run, fit_verdict, load_typical_tv

settings = sidebar()
st.title("Tree speculation")
st.caption("Instead of one chain of guesses, the draft proposes a TREE: several candidates where it is unsure. "
           "The target scores every node in ONE forward pass: each node attends to the context and its own "
           "ancestors only, and siblings share a position id. The walk then keeps a path down from the root: the "
           "drafts accepted one level after another, usually ending at an inner node where no child passes, not at "
           "a leaf, and after them one token of the target's own (correction, resampled or bonus).")
models = get_models(settings)
if models.feature_draft is None:
    st.warning("The EAGLE-2 tree needs the feature draft, which exists only for the embedded target.")
    st.stop()
DRAFTERS = {"eagle2": "EAGLE-2 tree", "medusa": "Medusa heads", "feature": "chain (feature draft)"}
MODES = {"greedy": "greedy", "sampling": "sampling (T = 1)"}
linked("tr_drafter", "drafter", DRAFTERS)  # a link's settings on a first visit, then kept
linked("tr_mode", "mode", MODES)
linked("tr_typical", "typical", ON_OFF)
c1, c2, c3, c4 = st.columns(4)
choice = c1.radio("Drafter", list(DRAFTERS.values()), key="tr_drafter", horizontal=True)
budget = slider(c2, "Verify budget N (nodes)", "tr_budget", 2, 32, 12, "budget")
depth = slider(c3, "Depth", "tr_depth", 1, 8, 4, "depth")
mode = c4.radio("Verification", list(MODES.values()), key="tr_mode", horizontal=True)
st.caption("A tree usually emits more tokens per verify pass than a chain; whether it is also faster depends on the "
           "machine: on a CPU every verified position costs time, on a GPU a pass over 64 positions costs about "
           "as much as one. *Chain vs tree* below measures both on your prompt, on this machine.")
if choice == "Medusa heads" and models.medusa is None:
    st.info("The Medusa heads are not shipped with this build (models/medusa): showing the EAGLE-2 tree.")
    choice = "EAGLE-2 tree"
choices = None
if choice == "Medusa heads":
    linked("tr_choices", "choices")  # a link's edited list (parsed and checked below like typed text), then kept
    shipped = repr(list(models.medusa.choices))
    if "tr_choices" not in st.session_state:
        st.session_state["tr_choices"] = shipped
    elif len(st.session_state["tr_choices"]) > MAX_CHARS:  # from a link: max_chars bounds typing only
        st.error(f"The medusa_choices text was {len(st.session_state['tr_choices']):,} characters, at most "
                 f"{MAX_CHARS:,}: showing the shipped list instead.")
        st.session_state["tr_choices"] = shipped
    text = st.text_area("medusa_choices: each path (i₁, …, i_d) is head d's i_d-th likeliest token under the node "
                        "(i₁, …, i_d−1); a path's parent must be listed", key="tr_choices", height=80,
                        max_chars=MAX_CHARS)
    try:
        choices = parse_choices(text, models.medusa.num_heads)
    except SpecVizError as e:
        st.error(md_escape(str(e)) + " Using the shipped list instead.")
        choices = tuple(models.medusa.choices)
    st.caption(f"The tree: the list's paths in its order (a path brings its parent along), at most N = {budget} "
               f"nodes, each path at most {min(depth, models.medusa.num_heads)} deep (one head per depth: "
               f"{models.medusa.num_heads} heads, so a depth above that adds nothing); then ordered as Medusa orders "
               "them, by depth and then rank, so the likelier sibling is tried first.")
t1, t2, t3 = st.columns(3)
# a short label: "(LOSSY when sampling)" was cut in its column; the help says when
typical_on = t1.toggle("Typical acceptance (lossy)", key="tr_typical",
                       help="LOSSY when sampling. Medusa's rule as its repository runs it: when sampling, a "
                            "node passes when p(x) > min(ε, δ·exp(−H(p))); the likeliest of the longest passing "
                            "paths is kept and the next token is p's argmax. The output is no longer distributed as "
                            "the target's. Under greedy Medusa verifies by exact match, so there the toggle changes "
                            "nothing.")
epsilon = slider(t2, "ε (posterior threshold)", "tr_eps", 0.01, 0.5, 0.09, "eps", step=0.01, disabled=not typical_on)
delta = slider(t3, "δ (entropy factor)", "tr_delta", 0.01, 1.0, 0.3, "delta", step=0.01, disabled=not typical_on)
typical = (epsilon, delta) if typical_on else None
max_new = 32
ids = encode(models, settings, max_new)
cfg = SamplingConfig(1.0 if mode.startswith("sampling") else 0.0)
if typical_on and cfg.greedy:
    st.caption("Greedy: typical acceptance is exact match here, as in Medusa at temperature 0 (its "
               "`evaluate_posterior` compares each node with the argmax), so the output is plain greedy's. Switch "
               "Verification to sampling to see the lossy rule.")
elif typical_on:
    measured_tv = load_typical_tv()
    st.caption("Typical acceptance here is the rule Medusa's repository runs by default (`evaluate_posterior` with "
               "`fast=True`); its `fast=False` variant draws the token after the path from p with the tokens under "
               "the threshold removed instead."
               + (f" Measured for this rule (`models/medusa/typical_tv.json`, {measured_tv['date']}): on the first "
                  f"Medusa tree of each of {measured_tv['prompts']} held-out prompts at T = 1 (N = "
                  f"{measured_tv['budget']}, ε = {measured_tv['epsilon']}, δ = {measured_tv['delta']}) the first "
                  f"token's total variation from the target's p is **{measured_tv['typical_tv_mean']:.3f}** on "
                  f"average; the exact rule's is at most {measured_tv['exact_tv_max']:.0e} (float rounding)."
                  if measured_tv else ""))
keep("tr_predict")
predict = st.toggle("Predict first", key="tr_predict",
                    help="Each cycle first shows the drafted tree without verdicts: predict how many drafted tokens "
                         "the walk accepts, then Step (→) reveals the path.")
kind = {label: name for name, label in DRAFTERS.items()}[choice]
params = (tuple(ids), kind, budget, depth, cfg, choices, typical, settings.target, settings.draft)
link("tree", "Tree_speculation", dict(
    drafter=kind, budget=budget, depth=depth, mode="sampling" if cfg.temperature else "greedy", typical=typical_on,
    **(dict(eps=epsilon, delta=delta) if typical_on else {}),
    **(dict(choices=st.session_state["tr_choices"]) if kind == "medusa" and choices != tuple(models.medusa.choices)
       else {})))


def drafter(kind):
    return make_drafter(kind, models, choices=choices if kind == "medusa" else None)


def factory():
    return tree_speculative_steps(models.target, drafter(kind), models.tokenizer, ids, max_new,
                                  budget=budget, depth=depth, cfg=cfg, typical=typical)


replay = get_replay("tree", params + (predict,), factory, phases=2 if predict else 1)


def prediction(cycle):
    """Predict first: the drafted tree without its verdicts; how many drafted tokens does the walk accept?"""
    key = f"tr_pred_{id(replay)}_{cycle.cycle}"
    deepest = max(n.depth for n in cycle.nodes)
    if replay.phase == 0:
        st.number_input(f"How many drafted tokens does the walk accept? (0 to {deepest}; the draft's confidence q is "
                        "the opacity, hover for it) — then Step (→)", 0, deepest, value=None, key=key, step=1,
                        placeholder="your prediction")
        st.session_state.setdefault("tr_guesses", {})[key] = st.session_state.get(key)
        return
    guess = st.session_state.get("tr_guesses", {}).get(key)
    guess = st.session_state.get(key) if guess is None else guess
    if guess is None:  # Step pressed without a prediction: nothing to mark
        st.caption("No prediction made for this cycle.")
        return
    right, why = mark_tree(cycle, int(guess))
    total = count_prediction("tree", key, int(right), 1)
    with st.container(border=True):
        st.markdown(f"**Your prediction: {int(guess)} — {'✓ right' if right else '✗ not right'}** (this session: "
                    f"{total[0]} of {total[1]})  \n" + md_escape(why))


@st.fragment(run_every=play_interval("tree"))
def view():
    play_tick("tree", replay)
    controls("tree", replay)
    cycle = replay.current()
    if cycle is None:
        st.info("Press **Step** to draft the first tree and verify it.")
        return
    last = replay.finished and replay.event == len(replay.events) - 1
    render(tree_event(replay.events, replay.event, models.tokenizer, ids, max_new, typical, last, predict),
           replay.phase, {"prediction": lambda: prediction(cycle)})


view()
play_speed("tree")
export_lesson("tr", "tree", params, [replay], lambda: whole_run(
    tree_event, list(replay.events), models.tokenizer, ids, max_new, typical), settings.prompt,
              dict(drafter=choice, budget=budget, depth=depth, verification=mode, max_new_tokens=max_new,
                   **(dict(epsilon=epsilon, delta=delta) if typical else {})))

with st.expander("Why not just take the longest accepted path? (sampling)", expanded=False):
    st.markdown(T.WHY_NOT_LONGEST)

# ---------------------------------------------------------------- chain vs tree, measured on this machine
st.divider()
st.subheader("Chain vs tree at the same verify budget")
st.caption(f"Greedy, the same prompt, {max_new} tokens each (token identity with plain greedy checked). The EAGLE-2 "
           f"tree verifies N = {budget} nodes, i.e. N + 1 = {budget + 1} positions in its one target pass. Beside it "
           f"the same feature draft's chain at **K = N = {budget}** (the same verify cost: K + 1 = N + 1 positions) "
           f"and at **K = D = {depth}** (the tree's depth: fewer positions to verify). v(n) is one target forward "
           "over n positions on a cached context, measured on this machine with each measurement.")
bench = tree_benchmark()
if bench:
    t, c = bench["tree"], bench["chain"]
    st.caption(f"The project's benchmark of {bench['date']} (`docs/{bench['file']}`: {bench['prompts']} prompts × "
               f"{bench['max_new_tokens']} tokens, greedy, this project's 2-core CPU) found the **{bench['faster']}** "
               f"faster: the EAGLE-2 tree (N = {t['budget']}, depth {t['depth']}) emitted {t['tau']:.2f} tokens per "
               f"verify pass and ran at {t['speedup']:.2f}× plain greedy's speed; the feature draft's chain at K = "
               f"{c['k']} emitted {c['tau']:.2f} and ran at {c['speedup']:.2f}×. Your measurement below is of one "
               "prompt, timed twice: it can come out either way.")


ALPHA = 0.025  # the tree chi-square's two tests of the exact rule (first token, pairs) share 0.05
compared = on_button("tr_compare", (tuple(ids), budget, depth, choices, settings.target, settings.draft),
                     f"N = {budget}, depth {depth} on this prompt", "Measure chain vs tree",
                     lambda: measure_chain_vs_tree(models, ids, budget, depth, max_new, choices),
                     again="Measure again", status="Timing v(n) for n = 1 … 64 and the runs, interleaved…",
                     todo="time v(n) and the four runs (10–20 s on an idle 2-core CPU, longer when it is busy)")
if compared:  # drawn at the settings it was measured at (a stale result's may differ from the sliders')
    m = compared.value
    curve, rows, m_budget, m_depth = m["v"], comparison(m["compare"], m["v"]), m["budget"], m["depth"]
    chart(verify_cost_figure(curve), key="tr_vcost")
    chart(chain_vs_tree_figure(rows), key="tr_compare_fig")
    st.dataframe([{k: r[k] for k in ("name", "tokens", "target passes", "tokens per verify pass",
                                     "positions per verify pass", "v(n) ms", "seconds", "identical to greedy")}
                  for r in rows], hide_index=True)
    chain_row = next(r for r in rows if r["name"] == f"chain K={m_depth}")
    tree_row = next(r for r in rows if r["name"].startswith("EAGLE-2"))
    need = break_even(curve, chain_row["tokens per verify pass"], chain_row["positions per verify pass"],
                      [2, 4, 8, 12, 16, 24, 32, 48, 63])
    chart(break_even_figure(need, [(tree_row["name"], m_budget, tree_row["tokens per verify pass"])]),
          key="tr_breakeven")
    st.markdown(T.machine_says(finding(rows, curve), m_depth, m_budget, m["max_new"], bench, m["seconds"]))
    st.markdown(T.WHY_CPU)

# ---------------------------------------------------------------- a tree sized for this machine (issue 48)
st.divider()
st.subheader("A tree sized for this machine")
st.caption("Sequoia's question asked of EAGLE-2: which budget N and depth D give the most tokens per second HERE? "
           "Greedy cycles of one large tree (64 nodes, 8 deep) on three benchmark prompts say what every smaller "
           "tree would have accepted (EAGLE-2 keeps its best nodes by value, so a smaller tree keeps a prefix of the "
           "same ranking); the verify cost v(n) and the draft's pass are timed here. Expected tokens per second = "
           "tokens per cycle ÷ (D draft passes + v(N + 1)). Then the chosen tree, the default one and plain greedy "
           "decode the same prompts, timed: the measured points sit below the curve by the loop's own cost. "
           "Same as `python -m specviz decode --method speculative --tree eagle2 --tree-budget auto`.")
sized = on_button("tr_sized", (settings.target, settings.device), "the embedded target on this server",
                  "Size the tree for this machine", lambda: size_and_measure(models), again="Measure again",
                  status="Recording a 64-node tree, timing v(n), then decoding with the chosen tree…",
                  todo="record, time and choose (about two minutes on a 2-core CPU)")
if sized:
    choice_made, rows = sized.value["choice"], sized.value["measured"]
    chart(sized_tree_figure(choice_made.curve, choice_made.budget, rows), key="tr_sized_fig")
    st.dataframe([{"run": r["run"], "tokens per verify pass": round(r["tokens_per_pass"], 2),
                   "tokens/s measured": round(r["tokens_per_s"], 1), "× plain greedy": round(r["speedup"], 2)}
                  for r in rows], hide_index=True)
    st.markdown(f"**Chosen here: N = {choice_made.budget}, depth {choice_made.depth}**, expected "
                f"{choice_made.tokens:.2f} tokens per cycle in {choice_made.ms:.0f} ms (a draft pass "
                f"{sized.value['draft_pass_ms']:.1f} ms, from {sized.value['cycles']} recorded cycles). Measured "
                "runs fall below the curve twice over: their tokens per pass differ from the estimate (a few dozen "
                "recorded cycles, and each run decodes its own contexts), and each cycle also pays the loop's own "
                "Python, which the expectation leaves out. The curve's job is the choice: the sized tree beside the "
                "default one and plain greedy says whether it paid. On an H100 (measured once, docs/performance.md) "
                "v(n) was flat up to 65 positions, yet the rule chose a wide, shallow tree, N = 3, depth 1: eager "
                "PyTorch there is bound by kernel launches, and one draft pass cost more than a target step.")


# ---------------------------------------------------------------- the tree chi-square on the real model
st.divider()
st.subheader("Lossless, checked: the tree chi-square on the real model")
st.caption("The target's p and the token draft's q from real forwards on this prompt (T = 1, top-k 10). Each trial "
           "drafts a depth-2 chain from q, adds the draft's 2 runner-ups at each depth (one-hot siblings), verifies "
           "the tree by recursive rejection sampling, and runs the next cycle when only one token came out. The "
           "first two tokens must follow p(t1)·p(t2 | t1). (tests/test_tree_lossless.py runs the same test.) Two "
           f"tests of the exact rule, so each is judged at α = {ALPHA} (0.05 split over the two): an exact rule still "
           "puts one of them below it in about 1 run in 20, so one low p-value alone is a reason to look again, with "
           "another prompt or more trials, not proof of a bias.")
CHI_TRIALS = 12_000
chi = None
if models.draft is None:
    st.info("The tree chi-square needs the token draft (the embedded target's default).")
else:
    chi = on_button("tr_chi", (tuple(ids), typical, settings.target, settings.draft), "this prompt",
                    f"Run {CHI_TRIALS:,} tree trials" + (" twice, exact and typical" if typical else ""),
                    lambda: chi_square_run(models.target, models.draft, ids, CHI_TRIALS, typical), again=None,
                    status=f"Two forwards of each model, then {CHI_TRIALS:,} tree cycles…",
                    todo="run the trials (" + ("about 25 s" if typical else "about 15 s") + " on an idle 2-core CPU)")
if chi:
    res = chi.value
    decode = lambda t: token_text(models.tokenizer, t)  # noqa: E731
    t1, t2 = st.tabs(["First token", "First two tokens"])
    for tab, fit, name in ((t1, res["first"], "first token"), (t2, res["pairs"], "(first, second) pair")):
        chart(fit_figure(bin_names(fit, res["tables"], decode), fit["observed"], fit["expected"],
                         f"{name}: observed vs n·p (bins with expected count < 5 pooled as 'other')"),
              key=f"tr_chi_{name[:5]}", container=tab)
        tab.markdown(f"Chi-square = **{fit['statistic']:.1f}** on {fit['dof']} degrees of freedom. "
                     + fit_verdict(fit, ALPHA)[1])
    if res["lossy"] is not None:
        (eps, dlt), fit = res["lossy"]
        st.markdown(T.typical_verdict(eps, dlt, fit, res["first"], *fit_verdict(fit, ALPHA)))
    st.caption(f"This run took {res['seconds']:.0f} s.")
