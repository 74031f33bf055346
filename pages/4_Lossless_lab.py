"""Why speculative sampling gives exactly the target's distribution: shape p and q and see."""
import pandas as pd
import streamlit as st

from ui.charts import chart
from ui.measured import ProgressBar
from ui.sidebar import encode, get_models, sidebar
from ui.state import bounded, kept, slider

from specviz.drafters import make_drafter
from specviz.figures import md_escape
from specviz.figures import lossless as F
from specviz.labs.lossless import family_verdict, first_token_distributions, mistake_power, table_problem, toy
from specviz.labs.measure import first_positions, first_positions_minutes, per_position_tests
from specviz.sampling import SamplingConfig


settings = sidebar()
st.title("Lossless lab")
st.caption("Accept the draft's token x with probability min(1, p(x)/q(x)); on rejection draw from "
           "normalize(max(0, p − q)). The emitted token is distributed exactly as p. Shape p and q and check.")

st.subheader("Toy mode: your own p and q")
DEFAULT_TABLE = pd.DataFrame({"token": ["the", "a", "cat", "dog", "sat"], "p": [0.40, 0.25, 0.15, 0.12, 0.08],
                              "q": [0.10, 0.45, 0.05, 0.30, 0.10]})
# the editor's own state goes when the learner visits another page: the table as last edited is kept beside it
# and handed back as the editor's data (a keyed fixed-rows editor keeps its identity when only values change)
table = st.data_editor(st.session_state.get("ll_table_saved", DEFAULT_TABLE), key="ll_table", num_rows="fixed",
                       hide_index=True,
                       column_config={"p": st.column_config.NumberColumn(min_value=0.0, format="%.3f"),
                                      "q": st.column_config.NumberColumn(min_value=0.0, format="%.3f")})
st.session_state["ll_table_saved"] = table
N = st.select_slider("Simulated speculative steps N", [100, 1_000, 10_000, 100_000], key=kept("ll_n", 10_000))
problem = table_problem(pd.to_numeric(table["p"], errors="coerce").tolist(),
                        pd.to_numeric(table["q"], errors="coerce").tolist())
if problem:
    st.warning(problem)
else:
    t = toy(table["p"].astype(float).tolist(), table["q"].astype(float).tolist(), N, seed=0)
    if abs(t.sums[0] - 1) > 1e-6 or abs(t.sums[1] - 1) > 1e-6:
        st.info(f"The table's p sums to {t.sums[0]:.3f} and q to {t.sums[1]:.3f}: each is **divided by its total** "
                "before use, so the chart draws the renormalised values (" + ", ".join(
                    f"{md_escape(str(name))}: p {float(pp):.3f}, q {float(qq):.3f}"
                    for name, pp, qq in zip(table["token"], t.p, t.q)) + ").")
    names = [str(name) for name in table["token"]]
    chart(F.pieces(names, t.p.tolist(), t.q.tolist(), t.overlap.tolist(), t.residual.tolist(), t.exact.tolist(),
                   (t.counts / t.counts.sum()).tolist()), key="ll_pieces")
    st.markdown(f"Accepted mass Σ min(p, q) = **{t.accepted_mass:.3f}**; rejected mass = "
                f"**{1 - t.accepted_mass:.3f}**, spent on the residual. Exact output vs p: largest difference "
                f"**{t.exact_error:.1e}**. Simulated ({N:,} steps) vs p: total variation "
                f"**{t.simulated_tv:.4f}** (shrinks like 1/√N).")
    if t.residual_is_p:
        st.caption("p = q: every draft is accepted, so max(0, p − q) is zero everywhere and the residual has nothing "
                   "to normalise. Its bars show p, what the verifier falls back to if rounding ever rejects; in exact "
                   "arithmetic a rejection has probability 0 here.")

    st.subheader("The common mistakes, computed")
    m1, m2 = st.columns(2)
    chart(container=m1, fig=F.mistake(names, t.p.tolist(), t.wrong["resample_p"].tolist(),
                                      "On rejection, resample from p (wrong)"), key="ll_wrong_p")
    m1.caption(f"Total variation from p: {t.tv('resample_p'):.3f}. Tokens the draft over-"
               "proposes keep their accepted mass *and* get p's share again.")
    chart(container=m2, fig=F.mistake(names, t.p.tolist(), t.wrong["greedy_draft"].tolist(),
                                      "Greedy draft (argmax q) with the sampling verifier (wrong)"), key="ll_wrong_g")
    m2.caption(f"Total variation from p: {t.tv('greedy_draft'):.3f}. The verifier must use the "
               "distribution the token was actually drawn from; a greedy draft's is one-hot. (Greedy *verification* "
               "works with any drafter.)")

st.subheader("Real-model mode")
models = get_models(settings)
r1, r2, r3, r4, r5 = st.columns(5)
SAMPLES = [100, 200, 400, 800]
n = r1.select_slider("Samples of each kind", SAMPLES, key=kept("ll_real_n", 400),
                     help="Each sample is a short speculative run and a short plain run: 400 take minutes on "
                          "2 CPU cores (the progress bar shows how far). Fewer samples: a weaker test (its power "
                          "is below the controls).")
temperature = slider(r2, "Temperature", "ll_temp", 0.3, 2.0, 1.0, step=0.1)
top_k = slider(r3, "Top-k (0 = off)", "ll_topk", 0, 50, 10)
positions = slider(r4, "Positions tested", "ll_pos", 1, 4, 3,
                   help="Each of the first few output positions is tested on its own: a rule that goes wrong only "
                        "after a rejection or a bonus token shows from the second position on.")
bounded("ll_seed", 0, 2 ** 31 - 1, 0, name="Seed")
seed = r5.number_input("Seed", 0, 2 ** 31 - 1, step=1, key="ll_seed",
                       help="Sample i of the speculative sampler uses seed + i, of the plain one seed + 1,000,000 + i: "
                            "the same seed gives the same samples, another seed a fresh draw.")
kind = "token" if models.draft is not None else "early-exit"
cfg = SamplingConfig(temperature, top_k, 1.0, int(seed))
ids = encode(models, settings, positions + 1)
pq_key = (tuple(ids), temperature, top_k, kind, settings.target, settings.draft)
if st.session_state.get("ll_pq", (None,))[0] != pq_key:  # one target and one draft forward: the exact p and q
    st.session_state["ll_pq"] = (pq_key, first_token_distributions(
        models.target, make_drafter(kind, models, early_exit_layers=4), ids, cfg))
p1, q1 = st.session_state["ll_pq"][1]
power = mistake_power(p1, q1, SAMPLES, positions)
minutes = first_positions_minutes(n, positions)
took = f"about {minutes:.0f} min" if minutes >= 1.5 else f"about {max(minutes * 60, 10):.0f} s"
st.caption(
    f"**What this test can see** (calculated from token 1's exact p and q on this prompt; {positions} test"
    f"{'s' if positions > 1 else ''} at 0.05 / {positions}): the chance it rejects a sampler that resamples from p "
    "after a rejection — " + ", ".join(f"{pw:.0%} at {m}" for m, pw in zip(SAMPLES, power["resample_p"])) +
    " samples — and one that drafts greedily — " +
    ", ".join(f"{pw:.0%} at {m}" for m, pw in zip(SAMPLES, power["greedy_draft"])) +
    ". A test that misses a mistake most of the time says little when it passes: pick a sample count where these "
    f"are high. At {n} samples and {positions} position{'s' if positions > 1 else ''} sampling takes {took} on a "
    "2-core CPU.")
if st.button("Sample the first tokens both ways", key="ll_run", type="primary",
             help=f"{n} samples at {positions} position{'s' if positions > 1 else ''}: {took} on a 2-core CPU."):
    bar = ProgressBar("sampling…")
    spec, plain = first_positions(models.target, lambda: make_drafter(kind, models, early_exit_layers=4),
                                  models.tokenizer, ids, n, cfg, positions,
                                  progress=bar)
    bar.empty()  # done: the results below replace the progress bar
    st.session_state["ll_real"] = (positions, per_position_tests(spec, plain, positions), n,
                                   {k: v[SAMPLES.index(n)] for k, v in power.items()}, int(seed))
if "ll_real" in st.session_state:
    shown, tests, n_run, power_run, seed_run = st.session_state["ll_real"]
    tabs = st.tabs([f"Token {t['position'] + 1}" for t in tests])
    for tab, test in zip(tabs, tests):
        cats = test["categories"]
        names = [models.tokenizer.decode([t]) for t in cats] + (["other"] if len(test["table"][0]) > len(cats) else [])
        chart(container=tab, fig=F.counts(names, test["table"][0], test["table"][1], test["expected"][0],
                                  f"Token {test['position'] + 1}: speculative vs plain sampling (tokens seen < 10 "
                                  "times pooled as 'other')"), key=f"ll_counts_{test['position']}")
        tab.markdown(f"Chi-square = **{test['statistic']:.2f}** on {test['dof']} degrees of freedom, p-value = "
                     f"**{test['pvalue']:.3f}**.")
    verdict_kind, sentence = family_verdict([t["pvalue"] for t in tests])
    (st.warning if verdict_kind == "reject" else st.info)(
        f"{n_run} samples of each kind from seed {seed_run}, {len(tests)} position{'s' if len(tests) > 1 else ''} "
        "tested. " + sentence +
        (f" At {n_run} samples this test catches the resample-from-p mistake in about {power_run['resample_p']:.0%} "
         f"of runs and the greedy-draft one in about {power_run['greedy_draft']:.0%} (calculated for the prompt and "
         "settings of the sampling run)." if verdict_kind == "consistent" else ""))
    st.caption("The black marks are the counts each sampler would have if they were the same sampler.")
