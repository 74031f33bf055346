"""The feature draft, the token draft, n-gram lookup, an untrained early exit and the target quantized on the same
prompt."""
import pandas as pd
import streamlit as st

from ui.charts import chart
from ui.measured import ProgressBar
from ui.sidebar import encode, get_models, sidebar
from ui.state import kept, slider

from specviz.drafters import LABELS, QUANTIZED, drafter_choices, early_exit_model, make_drafter, quantized_model
from specviz.figures.drafters import slowdown, speedup_bars, stage_bars, suffix_bars
from specviz.labs.measure import C_COLUMN, acceptance_is_not_speedup, compare_drafters
from specviz.labs.repeated import run as repeated_run
from specviz.labs.stages import staged_breakdown, staged_cell, staged_verdict

settings = sidebar()
st.title("Drafter comparison")
st.caption("Speculative decoding is only as good as its drafter. Same prompt, same K, greedy verification "
           "(so every output should be plain greedy's: the table's second column checks it): only the speed differs.")
models = get_models(settings)
with st.expander("The drafters", expanded=False):
    st.markdown(
        "- **Feature draft (EAGLE-style)** — one decoder layer that reads the embedding of "
        "each token *and* the target's own hidden states at the position before (layers 10, 20 and the final one, "
        "which the verify pass computes anyway), and drafts by feeding its own output back in their place. "
        "Rolled back to the target's real states after every verify pass. `specviz/drafters/feature.py`.\n"
        "- **Token draft** — a token-only one-layer draft distilled on the target's outputs: a tiny language model "
        "of its own. It also runs in `transformers` assisted generation.\n"
        "- **n-gram lookup** — no model: copies what followed the last few tokens earlier in the text. Free, "
        "and strong when the answer repeats the prompt.\n"
        "- **Early exit (untrained)** — the target's first L layers with its head: cheap but rarely right, "
        "the honest *bad* drafter.\n"
        "- **The target quantized (int8, int4)** — the target itself with weight-only integer weights (int8 per "
        "output channel; int4 in groups of 32, the grid the embedded target's Q4_1 weights already sit on): right "
        "nearly always, the opposite of early exit, yet a step costs what the kernel makes it cost — with the "
        "target's fp32 arithmetic, more than a target step. The bf16-activation twins feed the same weights to the "
        "kernels' bf16 path. Acceptance is not speedup: a > c decides. `specviz/drafters/quantized.py`.")
c1, c2, c3, c4 = st.columns(4)
K = slider(c1, "K", "dc_k", 1, 16, 4)
L = slider(c2, "Early-exit layers L", "dc_l", 1, models.target.config.num_hidden_layers - 1, 4)
max_new = slider(c3, "New tokens", "dc_max", 16, 128, 48)
rounds = slider(c4, "Timing rounds", "dc_rounds", 1, 7, 3,
                help="Each round times plain greedy and every drafter once, interleaved; the table shows "
                     "medians. One round is quick but moves by about ±10 % from click to click.")
QUANT = {LABELS[k]: k for k in QUANTIZED}
chosen = st.multiselect(
    "The target quantized, as drafters", list(QUANT), key=kept("dc_quant", [LABELS["int8"], LABELS["int4"]]),
    help="The target itself with int8 or int4 weights: right nearly always, but each step costs about a target step "
         "or more, so every one you add lengthens the run (int4 with fp32 activations most: on the 2-core machine "
         "its step costs about 2.7 target steps). The bf16-activation twins run the same weights through the "
         "kernels' bf16 path, fast on CPUs with AVX-512 BF16 or AMX.")
with_quantized = [QUANT[label] for label in chosen]
if st.button("Run all drafters", type="primary", key="dc_run"):
    ids = encode(models, settings, max_new)
    # every drafter these models can run, labelled as in the speculative page's picker
    early = f"early exit, first {L} layers (untrained)"
    drafters = {(early if kind == "early-exit" else label):
                (lambda kind=kind: make_drafter(kind, models, early_exit_layers=L))
                for label, kind in drafter_choices(models, quantized=with_quantized).items()}
    # c for every drafter with a model: the model one of its draft steps runs
    step_models = {LABELS[k]: quantized_model(models.target, k) for k in with_quantized}
    step_models[early] = early_exit_model(models.target, L)
    if models.draft is not None:
        step_models[models.draft_name] = models.draft
    if models.feature_draft is not None:
        step_models[LABELS["feature"]] = models.feature_draft
    bar = ProgressBar("starting…")
    st.session_state["dc_rows"] = compare_drafters(models.target, models.tokenizer, ids, drafters, K, max_new, rounds,
                                                   progress=bar,
                                                   step_models=step_models)
    st.session_state["dc_rows_run"] = {"k": K, "max_new": max_new}
    st.rerun()
rows = st.session_state.get("dc_rows")
run = st.session_state.get("dc_rows_run", {})  # the K and length the table's rows ran at
if rows:
    df = pd.DataFrame(rows).drop(columns=["rounds", "draft step ms", "target step ms"], errors="ignore")
    df["speedup range"] = [f"{lo:.2f}–{hi:.2f}×" for lo, hi in df["speedup range"]]
    # the check the intro promises, beside the name: at the far right it was off screen on a laptop
    df = df[["drafter", "identical to greedy"] + [c for c in df.columns if c not in ("drafter", "identical to greedy")]]
    st.dataframe(df.style.format({"acceptance rate": "{:.0%}", "tokens per verify pass": "{:.2f}",
                                  "speedup vs plain greedy": "{:.2f}×", C_COLUMN: "{:.2f}",
                                  "seconds": "{:.2f}", "plain seconds": "{:.2f}"}, na_rep="–"),
                 hide_index=True)
    n = rows[0]["rounds"]
    st.caption((f"K = {run['k']}, {run['max_new']} new tokens. " if run else "")
               + (f"Seconds are medians of {n} interleaved rounds; the speedup range is the lowest and highest speedup "
                "a single round gave against that round's plain greedy run." if n > 1 else
                "Seconds are from one round (noisy: more rounds give medians and a range).")
               + (f" {C_COLUMN}: the median of 7 one-token forwards of each, timed after the runs (n-gram lookup "
                  "has no model: –)." if C_COLUMN in df else ""))
    fig = speedup_bars(rows)
    chart(fig, key="dc_fig")
    quantized = list(QUANT)  # slow for another reason, said below: a step as dear as the target's
    slow = [r for r in rows if slowdown(r["speedup vs plain greedy"]) and r["drafter"] not in quantized]
    st.info("A drafter that rarely agrees with the target costs K draft steps and a wider verify pass for about one "
            "token per cycle: a slowdown (< 1×). " + (
                "In this run: " + ", ".join(f"{r['drafter']} at {r['speedup vs plain greedy']:.2f}× (acceptance "
                                            f"{r['acceptance rate']:.0%})" for r in slow) + "." if slow else
                "In this run no drafter of that kind was slower than plain greedy."))
    lesson = acceptance_is_not_speedup(rows, quantized)
    if lesson:
        st.warning(lesson)
else:
    st.info("Press **Run all drafters** to time them on the current prompt.")

st.header("Beyond one draft model")
st.subheader("Suffix decoding on repeated requests")
st.caption("Agents send the same kind of request again and again. Suffix decoding drafts from a suffix index over "
           "every earlier request's prompt and output; n-gram prompt lookup sees only the current request. Five "
           "similar coding requests (`specviz/labs/repeated.py`), each after the first decoded with both, greedy.")
if st.button("Run the repeated-request scenario", key="dc_suffix_run",
             help="Decodes the five requests with plain greedy, n-gram lookup and suffix decoding, 48 new tokens "
                  "each: one of the longer runs on this page."):
    with st.status("Decoding 5 requests with plain greedy, n-gram lookup and suffix decoding…", expanded=False):
        st.session_state["dc_suffix"] = repeated_run(models, k=K, max_new=48, rounds=1)
    st.rerun()
suffix = st.session_state.get("dc_suffix")
if suffix:
    chart(suffix_bars(suffix), key="dc_suffix_fig")
    ok = all(r["identical"] for r in suffix["rows"].values())
    st.caption(("Every output is token-identical to plain greedy. " if ok else
                "⚠ An output differs from plain greedy. ")
               + "Tokens per verify pass are exact counts; the speedups are one timing round, ±10 % noise.")

st.subheader("Staged speculation: a draft for the draft")
st.caption("n-gram lookup proposes to the token draft, which checks the guesses in ONE forward of its own (the "
           "same lossless rule the target uses) and hands the target exactly the tokens it would have drafted "
           "alone. What changes is the draft's cost. It runs at this page's K and new tokens, as its own timing "
           "run: its token-draft speedup need not equal the table's (a separate run; timing noise of about ±10 %). "
           "Try the curated “Refactor code (n-gram)” prompt, where the first stage can find its guesses in the "
           "prompt.")
if models.draft is None:
    st.info("Staged speculation needs the token draft: load a draft model.")
elif st.button("Run staged vs the token draft alone", key="dc_staged_run",
               help="Plain greedy, the token draft alone and the staged drafter, each run once to warm up and once "
                    "timed, at this page's K and new tokens."):
    with st.status("Decoding with plain greedy, the token draft and the staged drafter…", expanded=False):
        st.session_state["dc_staged"] = staged_breakdown(models, encode(models, settings, max_new),
                                                         k=K, max_new=max_new)
    st.rerun()
staged = st.session_state.get("dc_staged")
if staged:
    chart(stage_bars(staged), key="dc_staged_fig")
    st.table(pd.DataFrame({row["run"]: {name: staged_cell(name, value) for name, value in row.items() if name != "run"}
                           for row in staged["rows"]}))
    against = ("" if not run else " — the same K as the table above" if staged["k"] == run["k"] else
               f" — the table above ran at K = {run['k']}, so its speedups and these are not like for like")
    st.caption(f"K = {staged['k']}, {staged['max_new_tokens']} new tokens{against}. "
               "Seconds are measured inside the run: the drafter's propose() calls are timed where they happen "
               "(the staged drafter's inner n-gram lookup separately), the target's share is the rest. "
               + staged_verdict(staged["rows"]))
