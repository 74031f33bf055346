"""Where the speedup goes (issue 38): one recorded run read in the units of real serving systems, the acceptance
rules side by side at its positions, and bit-exact vs distribution-lossless in fp32 and bf16."""
import re

import pandas as pd
import streamlit as st

from ui.charts import chart
from ui.measured import ProgressBar, on_button
from ui.sidebar import encode, get_models, sidebar
from ui.state import keep, slider

from specviz.drafters import drafter_choices, make_drafter
from specviz.figures import md_escape
from specviz.figures.acceptance_rules import RULES_EXPLAINED, block_bars, rules_bars
from specviz.figures.policies import policy_bars
from specviz.figures.precision import margin_chart
from specviz.figures.timeline import per_token_bars, timeline_chart
from specviz.labs import acceptance_rules as AR
from specviz.labs import knobs
from specviz.labs import policies as PO
from specviz.labs import timeline as TL
from specviz.labs.precision import RUNS, bf16_target, precision_runs

settings = sidebar()
st.title("Where the speedup goes")
st.caption("One speculative run on the current prompt, read four ways: its cycles' milliseconds stage by stage beside "
           "plain greedy and a tree; in the knobs and counters of vLLM, SGLang, llama.cpp, transformers and "
           "TensorRT-LLM; through the acceptance rules at its own positions, block verification's among them; and in "
           "fp32 against bf16, where "
           "\"exact\" stops meaning bit-identical. The Speedup lab takes a run's speedup apart factor by factor. "
           "Nothing runs until you ask: each measurement starts on its button and is kept for its settings.")
models = get_models(settings)
model_key = (settings.target, settings.draft, settings.device)

# ---------------------------------------------------------------- the recorded run every section reads
kinds = drafter_choices(models)
keep("ws_drafter")
if st.session_state.get("ws_drafter") not in kinds:
    st.session_state.pop("ws_drafter", None)
    st.session_state.pop("_keep_ws_drafter", None)
c1, c2, c3, c4 = st.columns([3, 3, 3, 2], vertical_alignment="bottom")
drafter_name = c1.selectbox("Drafter", list(kinds), key="ws_drafter")
K = slider(c2, "K (num_speculative_tokens, --draft-max, …)", "ws_k", 1, 16, 4)
max_new = slider(c3, "New tokens", "ws_max", 16, 96, 48)
run_ids = encode(models, settings, max_new)


def record_run() -> dict:
    drafter = make_drafter(kinds[drafter_name], models, early_exit_layers=4)
    return {**knobs.record(models.target, drafter, models.tokenizer, run_ids, max_new, K), "label": drafter_name,
            "max_new": max_new}


recorded = on_button("ws_record", (model_key, tuple(run_ids), kinds[drafter_name], K, max_new),
                     f"{drafter_name}, K = {K}, {max_new} new tokens", "Record the run", record_run, where=c4,
                     status="Recording a greedy speculative run…",
                     todo="record the greedy speculative run that the counters, the policies and the acceptance "
                          "rules below read (a few seconds)")
run = recorded.value if recorded else None


def needs_run() -> bool:
    """A section that reads the recorded run: whether there is one; a note saying what to do without one, or which
    run it reads when that is stale."""
    if run is None:
        st.caption("Needs the recorded run: press **Record the run** at the top of the page.")
    elif recorded.stale:
        st.caption(f"⏳ Read from the run recorded for {md_escape(recorded.measured_for)}, before the settings "
                   "changed (see the note at the top).")
    return run is not None


if run:
    c = run["counters"]
    st.markdown(f"**{md_escape(run['label'])}, K = {run['k']}**, greedy: {c.tokens} tokens in {c.verify_passes} "
                f"verify passes, {c.accepted} of {c.drafted} drafts accepted.")

# ---------------------------------------------------------------- item 4: a cycle's timeline
st.subheader("A cycle's timeline")
st.caption("The same prompt decoded three ways, each stage of each cycle drawn where it happened in measured time: "
           "plain greedy (one target forward per token), the chain above (the draft's K forwards, ONE target forward "
           "over K + 1 positions, the acceptance rule, the cache rollback) and an EAGLE-2 tree from the feature draft "
           "(one forward over every node). Each method ran once untimed, then three times interleaved (a disturbance "
           "from other work lands on all three alike); each lane is its run of median length.")
t1, t2, t3 = st.columns([1, 1, 1], vertical_alignment="bottom")
tl_new = slider(t1, "Tokens to decode", "ws_tl_new", 4, 64, 24)
tl_budget = slider(t2, "Tree nodes (budget)", "ws_tl_budget", 2, 64, 16)
tl_ids = encode(models, settings, tl_new)
timed = on_button("ws_tl_again", (model_key, tuple(tl_ids), kinds[drafter_name], K, tl_new, tl_budget),
                  f"{drafter_name}, K = {K}, {tl_new} tokens, a tree of {tl_budget} nodes", "Time the three runs",
                  lambda: TL.measure(models, tl_ids, tl_new, K, tl_budget, chain=kinds[drafter_name]), where=t3,
                  again="Measure again", help="Timings move from run to run: all three run anew.",
                  status="Timing plain greedy, the chain and the tree, stage by stage (each runs four times)…",
                  todo="decode the prompt three ways and time every stage (about 15 s on a 2-core CPU)")
if timed:
    lanes = timed.value
    summ = TL.summary(lanes)
    chart(timeline_chart(lanes), key="ws_timeline")
    chart(per_token_bars(summ), key="ws_per_token")
    plain_row = summ["lanes"][0]
    lines = [f"Plain greedy: {plain_row['tokens']} tokens, {plain_row['tokens']} target forwards, median "
             f"**{plain_row['forward_ms']:.1f} ms** each (the first also reads the prompt)."]
    for row in summ["lanes"][1:]:
        lines.append(
            f"{md_escape(row['name'])}: {row['tokens']} tokens in {row['cycles']} cycles; its target forward over "
            f"{row['positions']:.0f} positions (median) took **{row['forward_ms']:.1f} ms = "
            f"{row['forward_vs_plain']:.2f}×** plain greedy's one-token forward, {row['verify_share']:.0%} of its "
            f"time; drafting {row['stage_ms']['draft']:.0f} ms, acceptance and rollback "
            f"{row['accept_rollback_ms']:.1f} ms in all; "
            f"{row['ms_per_token']:.1f} ms per token against plain greedy's {plain_row['ms_per_token']:.1f}"
            + ("" if row["identical"] else " (its text parted from plain greedy's: rounding, see bit-exact below)")
            + ".")
    st.markdown("\n".join(f"- {line}" for line in lines))
st.caption("Verification is nearly free when the forward over K + 1 positions costs about one single-token forward: "
           "on a CPU the weights are read once per forward either way, until the extra positions' arithmetic shows "
           "(a tree's 17 positions do). The acceptance rule and the rollback are hairlines: the time is in the "
           "forwards. Each cycle's +n is the tokens it committed.")

# ---------------------------------------------------------------- item 7: the knobs of real systems
def breakable(text: str) -> str:
    """A long repository path or code name may wrap after each slash, underscore or dot before a letter (a zero-width
    space there), or the table runs off the page ("Counters.mean_acceptance_length" did)."""
    return re.sub(r"(/|_|\.(?=[A-Za-z]))", "\\1\u200b", text)


st.subheader("The knobs of real systems, translated")
st.caption("Each system's speculative-decoding settings and what they are in this app. The quotes are the systems' "
           "own documentation or code, read from the source named in the row (`specviz/labs/knobs.json`); a newer "
           "version may differ.")
st.table(pd.DataFrame([{"system": r["system"], "knob": r["knob"], "here": breakable(r["app"]),
                        "what the source says (and where)": f"{r['quote']} [{breakable(r['source'])}]"}
                       for r in knobs.knob_rows()]).set_index("system"))
st.markdown("**Their metrics, computed from this run's counters.** The same run gives different numbers under "
            "different names: mind whether the bonus token counts, and what a rate is divided by.")
if needs_run():
    st.table(pd.DataFrame([{"system": r["system"], "metric": r["metric"], "this run": r["shown"],
                            "bonus token counted": r["bonus"], "definition (and where)": f"{r['definition']} "
                            f"[{breakable(r['source'])}]", "here": breakable(r["app"])}
                           for r in knobs.metrics_on(c)]).set_index("system"))
st.caption("vLLM's per-position rate divides by every draft (it can only fall with the position); "
           "the Speedup lab's acceptance by position divides by the drafts that reached the position. "
           "`tests/test_knobs.py` re-counts each system's metric the way its code does, from a recorded run, and "
           "checks the translation gives the same number.")

# ---------------------------------------------------------------- item 3: dynamic-K policies replayed
st.subheader("Dynamic-K policies replayed on this run")
st.caption("Under greedy verification every policy produces this run's text; only how it gets there differs. While "
           "its drafts match, the token draft reads exactly that text, so one pass of the draft over it says what it "
           "would propose at every position, and each policy's cycles follow without running it: fixed K, "
           "transformers' heuristic schedule (K + 2 after a clean sweep, K − 1 otherwise), and a draft-confidence "
           "stop (stop when the draft's top probability falls under a threshold) the two ways real systems do it. "
           "Time is predicted from this machine's measured draft step, target step and verify cost v(K).")


@st.cache_resource(show_spinner=False, max_entries=2)
def policy_costs(model_key) -> dict:
    return PO.costs(models.target, models.draft, encode(models, settings, 16))


if models.draft is None:
    st.info("This section needs a token draft model; the current pair has none.")
elif needs_run():
    q1, q2 = st.columns([1, 2], vertical_alignment="bottom")
    theta = slider(q1, "Confidence threshold (llama.cpp --draft-p-min 0.75, transformers 0.4 by default)", "ws_theta",
                   0.05, 0.95, 0.75, step=0.05)
    pols = PO.default_policies(run["k"], theta)  # the K of the run they replay

    def replay_policies() -> dict:
        cost = policy_costs(model_key)
        return {"cost": cost, "rows": PO.compare_policies(pols, models.target, models.draft, models.tokenizer,
                                                          run["prompt"], run["output"], run["max_new"], cost)}

    replay_key = (model_key, tuple(run["prompt"]), tuple(run["output"]), run["max_new"], run["k"], theta)
    replayed = on_button("ws_policies_replay", replay_key,
                         f"the run of {run['label']}, K = {run['k']}, threshold {theta:.2f}", "Replay the policies",
                         replay_policies, where=q2, again=None,
                         status="Timing a draft step, a target step and verify passes of 2…17 positions (once), "
                                "then replaying the four policies…",
                         todo="replay the four policies on the recorded run and predict their time (a few seconds)")
    measured = st.session_state.get("ws_policies_measured")
    earlier = measured is not None and (replayed is None or measured.get("key") != replayed.key)
    if earlier:
        measured = None  # measured beside another replay (another run or threshold) than the one shown
    # timed engine runs go beside a replay at these settings (until there is one, its button is in their place)
    if replayed and not replayed.stale and q2.button("Run the four policies and plain greedy in the engine (timed)",
                                                     key="ws_policies_run"):
        bar = ProgressBar("plain greedy…")
        measured = PO.measure_policies(pols, models.target, models.draft, models.tokenizer, run["prompt"],
                                       run["max_new"], progress=bar)
        measured["key"] = replay_key
        st.session_state["ws_policies_measured"] = measured
        st.rerun()
    if replayed:
        rows, cost = replayed.value["rows"], replayed.value["cost"]
        chart(policy_bars(rows, measured), key="ws_policies")
        st.caption(f"Costs measured here: draft step {cost['t_draft_s'] * 1000:.1f} ms, target step "
                   f"{cost['t1_s'] * 1000:.1f} ms, v(4) = {cost['v'].get(4, float('nan')):.2f}"
                   + (" (noisy: other work shares these cores)" if cost["noisy"] else "") + ". "
                   + ("Measured: one timed run each, plain greedy " + f"{measured['plain_s']:.2f} s; the engine's "
                      "cycles " + ("match the replay's in every policy." if PO.replay_matches(rows, measured)
                                   else "differ from the replay's in some policy: rounding parted the outputs (see "
                                        "bit-exact below).")
                      if measured else
                      "The timed engine runs were for other settings: the button times these." if earlier else
                      "The button runs each policy for real to put measured speedups beside these."))

# ---------------------------------------------------------------- item 5: acceptance rules side by side
st.subheader("Acceptance rules side by side")


@st.cache_resource(show_spinner=False, max_entries=16)
def rules_at(model_key, prompt: tuple, output: tuple, temperature: float, positions: int, k: int) -> dict:
    return AR.live_rules(models.target, models.draft, models.tokenizer, list(prompt), list(output), temperature,
                         positions, k=k)


if models.draft is None:
    st.info("This section needs a token draft model (q at every position); the current pair has none.")
elif needs_run():
    r1, r2 = st.columns(2)
    T = slider(r1, "Temperature T (p and q processed alike)", "ws_t", 0.1, 2.0, 1.0, step=0.1)
    npos = slider(r2, "Positions", "ws_pos", 4, 32, 16)
    with st.spinner(f"Block verification: {AR.SAMPLES} blocks of K = {run['k']} drafted at each position…"):
        live = rules_at(model_key, tuple(run["prompt"]), tuple(run["output"]), T, npos, run["k"])
    if live["rows"]:
        chart(rules_bars(live, AR.RULES), key="ws_rules")
        mean = live["mean"]
        st.markdown(
            f"At the first {len(live['rows'])} positions of this run, p is the target's and q the token draft's "
            "next-token distribution on the run's own text (one teacher-forced pass each). Mean P(accept): "
            + " · ".join(f"{md_escape(name)} **{mean[name]:.3f}**" for name in AR.RULES) + "."
            + (f" Typical acceptance accepts more than 1 − TV, the most any lossless rule can, at position"
               f"{'s' if len(live['typical_beyond_bound']) > 1 else ''} "
               + ", ".join(map(str, live["typical_beyond_bound"])) + ": it pays for that in the output distribution."
               if live["typical_beyond_bound"] else ""))
        b = live["block"]
        st.markdown(
            f"**Blocks of K = {b['k']}.** At each position the draft drew {b['samples']} blocks of {b['k']} tokens "
            "after the run's text, the target scored each block in one pass, and both lossless rules judged the same "
            f"blocks: token-wise keeps **{b['token-wise']:.2f}** of {b['k']} drafts per block on average, block "
            f"verification **{b['block']:.2f}** ({b['block'] - b['token-wise']:+.2f} ± {b['gain_se']:.2f} "
            "standard error; tokens per verify pass are one more each), per position below. Estimated over the "
            "sampled drafts, exact over the accept draws.")
        chart(block_bars(live), key="ws_block_rules")
        st.markdown(RULES_EXPLAINED)

# ---------------------------------------------------------------- item 6: bit-exact vs distribution-lossless
st.subheader("Bit-exact vs distribution-lossless")
st.caption("Speculative decoding is exact in distribution: in exact arithmetic its greedy output is plain greedy's. "
           "The verify pass scores K + 1 positions in one forward where plain decoding scores one: the sums can run "
           "in another order and a logit moves in its last bits. Where the top two logits are that close, the "
           "argmax flips. bf16 (8 mantissa bits) moves logits much more. Four greedy runs on this prompt: fp32 and "
           "bf16, plain and speculative (the token draft, K above).")
p1, p2 = st.columns([1, 2], vertical_alignment="bottom")
n16 = slider(p1, "New tokens (bf16 on a CPU is slow)", "ws_n16", 16, 48, 32)
res = None
if models.draft is None:
    st.info("This section needs a token draft model for its speculative runs; the current pair has none.")
else:
    ids16 = encode(models, settings, n16)

    def run_precision() -> dict:
        bar = ProgressBar("loading the bf16 target…")
        return precision_runs(models.target, bf16_target(settings.target, settings.device),
                              lambda: make_drafter("token", models), models.tokenizer, ids16, n16, K,
                              progress=bar)

    label = "Run fp32 and bf16, plain and speculative"
    ran = on_button("ws_precision", (model_key, tuple(ids16), n16, K), f"{n16} new tokens, K = {K}", label,
                    run_precision, where=p2, again=label, expanded=True,
                    status="Four greedy runs: fp32 and bf16, plain and speculative…",
                    todo="decode the prompt four times and compare the outputs (bf16 on a CPU is slow)")
    res = ran.value if ran else None
if res:
    chart(margin_chart(res), key="ws_margins")
    rows = []
    for pr in res["pairs"]:
        d = pr["position"]
        rows.append({"pair": f"{pr['a']} vs {pr['b']}",
                     "first position where they part": "never (bit-identical)" if d is None else d + 1,
                     "tokens there": "" if "token_a" not in pr else f"{pr['token_a']!r} vs {pr['token_b']!r}",
                     "top-2 logit margin there": ", ".join(f"{k} {v:.4f}" for k, v in pr["margin"].items())})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="ws_pairs")
    st.caption(f"{res['max_new']} new tokens, K = {res['k']}. Seconds: " + ", ".join(
        f"{name} {res['seconds'][name]:.1f}" for name in RUNS) + ". The margins are read in one pass over the text "
        "(a third kernel shape), so they are the margins to within those last bits. A pair that never parts was "
        "bit-identical on this prompt; where one parts, compare the margin there with the rest of the text. From "
        "there on the two texts differ, however much later tokens agree. Both outputs are correct greedy decodes of "
        "their own arithmetic: this is rounding, not a bug in the acceptance rule.")
