"""The drafter comparison chart: measured speedup per drafter, slowdowns in red."""
from __future__ import annotations

import plotly.graph_objects as go

from . import label


def speedup_bars(rows) -> go.Figure:
    names = [label(r["drafter"]) for r in rows]
    s = [r["speedup vs plain greedy"] for r in rows]
    fig = go.Figure(go.Bar(x=names, y=s, marker_color=["#2e7d32" if v >= 1 else "#c62828" for v in s],
                           text=[f"{v:.2f}× (a = {r['acceptance rate']:.0%})" for v, r in zip(s, rows)], name="speedup"))
    fig.add_hline(y=1, line_dash="dot", line_color="#c62828", annotation_text="plain decoding")
    fig.update_layout(height=360, yaxis_title="speedup vs plain greedy", margin=dict(l=10, r=10, t=40, b=10),
                      title=dict(text="Measured speedup by drafter", x=0, font=dict(size=14)))
    return fig
