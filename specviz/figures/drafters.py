"""The drafter comparison chart: measured speedup per drafter, slowdowns in red."""
from __future__ import annotations

import plotly.graph_objects as go

from . import label


def speedup_bars(rows) -> go.Figure:
    names = [label(r["drafter"]) for r in rows]
    s = [r["speedup vs plain greedy"] for r in rows]
    # whiskers: the lowest and highest speedup a single round gave (the bar is the median over rounds)
    lo, hi = zip(*(r["speedup range"] for r in rows))
    fig = go.Figure(go.Bar(x=names, y=s, marker_color=["#2e7d32" if v >= 1 else "#c62828" for v in s],
                           error_y=dict(type="data", symmetric=False, array=[max(h - v, 0) for h, v in zip(hi, s)],
                                        arrayminus=[max(v - low, 0) for low, v in zip(lo, s)], color="#555"),
                           text=[f"{v:.2f}× (a = {r['acceptance rate']:.0%})" for v, r in zip(s, rows)], name="speedup",
                           textposition="inside", insidetextanchor="start"))  # label at the foot: clear of the whisker
    fig.add_hline(y=1, line_dash="dot", line_color="#c62828", annotation_text="plain decoding")
    fig.update_layout(height=360, yaxis_title="speedup vs plain greedy", margin=dict(l=10, r=10, t=40, b=10),
                      title=dict(text="Measured speedup by drafter (median of the rounds; whiskers: lowest and highest round)", x=0, font=dict(size=14)))
    return fig
