"""A cycle's timeline (issue 38, item 4): one horizontal lane per method (plain greedy, a chain, an EAGLE-2 tree),
each cycle's stages drawn where they happened in measured time, Gantt-style, and the tokens each cycle committed
above its end. What a learner reads off it: the verify forward of a chain costs about one plain forward (wide
bars of the same length), so the tokens it commits per cycle are nearly free; a tree's forward is longer."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from specviz.figures import build
from specviz.trace import LABELS, STAGES, Lane

COLORS = {"prefill": "#8e24aa", "draft": "#fb8c00", "verify": "#1565c0", "accept": "#2e7d32",
          "rollback": "#c62828", "overhead": "#9e9e9e"}


def timeline_chart(lanes: list[Lane]) -> go.Figure:
    """lanes: specviz.labs.timeline.measure(...)."""
    names = [html.escape(ln.name) for ln in lanes]
    end = max((ln.total_ms for ln in lanes), default=1.0)
    data = []
    for stage in STAGES:
        y, base, width, custom = [], [], [], []
        for name, ln in zip(names, lanes):
            for s in ln.spans:
                if s.stage == stage:
                    y.append(name)
                    base.append(s.start_ms)
                    width.append(s.ms)  # measured: a 0.1 ms acceptance rule is a hairline
                    custom.append([s.cycle + 1, round(s.ms, 2)])
        if y:
            data.append(dict(type="bar", orientation="h", name=LABELS[stage], y=y, x=width, base=base,
                             marker=dict(color=COLORS[stage], line=dict(width=0.5, color="white")),
                             customdata=custom,
                             hovertemplate=f"cycle %{{customdata[0]}}: {LABELS[stage]}<br>%{{customdata[1]}} ms"
                                           "<extra></extra>"))
    # tokens committed by each speculative cycle, just above the bar where the cycle ends (plain greedy: +1 always)
    notes = [dict(x=s.end_ms, y=name, yshift=30, xanchor="right", text=f"+{ln.emitted[s.cycle]}", showarrow=False,
                  font=dict(size=10, color="#37474f"))
             for name, ln in zip(names, lanes) if ln.positions and max(ln.positions) > 1
             for s in ln.spans if s.stage == "overhead"]
    layout = dict(title="Where a cycle's milliseconds go (measured; +n: tokens a cycle committed, plain greedy: +1)",
                  barmode="overlay", height=170 + 90 * len(lanes), bargap=0.5,
                  xaxis=dict(title="milliseconds since the run started", range=[0, end * 1.02]),
                  yaxis=dict(autorange="reversed", categoryorder="array", categoryarray=names),
                  legend=dict(orientation="h", y=-0.3, x=0), margin=dict(t=50, b=10), annotations=notes)
    return build(data, layout)


def per_token_bars(summary: dict) -> go.Figure:
    """summary: specviz.labs.timeline.summary(...). Per method, milliseconds per committed token, stacked by stage:
    the chain's verify bar per token is plain greedy's forward divided by the tokens a cycle commits."""
    lanes = summary["lanes"]
    names = [html.escape(r["name"]) for r in lanes]
    data = []
    for stage in STAGES:
        xs = [r["stage_ms"][stage] / max(1, r["tokens"]) for r in lanes]
        if any(xs):
            data.append(dict(type="bar", orientation="h", name=LABELS[stage], y=names, x=xs,
                             marker=dict(color=COLORS[stage]),
                             hovertemplate=f"{LABELS[stage]}: %{{x:.1f}} ms per token<extra></extra>"))
    totals = [r["ms_per_token"] for r in lanes]
    data.append(dict(type="scatter", mode="text", y=names, x=totals, text=[f"{t:.1f} ms" for t in totals],
                     textposition="middle right", showlegend=False, hoverinfo="skip"))
    layout = dict(title="Milliseconds per committed token, by stage", barmode="stack", height=120 + 60 * len(lanes),
                  xaxis=dict(title="ms per token", range=[0, max(totals + [1.0]) * 1.25]),
                  yaxis=dict(autorange="reversed"), legend=dict(orientation="h", y=-0.45, x=0, traceorder="normal"),
                  margin=dict(t=50, b=10))
    return build(data, layout)
