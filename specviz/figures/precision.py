"""Bit-exact vs distribution-lossless (issue 38, item 6): the top-2 logit margin at each output position of the fp32
run, the bf16 model's margin on the same text, and a marker where each pair of runs first parts."""
from __future__ import annotations

import plotly.graph_objects as go

from specviz.figures import build, token_labels

PAIR_COLORS = {("fp32 plain", "fp32 speculative"): "#1565c0", ("bf16 plain", "bf16 speculative"): "#8e24aa",
               ("fp32 plain", "bf16 plain"): "#c62828"}


def margin_chart(result: dict) -> go.Figure:
    """result: specviz.labs.precision.precision_runs(...). x: output position of fp32 plain's text; bars: fp32's
    top1 − top2 logit margin there (log axis); markers: bf16's on the same text; a dashed line where each pair
    of runs first parts (the bf16 pair parts on bf16's own text: its line is drawn at that position too)."""
    m32, m16 = result["margins"]["fp32"], result["margins"]["bf16"]
    texts = result["texts"]["fp32 plain"]
    x = list(range(1, len(m32) + 1))
    ticks = [f"{i}: {t}" for i, t in zip(x, token_labels(texts))]
    floor = 1e-3  # a margin of exactly 0 (a tie) has no place on a log axis: drawn at the floor
    data = [dict(type="bar", name="fp32: top1 − top2 logit", x=x, y=[max(m["margin"], floor) for m in m32],
                 marker=dict(color="#90caf9"), customdata=[m["margin"] for m in m32],
                 hovertemplate="position %{x}: fp32 margin %{customdata:.4f}<extra></extra>"),
            dict(type="scatter", mode="markers", name="bf16 on the same text", x=x,
                 y=[max(m["margin"], floor) for m in m16], customdata=[m["margin"] for m in m16],
                 marker=dict(symbol="diamond", size=7, color="#6a1b9a"),
                 hovertemplate="position %{x}: bf16 margin %{customdata:.4f}<extra></extra>")]
    shapes, notes = [], []
    for pair in result["pairs"]:
        d = pair["position"]
        if d is None:
            continue
        color = PAIR_COLORS.get((pair["a"], pair["b"]), "#424242")
        shapes.append(dict(type="line", xref="x", yref="paper", x0=d + 1, x1=d + 1, y0=0, y1=1,
                           line=dict(color=color, dash="dash", width=2)))
        notes.append(dict(xref="x", yref="paper", x=d + 1, y=1.02 + 0.07 * len(notes), showarrow=False,
                          text=f"{pair['a']} ≠ {pair['b']}", font=dict(color=color, size=11), xanchor="left"))
    parted = sum(p["position"] is not None for p in result["pairs"])
    layout = dict(title=dict(text=f"Top-2 logit margin along the fp32 greedy output ({parted} of "
                                  f"{len(result['pairs'])} pairs part)", y=0.97),
                  height=440, bargap=0.15, shapes=shapes, annotations=notes,
                  yaxis=dict(title="top1 − top2 logit (log)", type="log"),
                  xaxis=dict(title="output position: fp32 plain's token", tickmode="array", tickvals=x,
                             ticktext=ticks, tickangle=-50, range=[0.4, len(x) + 0.6]),
                  legend=dict(orientation="h", y=-0.5, x=0), margin=dict(t=60 + 22 * len(notes), b=10))
    return build(data, layout)
