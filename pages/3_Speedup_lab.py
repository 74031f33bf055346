"""The speedup formulas, live, with a and c measured from real runs beside the theory."""
import streamlit as st

from ui.charts import chart
from ui.measured import ProgressBar
from ui.sidebar import encode, get_models, sidebar
from ui.state import keep, slider

from specviz.labs.committed import load_bench
from specviz.figures.speedup import estimate_note, packing_note
from specviz.drafters import drafter_choices, make_drafter
from specviz.figures import speedup as F
from specviz.figures.breakdown import breakdown_waterfall
from specviz.labs.measure import speculative_vs_plain, verify_cost_profile
from specviz.theory import (best_k, best_k_from_positions, expected_tokens, speculation_pays, v_model,
                            walltime_improvement)

settings = sidebar()
bench = load_bench()  # the committed benchmark: its figures are quoted from its JSON, with its date
st.title("Speedup lab")
st.caption("How much faster is speculative decoding? It depends on three numbers: the acceptance rate a, the "
           "draft length K and the draft's cost c relative to one target step (Leviathan et al. 2023).")

def use_measured():
    """Set the sliders to the last real run's a, c and K and draw the estimate through its measured v."""
    r = st.session_state.get("sl_measured")
    if r:
        st.session_state["sl_a"] = min(0.99, round(r["a"], 2))
        st.session_state["sl_c"] = min(1.0, round(r["c"], 2))
        st.session_state["sl_k"] = r["k"]
        st.session_state["sl_through"] = True


c1, c2, c3 = st.columns(3)
a = slider(c1, "Acceptance rate a", "sl_a", 0.0, 0.99, 0.7, step=0.01)
K = slider(c2, "Draft length K", "sl_k", 1, 16, 4)
c = slider(c3, "Draft cost ratio c", "sl_c", 0.0, 1.0, 0.1, step=0.01)
tau = expected_tokens(a, K)
m = st.columns(3)
m[0].metric("Expected tokens per target pass", f"{tau:.4f}", help="$(1 - a^{K+1}) / (1 - a)$")
m[1].metric("Estimated walltime improvement", f"{walltime_improvement(a, K, c):.3f}×",
            help="$(1 - a^{K+1}) / ((1 - a)(Kc + 1))$, an estimate under i.i.d. acceptance, not a bound")
kb = best_k(a, c)
m[2].metric("Best K for this a and c", kb if kb else "0 — don't speculate")
st.latex(r"\tau = \frac{1 - a^{K+1}}{1 - a} \qquad \text{improvement} \approx \frac{1 - a^{K+1}}{(1 - a)(Kc + 1)}")
rule = ("**Speculation pays only if a > c** (Leviathan et al. 2023, Corollary 3.9): then already K = 1 gives "
        "(1 + a)/(1 + c) > 1; if a ≤ c, no K beats plain decoding, since 1 + a + … + a^K ≤ 1 + Ka ≤ 1 + Kc.")
if speculation_pays(a, c):
    st.info(rule + f" Here a = {a:g} > c = {c:g}: best K = {kb}.")
else:
    st.warning(rule + f" Here a = {a:g} ≤ c = {c:g}: **don't speculate**.")

keep("sl_v")
with_v = st.toggle("Add the verify cost v measured on this machine (a (K+1)-token forward ÷ a 1-token forward)",
                   key="sl_v")


@st.cache_resource(show_spinner=False, max_entries=4)
def verify_costs(model_key, nonce: int = 0):
    models = get_models(settings)
    ctx = encode(models, settings, 16)
    return verify_cost_profile(models.target, ctx)


v_of_k = None
if with_v:
    with st.spinner("Timing the target's forward pass for 1…17 tokens (5 times each)…"):
        prof = verify_costs((settings.target, settings.device), st.session_state.get("sl_v_nonce", 0))
    vs = prof["v"]
    v_of_k = vs.get
    t1, t1_slow = prof["t1_range"]
    st.caption(f"Measured here: 1 token {t1:.1f} ms (slowest of 5: {t1_slow:.1f} ms); " + ", ".join(
        f"{k + 1} tokens v = {v:.2f} ({prof['v_range'][k][0]:.2f}–{prof['v_range'][k][1]:.2f})"
        for k, v in vs.items() if k in (1, 2, 4, 8, 16))
        + f". Machine-aware estimate τ / (K·c + v) at K = {K}: {walltime_improvement(a, K, c, vs[K]):.3f}×. "
          "Each forward was timed 5 times and v uses the fastest (the least disturbed); the ranges are fastest–"
          "slowest ratios.")
    if prof["noisy"]:
        st.warning("These timings are **noisy**: the runs of one forward differ by more than 30 %. This page measures "
                   "on the same cores that serve it (and draw it, if the browser runs on this machine, and any other "
                   "session's steps): expect v above what an idle machine gives. "
                   "Re-measure when nothing else runs.")
    if st.button("Re-measure v", key="sl_v_again"):
        st.session_state["sl_v_nonce"] = st.session_state.get("sl_v_nonce", 0) + 1
        st.rerun()

left, right = st.columns(2)
chart(container=left, fig=F.tokens_per_pass(a), key="sl_tau")
measured = st.session_state.get("sl_measured")
points = ([(measured["k"], measured["speedup"], f"measured {measured['speedup']:.2f}× (a = {measured['a']:.2f}, "
                                                f"c = {measured['c']:.3f})")] if measured else None)
through = None
if measured and st.session_state.get("sl_through"):
    # v(K) through the measured point: the isolated profile's shape when it exists, else linear in K
    through = (measured["a"], measured["c"], v_model(v_of_k, (measured["k"], measured["v"])))
chart(container=right, fig=F.improvement(a, c, v_of_k, measured=points, through=through), key="sl_improve")
if measured:
    u1, u2 = st.columns([1, 2])
    u1.button("Use the measured a, c, v", key="sl_use", on_click=use_measured,
              help="Set a, c and K to the last run's and draw the estimate at its measured a, c, v (red dotted).")
    keep("sl_through")
    if st.session_state.get("sl_through"):
        u2.toggle("Show the curve at the measured a, c, v", key="sl_through")
    elif abs(a - measured["a"]) > 0.005 or abs(c - measured["c"]) > 0.0005:
        # the point comes from another a and c than the curves: say so, or it reads as off every curve
        u2.caption(f"The curves are drawn at the sliders' a = {a:g}, c = {c:g}; the red point is a run with "
                   f"a = {measured['a']:.2f}, c = {measured['c']:.3f}, so it need not sit on them. The button draws "
                   "the estimate at the run's own a, c and v.")

st.subheader("Measure it on the current prompt")
models = get_models(settings)
d1, d2, d3 = st.columns(3)
kinds = drafter_choices(models)
keep("sl_drafter")
if st.session_state.get("sl_drafter") not in kinds:
    st.session_state.pop("sl_drafter", None)
    st.session_state.pop("_keep_sl_drafter", None)
drafter_name = d1.selectbox("Drafter", list(kinds), key="sl_drafter")
mk = slider(d2, "K for the measurement", "sl_mk", 1, 16, 4)
max_new = slider(d3, "New tokens", "sl_max", 16, 128, 48)
if st.button("Run plain and speculative decoding", type="primary", key="sl_run"):
    ids = encode(models, settings, max_new)
    drafter = make_drafter(kinds[drafter_name], models, early_exit_layers=4)
    bar = ProgressBar("starting…")
    res = speculative_vs_plain(models.target, drafter, models.tokenizer, ids, max_new, mk,
                               progress=bar,
                               draft_model=getattr(drafter, "model", None))
    res["drafter"] = drafter_name
    st.session_state["sl_measured"] = res
    st.rerun()

if measured:
    r = measured
    lo, hi = r["speedup_range"]
    st.markdown(f"**{r['drafter']}, K = {r['k']}**, {r['tokens']} tokens: plain {r['plain_s']:.2f} s, "
                f"speculative {r['spec_s']:.2f} s → **{r['speedup']:.2f}×** "
                f"({'identical output' if r['identical'] else 'OUTPUT DIFFERS'}). Medians of {r['rounds']} "
                f"interleaved rounds; single rounds gave {lo:.2f}–{hi:.2f}×: that spread is this machine's noise.")
    mm = st.columns(5)
    mm[0].metric("measured a", f"{r['a']:.2f}")
    mm[1].metric("measured c", f"{r['c']:.3f}")
    mm[2].metric("measured v", f"{r['v']:.2f}")
    mm[3].metric("paper estimate", f"{walltime_improvement(r['a'], r['k'], r['c']):.2f}×")
    mm[4].metric("machine-aware estimate", f"{walltime_improvement(r['a'], r['k'], r['c'], r['v']):.2f}×")
    st.caption("The red point on the chart is the measured speedup. The formulas are estimates under i.i.d. "
               "acceptance, not bounds, and a real run can miss them either way. Below: overhead they ignore "
               "(Python per step, sampling and bookkeeping, the first pass that also prefills the prompt), and "
               "acceptance that is not i.i.d. — with a counted as accepted ÷ ruled on, acceptance that clusters or "
               "rises with depth gives fewer tokens per pass than the estimate at that a. Above: acceptance that "
               "falls with depth (more tokens per pass than the estimate), and a verify pass or a draft step that "
               "costs less in the run than in the isolated timing. " + (estimate_note(bench) if bench else ""))
    if r.get("breakdown"):
        chart(breakdown_waterfall(r["breakdown"], f"Where the {r['speedup']:.2f}× goes (every factor from this run)"),
              key="sl_breakdown")
        st.caption("Left to right: the tokens one verify pass committed (the speedup if drafting and verifying cost "
                   "nothing), then the draft's K steps (÷ (1 + Kc)), then the verify pass at its measured cost v "
                   "instead of one step, then everything the formula leaves out (sampling, Python per step, cache "
                   "crops, a drafter's prefill), measured as what remains. The factors multiply to the measured "
                   "speedup.")
    rates = []
    for x in r["per_position"] or []:  # the positions this run reached
        if x is None:
            break
        rates.append(x)
    if rates:
        # v(K): measured per K when the toggle above timed it, else the run's own v scaled linearly in K
        v_fn = v_model(v_of_k, None if v_of_k else (r["k"], r["v"]))
        kp, gain = best_k_from_positions(rates, r["c"], v_fn)
        iid = best_k(r["a"], r["c"], v_fn(r["k"]), k_max=len(rates))
        st.markdown(
            "**Best K from this run's acceptance by position** (" + " · ".join(
                f"{i + 1}: {x:.0%}" for i, x in enumerate(rates)) + f"), c = {r['c']:.3f} and v(K) "
            + ("measured per K above" if v_of_k else f"scaled from the run's v = {r['v']:.2f}") + ": "
            + (f"**K = {kp}** (estimated {gain:.2f}×)" if kp else "**don't speculate**")
            + f"; one mean a = {r['a']:.2f} with i.i.d. acceptance would say K = {iid or 'none'}. Only the positions "
              f"this run reached (K ≤ {len(rates)}) are known: rerun at a larger K to see further.")
    h1, h2 = st.columns(2)
    if r["per_position"]:
        chart(container=h1, fig=F.position_histogram(r["per_position"], r["reached"]), key="sl_pos")
    chart(container=h2, fig=F.tokens_per_pass_histogram(r["accepted_per_pass"]), key="sl_hist")

st.subheader("Why verifying K tokens costs little more than one decode step")
st.markdown(
    "Decoding one token multiplies a single vector by every weight matrix: each weight is read from memory "
    "once and used for just one multiply-add. The arithmetic units wait for memory — decode is **memory-bandwidth "
    "bound** (arithmetic intensity ≈ 1 FLOP per byte, where a GPU needs hundreds to be busy). Feeding K+1 tokens "
    "reads the same weights once and does K+1 times the arithmetic, so on a GPU the verify pass costs about as "
    "much as one step while the pass stays memory-bound (small batch; the KV cache is read once too). On a CPU that "
    "holds only if the matrix code streams the weights once for all K+1 rows. "
    "PyTorch's plain `nn.Linear` on CPU does not quite: it re-packs each weight on every call. "
    + (packing_note(bench) if bench else "SpecViz packs the weights once for oneDNN when it loads a model on a CPU "
       "where that measures faster (`specviz/packed.py`). Toggle the measured v above to see this machine's numbers."))
