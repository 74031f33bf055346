"""The serving lab's charts: KV-cache memory, the roofline, and the speculative speedup against batch size."""
from __future__ import annotations

import plotly.graph_objects as go

from specviz.roofline import GIB, attention_intensity, kv_cache_bytes, linear_intensity, speedup_at_batch

COLORS = ["#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#c62828"]


def kv_memory(shapes, batch: int, contexts, bytes_per_value: int, beams: int, prompt: int, share_prompt: bool,
              budget_gib: float | None = None) -> go.Figure:
    """GiB of KV cache against context length, one line per model shape (a calculation)."""
    fig = go.Figure()
    for i, s in enumerate(shapes):
        gib = [kv_cache_bytes(s, batch, c, bytes_per_value, beams, prompt, share_prompt) / GIB for c in contexts]
        fig.add_trace(go.Scatter(x=list(contexts), y=gib, mode="lines+markers", name=s.name,
                                 line=dict(color=COLORS[i % len(COLORS)]),
                                 hovertemplate="%{x} tokens: %{y:.2f} GiB<extra>" + s.name + "</extra>"))
    if budget_gib:  # a trace, not add_hline: on a log axis shapes take log10 coordinates
        fig.add_trace(go.Scatter(x=[min(contexts), max(contexts)], y=[budget_gib] * 2, mode="lines+text",
                                 line=dict(color="#777", dash="dot"), name=f"{budget_gib:.1f} GiB (one 80 GB GPU)",
                                 text=["", f"{budget_gib:.1f} GiB"], textposition="top left", hoverinfo="skip"))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="context (tokens per sequence)",
                      # powers of 10 only
                      yaxis_title="KV cache (GiB)", xaxis_type="log", yaxis_type="log", xaxis_dtick=1, yaxis_dtick=1,
                      legend=dict(orientation="h", y=-0.25),
                      title=dict(text=f"KV cache for batch {batch}" + (f", {beams} beams" if beams > 1 else ""),
                                 x=0, font=dict(size=14)))
    return fig


def roofline(devices, shape, batches, k: int, bytes_per_value: int) -> go.Figure:
    """Attainable FLOP/s = min(peak, bandwidth · intensity) for each device, with the linear layers of a decode
    (1 token) and a verify (K+1 tokens) step placed at each batch size, and attention, whose intensity no
    batch raises (a calculation from the devices' numbers)."""
    fig = go.Figure()
    xs = [10 ** (e / 10) for e in range(-10, 51)]
    for i, d in enumerate(devices):
        color = COLORS[i % len(COLORS)]

        def attainable(x):
            return min(d.flops, d.bandwidth * x)
        fig.add_trace(go.Scatter(x=xs, y=[attainable(x) for x in xs], mode="lines",
                                 name=d.name, line=dict(color=color)))
        for tokens, symbol, what in ((1, "circle", "decode"), (k + 1, "diamond", f"verify K+1={k + 1}")):
            pts = [linear_intensity(b, tokens, bytes_per_value) for b in batches]
            fig.add_trace(go.Scatter(x=pts, y=[attainable(x) for x in pts], mode="markers+text", showlegend=False,
                                     marker=dict(color=color, symbol=symbol, size=9),
                                     text=[f"{'●' if tokens == 1 else '◆'}B={b}" if j in (0, len(batches) - 1) else ""
                                           for j, b in enumerate(batches)],  # which step each label belongs to
                                     textposition="top left", customdata=batches,
                                     hovertemplate=f"{d.name}<br>linear layers, {what}<br>B=%{{customdata}}: "
                                                   "%{x:.1f} FLOP/B<extra></extra>"))
            att = attention_intensity(shape, tokens, bytes_per_value)
            fig.add_trace(go.Scatter(x=[att], y=[attainable(att)], mode="markers", showlegend=False,
                                     marker=dict(color=color, symbol=symbol + "-open", size=12, line=dict(width=2)),
                                     hovertemplate=f"{d.name}<br>attention, {what}<br>%{{x:.1f}} FLOP/B, any batch"
                                                   "<extra></extra>"))
        ridge = d.flops / d.bandwidth  # a trace, not add_vline: on a log axis shapes take log10 coordinates
        fig.add_trace(go.Scatter(x=[ridge, ridge], y=[d.flops / 1e3, d.flops], mode="lines+text", showlegend=False,
                                 line=dict(color=color, dash="dot"), text=[f"ridge {ridge:.0f} FLOP/B", ""],
                                 textposition="bottom right", hoverinfo="skip"))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10), xaxis_type="log", yaxis_type="log",
                      xaxis_dtick=1, yaxis_dtick=1,  # powers of 10 only (not 2 and 5 between), all written
                      yaxis_exponentformat="power",  # the same way: SI stops at T, so 10¹⁵ came next to 100T
                      xaxis_title="arithmetic intensity (FLOPs per byte read)", yaxis_title="attainable FLOP/s",
                      legend=dict(orientation="h", y=-0.22),
                      title=dict(text=f"Roofline, {shape.name}: ● decode, ◆ verify (linear layers at each B); "
                                      "hollow: attention", x=0, font=dict(size=13)))
    return fig


def speedup_vs_batch(grid: dict | None, a: float, calculated: dict | None = None,
                     measured: dict | None = None) -> go.Figure:
    """The estimated speculative speedup against batch size: from the forward costs measured here (v(B), c(B))
    and, dashed, from a roofline calculation for a datasheet GPU. measured (batched.measure_batches): a real
    batched run's wall-clock speedups as points, beside the curve predicted from its own forward-cost grid with
    ITS a and K, and that prediction redone with the tokens per pass the whole batch got (the slowest sequence)."""
    fig = go.Figure()
    if grid:
        rows, k = grid["rows"], grid["k"]
        fig.add_trace(go.Scatter(x=[r["batch"] for r in rows], y=[speedup_at_batch(a, k, r["v"], r["c"]) for r in rows],
                                 mode="lines+markers", name=f"measured costs here (K={k})", line=dict(color=COLORS[0]),
                                 hovertemplate="B=%{x}: %{y:.2f}×<extra></extra>"))
    if calculated:
        fig.add_trace(go.Scatter(x=calculated["batches"], y=calculated["speedups"], mode="lines",
                                 name=calculated["name"], line=dict(color=COLORS[1], dash="dash"),
                                 hovertemplate="B=%{x}: %{y:.2f}×<extra></extra>"))
    if measured:
        add_measured(fig, measured)
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="no gain", annotation_position="bottom left")  # linear y
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), xaxis_type="log", xaxis_title="batch size B",
                      xaxis_tickvals=[2 ** i for i in range(11)],
                      yaxis_title="estimated speedup", legend=dict(orientation="h", y=-0.25),
                      title=dict(text=f"Speculation against batch size (a = {a:.2f})", x=0, font=dict(size=14)))
    return fig


def add_measured(fig: go.Figure, measured: dict) -> None:
    """The measured run's predicted curve (its grid, a and K), the ragged prediction and the measured points."""
    a, k, runs = measured["a"], measured["k"], measured["runs"]
    rows = measured["grid"]["rows"]
    fig.add_trace(go.Scatter(x=[r["batch"] for r in rows], y=[speedup_at_batch(a, k, r["v"], r["c"]) for r in rows],
                             mode="lines", name=f"predicted for the batched run (a = {a:.2f}, K = {k}, its own grid)",
                             line=dict(color=COLORS[2], dash="dashdot"),
                             hovertemplate="B=%{x}: %{y:.2f}×<extra></extra>"))
    fig.add_trace(go.Scatter(x=[r["batch"] for r in runs], y=[r["predicted_ragged"] for r in runs], mode="markers",
                             name="predicted with the batch's own tokens per pass (slowest sequence)",
                             marker=dict(color=COLORS[2], symbol="diamond-open", size=11, line=dict(width=2)),
                             hovertemplate="B=%{x}: %{y:.2f}×<extra></extra>"))
    fig.add_trace(go.Scatter(x=[r["batch"] for r in runs], y=[r["speedup"] for r in runs], mode="markers+text",
                             name="measured: batched speculative greedy vs batched greedy (wall-clock)",
                             marker=dict(color=COLORS[4], size=12), text=[f"{r['speedup']:.2f}×" for r in runs],
                             textposition="middle right",  # above the point it ran into the GPU curve
                             customdata=[[r["mean_tokens_per_pass"], r["batch_tokens_per_pass"]] for r in runs],
                             hovertemplate="B=%{x}: %{y:.2f}× measured<br>tokens per pass: %{customdata[0]:.2f} per "
                                           "sequence, %{customdata[1]:.2f} for the batch<extra></extra>"))
