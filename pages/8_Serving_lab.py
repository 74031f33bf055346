"""The serving view: KV-cache memory, the roofline, and when speculation stops paying as the batch grows."""
import pandas as pd
import streamlit as st

from ui.charts import chart
from ui.measured import ProgressBar
from ui.sidebar import get_models, sidebar
from ui.state import keep, kept, slider

from specviz.labs import batched as BT
from specviz import roofline as R
from specviz.labs import serving as S
from specviz.figures import serving as F



settings = sidebar()
st.title("Serving lab")
st.caption("One request at a time is not how models are served. Here: how much memory the KV cache takes, why "
           "decoding is memory-bound, and why speculation that pays well at batch 1 pays less as the batch grows — "
           "and stops paying only once a verify costs more steps than it commits tokens. "
           "Figures marked **measured** ran on this machine; figures marked **calculated** come from the "
           "inputs shown beside them.")
models = get_models(settings)
target_name = settings.target or "SmolLM2-135M"  # the pair in use (the sidebar's Models), else the embedded one
embedded = S.shape_of(models.target, f"this app's target ({target_name})")
shapes = [embedded] + R.KNOWN_SHAPES
if models.draft is not None:
    layers = models.draft.config.num_hidden_layers
    shapes.append(S.shape_of(models.draft,
                             f"this app's draft ({models.draft_name}, {layers} layer{'s' * (layers != 1)})",
                             shared_with=models.target if settings.draft is None else None))

st.subheader("1 · KV-cache memory (calculated)")
st.latex(r"\text{bytes per token} = 2 \cdot \text{layers} \cdot \text{KV heads} \cdot \text{head dim} "
         r"\cdot \text{bytes per value}")
DTYPES = {"bf16 (2 B)": 2, "fp8 (1 B)": 1, "fp32 (4 B)": 4}
c1, c2, c3, c4 = st.columns(4)
# default 16: at 32 × 32768 = 2^20 tokens the GiB column repeats the KiB-per-token one digit for digit (a walk
# took it for a bug)
batch = c1.select_slider("Batch (requests)", [1, 2, 4, 8, 16, 32, 64, 128, 256], key=kept("sv_batch", 16))
context = c2.select_slider("Context per request (tokens)", [512, 1024, 2048, 4096, 8192, 16384, 32768, 131072],
                           key=kept("sv_ctx", 32768))
beams = slider(c3, "Beams per request", "sv_beams", 1, 8, 1,
               help="Beam search keeps B hypotheses per request, each with its own KV for the generated tokens.")
with c4:
    dtype = st.radio("KV-cache dtype", list(DTYPES), key=kept("sv_dtype", "bf16 (2 B)"), horizontal=True)
    wdtype = st.radio("Weight dtype", list(DTYPES), key=kept("sv_wdtype", "bf16 (2 B)"), horizontal=True,
                      help="Chosen apart from the KV cache's: an fp8 KV cache is often served beside bf16 weights.")
bytes_per_value, weight_bytes = DTYPES[dtype], DTYPES[wdtype]
d1, d2 = st.columns(2)
keep("sv_prompt")
if st.session_state.get("sv_prompt", 0) > context:  # a shorter context than the kept prompt: the prompt fits it
    st.session_state["sv_prompt"] = context
prompt = d1.slider("Prompt tokens (shared by the beams of a request)", 0, context,
                   key=kept("sv_prompt", min(2048, context)), step=max(1, context // 64))
share = d2.toggle("Share the prompt's KV across beams (prefix sharing / copy-on-write)", key=kept("sv_share", True))
kv_col, w_col = f"KV at batch {batch} × {context}, {dtype.split()[0]} (GiB)", f"weights, {wdtype.split()[0]} (GiB)"
rows = [{"model": s.name, "layers": s.layers, "KV heads": s.kv_heads, "head dim": s.head_dim,
         "KV per token (KiB)": R.kv_bytes_per_token(s, bytes_per_value) / 1024,
         kv_col: R.kv_cache_bytes(s, batch, context, bytes_per_value, beams, prompt, share) / R.GIB,
         w_col: s.params * weight_bytes / R.GIB, "source": s.source} for s in shapes]
# a static table: it wraps the long "source" notes instead of cutting them in a scrolling grid
st.table(pd.DataFrame(rows).style.format({"KV per token (KiB)": "{:.2f}", w_col: "{:.2f}", kv_col: "{:.2f}"})
         .hide(axis="index"))
chart(F.kv_memory(R.KNOWN_SHAPES[:2] + [embedded], batch, [512 * 2 ** i for i in range(9)], bytes_per_value,
                            beams, prompt, share, budget_gib=80e9 / R.GIB), key="sv_kv")
big = R.KNOWN_SHAPES[1]
big_weights, big_kv = big.params * 2, R.kv_cache_bytes(big, 1, 32768, 2)
st.markdown(
    f"A {big.name} model keeps **{R.kv_bytes_per_token(big, 2) / 1024:.0f} KiB per token** in bf16 "
    f"(2 · {big.layers} · {big.kv_heads} · {big.head_dim} · 2 B): one 32k-token request holds "
    f"**{big_kv / R.GIB:.0f} GiB**. Its weights alone, {big_weights / R.GIB:.0f} GiB in bf16, are more than one "
    f"80 GB GPU holds ({80e9 / R.GIB:.1f} GiB): they need at least **{R.gpus_for(big_weights)} GPUs** before any "
    f"KV cache, and with one such request beside them still {R.gpus_for(big_weights + big_kv)} — hence tensor "
    "parallelism (the weights and the KV heads split across GPUs), fp8 weights and KV, and grouped-query attention "
    "(8 KV heads for 64 query heads: 8× less KV than multi-head attention). Beam search multiplies the generated "
    "tokens' KV by B; with prefix sharing the prompt is held once. The draft keeps a KV cache of its own too "
    "(the last row of the table for this app's token draft). The weights column is at the weight dtype chosen "
    "above, the KV columns at the KV-cache dtype; for this app's models it counts the weights as loaded (the packed "
    "linear layers included, the tied embedding once; the draft's row only its own layer and head, its embedding "
    "being the target's). Each weight counts once: where this CPU keeps a second, plain copy for few-row steps "
    "(`specviz/packed.py`), that copy is memory but not a second read per step.")

st.subheader("2 · The roofline: when decode stops being memory-bound")
if st.button("Measure this CPU (bandwidth and matmul throughput, a few seconds)", key="sv_measure_cpu"):
    with st.spinner("measuring…"):
        st.session_state["sv_cpu"] = (S.measure_bandwidth(), S.measure_matmul_flops())
cpu = st.session_state.get("sv_cpu")
devices = [R.H100_SXM] + ([S.this_cpu(*cpu)] if cpu else [])
r1, r2 = st.columns([1, 2])
by_name = {s.name: s for s in shapes[1:3] + shapes[:1]}
if st.session_state.get("sv_shape", st.session_state.get("_keep_sv_shape")) not in by_name:
    st.session_state.pop("sv_shape", None)  # a kept name from other models: back to the first shape
    st.session_state.pop("_keep_sv_shape", None)
shape = by_name[r1.selectbox("Model shape", list(by_name), key=kept("sv_shape", next(iter(by_name))))]
k = slider(r1, "K (draft tokens per verify)", "sv_k", 1, 8, 4)
batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
chart(container=r2, fig=F.roofline(devices, shape, batches, k, 2), key="sv_roof")
for d in devices:
    r1.markdown(f"**{d.name}** ({d.bandwidth / 1e9:.0f} GB/s, {d.flops / 1e9:,.0f} GFLOP/s; {d.source}): the linear "
                f"layers of a decode step become compute-bound at batch **{R.compute_bound_batch(d, 1)}**, those of a "
                f"verify of K+1 = {k + 1} tokens at batch **{R.compute_bound_batch(d, k + 1)}** (calculated, bf16 "
                f"weights). Attention stays at {R.attention_intensity(shape, 1):.0f} FLOP/byte for decode whatever the "
                "batch: memory-bound.")
if cpu:
    r1.caption("This CPU's figures are measured while the app and anything else on the machine run: on a busy "
               "machine they read low. Press the button again to re-measure.")
else:
    r1.caption("Press the button to add this machine's measured roofline.")

st.subheader("3 · Speculation against batch size")
st.markdown("Below the ridge a verify of K+1 tokens costs about one step, so speculation gains "
            "E[tokens per pass] / (v + Kc) with v ≈ 1. "
            "Above it v grows toward K+1 and the gain shrinks, but it falls below 1 only once v + Kc exceeds the "
            "tokens a pass commits (just past the ridge a verify still costs about one step): this is why serving "
            "engines turn K down, then speculation off, above a batch-size threshold. At long context each sequence's "
            "attention over its own KV stays memory-bound, which keeps v lower and lets speculation pay at larger "
            "batches again.")
s1, s2 = st.columns([1, 2])
ctx = s1.select_slider("Context per sequence (tokens)", [128, 1024, 8192, 32768, 131072], key=kept("sv_spec_ctx", 128),
                       help="Longer context: more KV to read per sequence, which no batch shares.")
a = slider(s1, "Acceptance rate a", "sv_a", 0.0, 0.95, 0.55, step=0.05,
           help="The shipped drafts accept about half of their tokens greedily (models/README.md).")
c_gpu = slider(s1, "c for the GPU calculation (draft step / target step)", "sv_c", 0.0, 0.3, 0.05, step=0.01)
if s1.button("Measure v(B) and c(B) here (target and token draft, B = 1…16)", key="sv_grid"):
    bar = ProgressBar("measuring…")
    st.session_state["sv_grid_result"] = S.forward_grid(models.target, models.draft, [1, 2, 4, 8, 16], k,
                                                        progress=bar)
grid = st.session_state.get("sv_grid_result")
gpu_batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
calc = {"name": f"calculated: {R.KNOWN_SHAPES[0].name} on {R.H100_SXM.name}, {ctx} ctx, c = {c_gpu}",
        "batches": gpu_batches,
        "speedups": R.roofline_speedups(R.KNOWN_SHAPES[0], R.H100_SXM, a, k, c_gpu, gpu_batches, ctx)}
if s1.button("Run batched speculative greedy (B = 1, 4, 16)", key="sv_batched_run", disabled=models.draft is None,
             help="Batched greedy, then batched speculative greedy with the token draft (K = 4, 64 new tokens) on the "
                  "benchmark prompts, and the forward-cost grid at the same K: the longest measurement on this page."):
    with st.status("Running batched greedy and batched speculative greedy at B = 1, 4, 16…", expanded=True) as box:
        run_bar = ProgressBar("starting…")
        st.session_state["sv_batched"] = BT.measure_batches(models.target, models.draft, models.tokenizer,
                                                            progress=run_bar)
        box.update(label="Batched runs done", state="complete", expanded=False)
measured = st.session_state.get("sv_batched")
measured_here = measured is not None
if measured is None:
    measured = BT.load_measured()  # the committed measurement, so the chart has its points without running
chart(container=s2, fig=F.speedup_vs_batch(grid, a, calc, measured), key="sv_speed")
if grid:
    s1.dataframe(pd.DataFrame(grid["rows"]).style.format("{:.2f}",
                                                         subset=["target_ms", "verify_ms", "draft_ms", "v", "c"]),
                 hide_index=True)
    g0, g1 = grid["rows"][0], grid["rows"][-1]
    s1.caption(f"Measured here, K = {grid['k']}, {grid['context']} tokens of context per sequence; noisy when the "
               f"machine is busy. v went from {g0['v']:.2f} at B = {g0['batch']} to {g1['v']:.2f} at B = "
               f"{g1['batch']}"
               + (": these cores reach their compute limit at a far smaller batch than a GPU."
                  if g1["v"] > 1.1 * g0["v"]
                  else "."))
else:
    s1.caption("Press the button to put this machine's measured curve beside the calculation.")

if measured:
    st.markdown("**Measured: a real batched speculative greedy run** " + (
        "(run just now in this session)" if measured_here else
        f"(committed in docs/, `{measured.get('command', 'python -m specviz.labs.batched')}`; "
        f"{measured.get('machine', 'this machine')}; press the button to measure again here)") + ". "
        f"K = {measured['k']}, {measured['max_new_tokens']} new tokens per sequence, the token draft. "
        "Every sequence is checked token for token against batched greedy.")
    st.table(pd.DataFrame([{
        "B": r["batch"], "batched greedy (s)": r["greedy_s"], "batched speculative (s)": r["speculative_s"],
        "measured speedup": r["speedup"], "predicted (a, K, grid)": r["predicted"],
        "predicted (batch's tokens/pass)": r["predicted_ragged"],
        "target passes greedy / spec": f"{r['greedy_target_passes']} / {r['target_passes']}",
        "draft passes": r["draft_passes"], "tokens/pass, mean sequence": r["mean_tokens_per_pass"],
        "tokens/pass, whole batch": r["batch_tokens_per_pass"],
        "identical to greedy": "yes" if r["identical"] else "NO"}
        for r in measured["runs"]]).style.format(precision=2).hide(axis="index"))  # static: every column on screen
    worst = measured["runs"][-1]
    if measured.get("conditions"):
        st.caption("Conditions: " + measured["conditions"])
    vs = measured["grid"]["rows"]
    v_lo, v_hi = vs[0], vs[-1]
    grows = v_hi["v"] > 1.1 * v_lo["v"]
    st.markdown(
        f"**Why the points sit where they do.** The dash-dot curve is the prediction for this run: the forward costs "
        f"measured at the same K = {measured['k']}, and a = {measured['a']:.2f}, the acceptance that gives the "
        f"sequences' mean of {worst['mean_tokens_per_pass']:.2f} tokens per pass at B = {worst['batch']}. It assumes "
        "every sequence gets that mean on every step. This run's batch does not: **ragged acceptance in a static "
        "batch** — each sequence accepts its own number of drafts, but the B sequences here enter together and step "
        "together, so the batch runs until its slowest sequence has its tokens; at "
        f"B = {worst['batch']} the whole batch got {worst['batch_tokens_per_pass']:.2f} tokens per verify pass, not "
        f"{worst['mean_tokens_per_pass']:.2f} (the open diamonds redo the prediction with the batch's own figure). "
        "**Padding waste:** a sequence that has finished or rejected drafts still fills its K+1 rows in every verify "
        "and its row in every draft step. A serving engine with **continuous batching** (vLLM, SGLang: the scheduler "
        "loop of section 4) does not wait for the slowest sequence: at every step each sequence advances by its own "
        "accepted count, a finished request leaves the batch and a waiting one takes its slot, and the KV slots of "
        "rejected drafts are not freed: the request's count of computed tokens is lowered and the next step writes "
        "over them. What stays is the verify's cost: every running sequence's K+1 rows are computed "
        "whether its drafts are accepted or not. "
        f"**The verify's cost on this CPU:** in the run's grid a verify of K+1 = {measured['k'] + 1} tokens cost "
        f"v = {v_lo['v']:.2f} steps at B = {v_lo['batch']} and {v_hi['v']:.2f} at B = {v_hi['batch']}"
        + (": on two CPU cores the B·(K+1) rows of a verify are compute-bound already at small B, and the nearly free "
           "verification speculation relies on fades as the batch grows" if grows else
           ": in this run it did not grow with the batch") +
        f"; on the {R.H100_SXM.name} the linear layers of such a verify stay memory-bound up to B ≈ "
        f"{R.compute_bound_batch(R.H100_SXM, measured['k'] + 1)} (calculated, section 2). At B = 1 nothing is ragged "
        "and the measured speedup is the single-sequence one. Timings are wall-clock on a shared machine: noisy, the "
        "grid (a handful of forwards per cell) most of all.")

st.subheader("4 · Where speculation sits in a serving engine")
st.graphviz_chart("""
digraph {
  rankdir=LR; node [shape=box, style=rounded, fontsize=11];
  sched [label="scheduler step\\nreserve K lookahead KV slots\\nper running sequence"];
  prop [label="proposer\\n(draft model / EAGLE head /\\nn-gram) drafts K per sequence"];
  verify [label="target: ONE batched forward\\nover every sequence's K+1 tokens"];
  rs [label="rejection sampler\\naccepted + recovered/bonus"];
  free [label="lower each sequence's computed\\ncount: rejected slots kept,\\noverwritten next step"];
  sched -> prop -> verify -> rs -> free -> sched;
  knob [shape=note, label="knobs: num_speculative_tokens (K),\\nbatch-size threshold above which"""
                  """\\nspeculation is switched off"];
  knob -> sched [style=dashed];
}
""")
st.caption("vLLM, SGLang and TensorRT-LLM all follow this loop; the metrics they export (draft tokens proposed and "
           "accepted, mean acceptance length) are the same quantities this app measures — README explains how a "
           "server's metrics could feed the Speedup lab.")
