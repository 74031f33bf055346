"""Where a measured speedup goes (issue 38): the breakdown's factors as a waterfall, from "drafting and verifying
free" (tokens per verify pass) down to the measured speedup, on a log axis so each factor is one step's height."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from specviz.figures import build

SHORT = {"tokens per verify pass": "if drafting and<br>verifying were free", "drafting": "÷ drafting<br>(1 + Kc)",
         "verify pass at its measured cost v": "× verify cost<br>(1 + Kc)/(Kc + v)",
         "everything else": "× everything<br>else"}


def breakdown_waterfall(breakdown, title: str = "Where the speedup goes") -> go.Figure:
    """breakdown: [(name, factor), ...] multiplying to the measured speedup (specviz.theory.speedup_breakdown).
    Bars: the running product after each factor, each bar's step labelled with its factor; the last is measured."""
    names = [SHORT.get(n.split(" (")[0].split(":")[0], n) for n, _ in breakdown] + ["measured"]
    steps = [math.log10(f) for _, f in breakdown]
    running = [math.prod(f for _, f in breakdown[: i + 1]) for i in range(len(breakdown))]
    text = [f"{breakdown[0][1]:.2f}×"] + [f"×{f:.2f} → {r:.2f}×" for (_, f), r in zip(breakdown[1:], running[1:])]
    data = [dict(type="waterfall", x=names, y=steps + [0], measure=["relative"] * len(steps) + ["total"],
                 text=text + [f"{running[-1]:.2f}×"], textposition="outside", cliponaxis=False,
                 base=0, connector=dict(line=dict(color="#9e9e9e", dash="dot")),
                 increasing=dict(marker=dict(color="#43a047")), decreasing=dict(marker=dict(color="#e53935")),
                 totals=dict(marker=dict(color="#1e88e5")),
                 customdata=[n for n, _ in breakdown] + ["the measured speedup over plain greedy"],
                 hovertemplate="%{customdata}<extra></extra>")]
    top = max([0.0] + [math.log10(r) for r in running])
    low = min([0.0] + [math.log10(r) for r in running])
    ticks = [t for t in (0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8) if low - 0.1 <= math.log10(t) <= top + 0.1]
    layout = dict(height=330, title=dict(text=title, x=0, font=dict(size=14)), showlegend=False,
                  yaxis=dict(title=dict(text="speedup over plain greedy (log)"),
                             tickvals=[math.log10(t) for t in ticks],
                             ticktext=[f"{t:g}×" for t in ticks], range=[low - 0.12, top + 0.15], zeroline=True),
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=0, y1=0, line=dict(color="#616161", width=1))],
                  margin=dict(l=60, r=10, t=50, b=60))
    return build(data, layout)
