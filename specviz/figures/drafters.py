"""The drafter comparison charts: measured speedup per drafter (slowdowns red and hatched), staged speculation's
stages, the repeated-request scenario."""
from __future__ import annotations

import plotly.graph_objects as go

from specviz.figures import label


def slowdown(speedup: float) -> bool:
    """A slowdown as the page prints it: under 1 at two decimals. 0.996 prints as 1.00×, which is even, and calling it
    a slowdown beside that number contradicts it."""
    return round(speedup, 2) < 1


def _verdict(v: float) -> str:
    return ", a slowdown" if slowdown(v) else ", even" if round(v, 2) == 1 else ""


def speedup_bars(rows) -> go.Figure:
    names = [label(r["drafter"]) for r in rows]
    s = [r["speedup vs plain greedy"] for r in rows]
    # whiskers: the lowest and highest speedup a single round gave (the bar is the median over rounds)
    lo, hi = zip(*(r["speedup range"] for r in rows))
    # colour AND a second cue for a colour-blind reader: slowdowns hatched, and said in the label
    fig = go.Figure(go.Bar(x=names, y=s, marker_color=["#c62828" if slowdown(v) else "#2e7d32" for v in s],
                           marker_pattern_shape=["/" if slowdown(v) else "" for v in s],
                           error_y=dict(type="data", symmetric=False, array=[max(h - v, 0) for h, v in zip(hi, s)],
                                        arrayminus=[max(v - low, 0) for low, v in zip(lo, s)], color="#555"),
                           text=[f"{v:.2f}×{_verdict(v)} (a = {r['acceptance rate']:.0%})"
                                 for v, r in zip(s, rows)], name="speedup",
                           textposition="inside", insidetextanchor="start"))  # label at the foot: clear of the whisker
    fig.add_hline(y=1, line_dash="dot", line_color="#c62828", annotation_text="plain decoding")
    fig.update_layout(height=360, yaxis_title="speedup vs plain greedy", margin=dict(l=10, r=10, t=40, b=10),
                      title=dict(text="Measured speedup by drafter (median of the rounds; "
                                      "whiskers: lowest and highest round)", x=0, font=dict(size=14)))
    return fig


STAGE_COLORS = {"n-gram lookup s": "#2e7d32", "draft model s": "#ef6c00", "target verify s": "#1565c0"}


def stage_bars(breakdown: dict) -> go.Figure:
    """Where the time goes, one bar per run and one segment per stage (seconds measured in the run)."""
    rows = breakdown["rows"]
    names = [label(r["run"]) for r in rows] + ["plain greedy"]
    fig = go.Figure()
    for key, color in STAGE_COLORS.items():
        fig.add_trace(go.Bar(y=names,
                             x=[r[key] for r in rows] + [breakdown["plain s"] if key == "target verify s" else 0],
                             name=key.removesuffix(" s"), orientation="h", marker_color=color,
                             hovertemplate="%{y}: %{x:.2f} s<extra>" + key.removesuffix(" s") + "</extra>"))
    fig.update_layout(barmode="stack", height=260, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="seconds",
                      title=dict(text="Where the time goes, stage by stage (measured)", x=0, font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.35), yaxis=dict(autorange="reversed"))
    return fig


def suffix_bars(result: dict) -> go.Figure:
    """The repeated-request scenario: tokens per verify pass and speedup vs plain greedy, per drafter."""
    names = list(result["rows"])
    rows = [result["rows"][n] for n in names]
    fig = go.Figure([
        go.Bar(x=names, y=[r["tokens_per_verify_pass"] for r in rows], name="tokens per verify pass",
               marker_color="#1565c0",
               text=[f"{r['tokens_per_verify_pass']:.2f}" for r in rows], textposition="outside"),
        go.Bar(x=names, y=[r["speedup_vs_plain"] for r in rows], name="speedup vs plain greedy (×)",
               marker_color="#2e7d32", text=[f"{r['speedup_vs_plain']:.2f}×" for r in rows], textposition="outside")])
    fig.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.2),
                      title=dict(text=f"Repeated requests: {result['requests']} requests after the first, "
                                      f"K = {result['k']}",
                                 x=0, font=dict(size=14)))
    return fig
