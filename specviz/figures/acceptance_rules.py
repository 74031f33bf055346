"""Acceptance rules side by side (issue 38, item 5): each rule's probability of accepting the draft token at real
positions of a run, one group of bars per position and one for the mean. Lossless rules solid, the rest hatched.
With block verification (issue 48): two more bars per position, token-wise and block verification on the same
sampled blocks of K drafts, as the share of the K kept."""
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
    block = live.get("block")
    if block:  # token-wise then block, on the same sampled blocks: the gain is the step between the two bars
        k, counts = block["k"], block["rows"]
        for name, key, color in ((block["reference"], "token-wise", TOKENWISE_COLOR), (block["row"], "block",
                                                                                        BLOCK_COLOR)):
            kept = [c[key] for c in counts] + [block[key]]
            data.append(dict(type="bar", name=f"{name}: share of K = {k} drafts kept (lossless)", x=x,
                             y=[r[name] for r in rows] + [live["mean"][name]], customdata=kept,
                             marker=dict(color=color, pattern=dict(shape="", fillmode="overlay")),
                             hovertemplate=f"{name}<br>%{{x}}: %{{customdata:.2f}} of {k} drafts kept per block "
                                           f"(%{{y:.3f}} of K; {block['samples']} sampled blocks a position)"
                                           "<extra></extra>"))
    tv = [r["tv"] for r in rows] + [live["mean"]["tv"]]
    # the bound of every lossless rule on the first draft, so also on the share of a block kept (a block keeps its
    # later drafts only with its first): drawn across the group, wider with the block rows' two more bars
    data.append(dict(type="scatter", mode="markers", name="1 − TV(p, q)", x=x, y=[1 - v for v in tv],
                     marker=dict(symbol="line-ew-open", size=30 if block else 18, color="#0d47a1", line=dict(width=2)),
                     hovertemplate="1 − TV = %{y:.3f}<extra></extra>"))
    layout = dict(title=f"P(draft token accepted) under each rule, T = {live['temperature']:g} "
                        f"(typical: ε = {live['epsilon']:g}, δ = {live['delta']:g})"
                        + (f"; blocks of K = {block['k']}: the share kept" if block else ""),
                  barmode="group", bargap=0.25, height=420,
                  yaxis=dict(title="P(accept)", range=[0, 1.05]),
                  xaxis=dict(title="output position: the run's token there", tickangle=-40),
                  legend=dict(orientation="h", y=-0.45, x=0), margin=dict(t=50, b=10))
    return build(data, layout)
