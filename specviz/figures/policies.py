"""Dynamic-K policies replayed on one run (issue 38, item 3): tokens per verify pass for each policy, and its speedup
over plain greedy, predicted from the measured costs and, once the policies ran in the engine, measured."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from specviz.figures import build


def _short(row: dict) -> str:
    """The row's short label (its own <br> kept), else its name escaped."""
    return row["label"] if row.get("label") else html.escape(row["policy"])


def policy_bars(rows: list[dict], measured: dict | None = None) -> go.Figure:
    """rows: specviz.labs.policies.compare_policies(...); measured: measure_policies(...) or None. Left: tokens per
    verify pass; right: speedup over plain greedy, predicted (and measured: plain seconds / the policy's)."""
    x = [_short(r) for r in rows]
    data = [dict(type="bar", name="tokens per verify pass", x=x, y=[r["tokens_per_pass"] for r in rows],
                 marker=dict(color="#1565c0"), text=[f"{r['tokens_per_pass']:.2f}" for r in rows],
                 textposition="outside", cliponaxis=False, xaxis="x", yaxis="y",
                 customdata=[[r["passes"], r["drafted"], r["accepted"], html.escape(r["policy"])] for r in rows],
                 hovertemplate="%{customdata[3]}<br>%{y:.2f} tokens per pass<br>%{customdata[0]} passes, "
                               "%{customdata[2]} of %{customdata[1]} drafts accepted<extra></extra>"),
            dict(type="bar", name="speedup, predicted", x=x, y=[r["predicted_speedup"] for r in rows],
                 marker=dict(color="#90caf9"), text=[f"{r['predicted_speedup']:.2f}×" for r in rows],
                 textposition="outside", cliponaxis=False, xaxis="x2", yaxis="y2",
                 hovertemplate="predicted %{y:.2f}× (draft steps × t_d + verify passes × t_1·v)<extra></extra>")]
    if measured:
        ys = [measured["plain_s"] / measured[r["policy"]]["seconds"] for r in rows]
        data.append(dict(type="bar", name="speedup, measured", x=x, y=ys, marker=dict(color="#2e7d32"),
                         text=[f"{y:.2f}×" for y in ys], textposition="outside", cliponaxis=False,
                         xaxis="x2", yaxis="y2", hovertemplate="measured %{y:.2f}× (one timed run)<extra></extra>"))
    top = max([r["tokens_per_pass"] for r in rows] + [1.0])
    speed = max([d for t in data[1:] for d in t["y"]] + [1.0])
    layout = dict(title="Dynamic-K policies on the same greedy output", barmode="group", height=460, bargap=0.3,
                  xaxis=dict(domain=[0, 0.46], tickangle=0), xaxis2=dict(domain=[0.54, 1], tickangle=0),
                  yaxis=dict(title="tokens per verify pass", range=[0, top * 1.2]),
                  yaxis2=dict(title="speedup over plain greedy", range=[0, speed * 1.2], anchor="x2"),
                  shapes=[dict(type="line", xref="x2 domain", yref="y2", x0=0, x1=1, y0=1, y1=1,
                               line=dict(color="#9e9e9e", dash="dot"))],
                  legend=dict(orientation="h", y=-0.35, x=0), margin=dict(t=50, b=10))
    return build(data, layout)
