"""The lossless lab's charts: p, q, min(p, q), the residual, the exact output, simulated counts."""
from __future__ import annotations

import plotly.graph_objects as go

from . import P_COLOR, Q_COLOR, RESAMPLED, label


def pieces(names, p, q, overlap, resid, exact, empirical=None) -> go.Figure:
    names = [label(n) for n in names]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=list(p), name="p (target)", marker_color=P_COLOR))
    fig.add_trace(go.Bar(x=names, y=list(q), name="q (draft)", marker_color=Q_COLOR))
    fig.add_trace(go.Bar(x=names, y=list(overlap), name="min(p, q): accepted mass", marker_color="#2e7d32"))
    fig.add_trace(go.Bar(x=names, y=list(resid), name="residual normalize(max(0, p − q))", marker_color=RESAMPLED))
    fig.add_trace(go.Scatter(x=names, y=list(exact), name="exact output distribution", mode="markers",
                             marker=dict(symbol="diamond", size=14, color="black")))
    if empirical is not None:
        fig.add_trace(go.Scatter(x=names, y=list(empirical), name="simulated frequency", mode="markers",
                                 marker=dict(symbol="x", size=12, color="#c62828")))
    fig.update_layout(barmode="group", height=380, margin=dict(l=10, r=10, t=40, b=10), yaxis_range=[0, 1],
                      legend=dict(orientation="h", y=-0.15),
                      title=dict(text="One speculative step: accepted mass + rejected mass × residual = p", x=0,
                                 font=dict(size=14)))
    return fig


def mistake(names, p, wrong, title) -> go.Figure:
    names = [label(n) for n in names]
    fig = go.Figure([go.Bar(x=names, y=list(p), name="p (what the target would sample)", marker_color=P_COLOR),
                     go.Bar(x=names, y=list(wrong), name="what the mistaken sampler outputs", marker_color="#c62828")])
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=40, b=10), yaxis_range=[0, 1],
                      legend=dict(orientation="h", y=-0.2), title=dict(text=title, x=0, font=dict(size=14)))
    return fig


def counts(names, spec_counts, plain_counts) -> go.Figure:
    names = [label(n) for n in names]
    fig = go.Figure([go.Bar(x=names, y=list(plain_counts), name="plain sampling", marker_color=P_COLOR),
                     go.Bar(x=names, y=list(spec_counts), name="speculative sampling", marker_color=RESAMPLED)])
    fig.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=40, b=10),
                      title=dict(text="First token: speculative vs plain sampling", x=0, font=dict(size=14)))
    return fig
