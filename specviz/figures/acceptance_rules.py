"""Acceptance rules side by side (issue 38, item 5): each rule's probability of accepting the draft token at real
positions of a run, one group of bars per position and one for the mean. Lossless rules solid, the rest hatched.
Block verification (issue 48) judges blocks of K, not one draft: its own chart (block_bars), in drafts kept per
block, beside token-wise on the same sampled blocks."""
from __future__ import annotations

import plotly.graph_objects as go

from specviz.figures import build, token_labels

COLORS = {"exact match, sampled draft": "#ef6c00", "exact match, self-draft": "#ffb74d",
          "rejection sampling": "#1565c0", "greedy match": "#2e7d32", "typical acceptance": "#8e24aa"}
TOKENWISE_COLOR, BLOCK_COLOR = "#90a4ae", "#00897b"  # the block rows: token-wise grey beside block teal


def rules_bars(live: dict, rules: dict) -> go.Figure:
    """live: specviz.labs.acceptance_rules.live_rules(...) (rows per position and their mean); rules: {name:
    lossless} (acceptance_rules.RULES). x: "position: token" then "mean"; y: P(accept)."""
    rows = live["rows"]
    x = [f"{r['position']}: {t}" for r, t in zip(rows, token_labels([r["text"] for r in rows]))] + ["mean"]
    data = []
    for name, lossless in rules.items():
        ys = [r[name] for r in rows] + [live["mean"][name]]
        kind = "lossless" if lossless is True else ("lossless for " + lossless if lossless else "not lossless")
        data.append(dict(type="bar", name=f"{name} ({kind})", x=x, y=ys,
                         marker=dict(color=COLORS.get(name, "#757575"),
                                     pattern=dict(shape="" if lossless is True else "/", fillmode="overlay")),
                         hovertemplate=f"{name}<br>%{{x}}: P(accept) = %{{y:.3f}}<extra></extra>"))
    tv = [r["tv"] for r in rows] + [live["mean"]["tv"]]
    data.append(dict(type="scatter", mode="markers", name="1 − TV(p, q)", x=x, y=[1 - v for v in tv],
                     marker=dict(symbol="line-ew-open", size=18, color="#0d47a1", line=dict(width=2)),
                     hovertemplate="1 − TV = %{y:.3f}<extra></extra>"))
    layout = dict(title=f"P(draft token accepted) under each rule, T = {live['temperature']:g} "
                        f"(typical: ε = {live['epsilon']:g}, δ = {live['delta']:g})",
                  barmode="group", bargap=0.25, height=420,
                  yaxis=dict(title="P(accept)", range=[0, 1.05]),
                  xaxis=dict(title="output position: the run's token there", tickangle=-40),
                  legend=dict(orientation="h", y=-0.45, x=0), margin=dict(t=50, b=10))
    return build(data, layout)


def block_bars(live: dict) -> go.Figure:
    """Token-wise and block verification on the same sampled blocks of K drafts at each position of the run (live
    ["block"], labs/acceptance_rules.block_rows): expected drafts kept per block, 0..K. A different unit from
    rules_bars' P(accept) of one draft, so a chart of its own."""
    rows, block = live["rows"], live["block"]
    x = [f"{r['position']}: {t}" for r, t in zip(rows, token_labels([r["text"] for r in rows]))] + ["mean"]
    k = block["k"]
    data = [dict(type="bar", name=f"{name} (lossless)", x=x, y=[c[key] for c in block["rows"]] + [block[key]],
                 marker=dict(color=color), hovertemplate=f"{name}<br>%{{x}}: %{{y:.2f}} of {k} drafts kept per block "
                                                          f"({block['samples']} sampled blocks)<extra></extra>")
            for name, key, color in ((block["reference"], "token-wise", TOKENWISE_COLOR),
                                     (block["row"], "block", BLOCK_COLOR))]
    layout = dict(title=f"Blocks of K = {k} drafts: how many each lossless rule keeps, on the same sampled blocks",
                  barmode="group", bargap=0.25, height=360,
                  yaxis=dict(title=f"drafts kept per block (of {k})", range=[0, k]),
                  xaxis=dict(title="output position: the run's token there", tickangle=-40),
                  legend=dict(orientation="h", y=-0.45, x=0), margin=dict(t=50, b=10))
    return build(data, layout)


# the Where page's reading of the rules chart: what lossless means, why rejection sampling accepts the most of the
# lossless single-draft rules, and why block verification keeps more within the same bound
RULES_EXPLAINED = (
    "- **Lossless** means the output is distributed exactly as the target alone would sample it. Exact match "
    "is lossless (what is emitted is always the target's own sample), and so is rejection sampling "
    "(Leviathan et al. 2023, Appendix A.1). Greedy match is exact for *greedy* decoding only. Typical "
    "acceptance (Medusa) is not lossless: it accepts any token the target finds plausible enough.\n"
    "- **Why rejection sampling accepts the most among lossless rules.** A lossless rule pairs the draft's "
    "token X ~ q with an emitted token Y ~ p and accepts when X = Y. For *any* such pairing "
    "P(X = Y) = Σₓ P(X = Y = x) ≤ Σₓ min(q(x), p(x)) = 1 − TV(p, q). Rejection sampling reaches that bound; "
    "exact match pairs them independently, Σ p·q, less term by term (p·q ≤ min(p, q)). Even a perfect draft "
    "(q = p) is accepted only Σ p² of the time under exact match, always under rejection sampling: the "
    "self-draft bars are that perfect draft, so read them against 1, not against the token draft's blue bars.\n"
    "- **Why block verification keeps more, within the same bound.** 1 − TV bounds the *first* draft of "
    "any lossless rule, block verification's too, and with K = 1 it is rejection sampling. Over a block, "
    "token-wise verification stops at the first failed test; block verification (Sun et al., ICLR 2025) "
    "judges the K drafts together: a later draft the target likes more than the draft did can keep an "
    "earlier one that failed its own test, and the output is still exactly the target's. Sun et al. prove "
    "it keeps the most drafts in expectation of any lossless rule that sees only these conditional "
    "probabilities; the gain is modest (their 5–8 % in wall clock) and largest where acceptance is "
    "middling: at a low temperature the two agree.")
