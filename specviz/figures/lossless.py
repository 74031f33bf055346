"""The lossless lab's charts: p, q, min(p, q), the residual, the exact output, simulated counts."""
from __future__ import annotations

import plotly.graph_objects as go

from specviz.figures import P_COLOR, Q_COLOR, RESAMPLED, label


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


def counts(names, spec_counts, plain_counts, expected=None,
           title: str = "First token: speculative vs plain sampling") -> go.Figure:
    """Observed counts of each sampler; expected: the count each would have if both were the same sampler."""
    names = [label(n) for n in names]
    fig = go.Figure([go.Bar(x=names, y=list(plain_counts), name="plain sampling", marker_color=P_COLOR,
                            text=list(plain_counts), textposition="outside", cliponaxis=False),
                     go.Bar(x=names, y=list(spec_counts), name="speculative sampling", marker_color=RESAMPLED,
                            text=list(spec_counts), textposition="outside", cliponaxis=False)])
    if expected is not None:
        fig.add_trace(go.Scatter(x=names, y=list(expected), mode="markers", name="expected count (same sampler)",
                                 marker=dict(symbol="line-ew-open", size=36, color="black", line=dict(width=3)),
                                 hovertemplate="%{x}: expected %{y:.1f}<extra></extra>"))
    fig.update_layout(barmode="group", height=340, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.15),
                      title=dict(text=title, x=0, font=dict(size=14)))
    return fig
