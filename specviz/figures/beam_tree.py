"""The beam search tree: every step's expansions, what survived the prune back to B, what finished."""
from __future__ import annotations

import plotly.graph_objects as go

from . import FINISHED, KEPT, PRUNED, label


def beam_tree(steps, upto: int | None = None, top_pruned: int = 6) -> go.Figure:
    """steps: BeamStep events; draws steps[: upto + 1]. Nodes at depth s are that step's candidates,
    placed by cumulative log-prob (best on top); edges join each to the beam it extended."""
    steps = list(steps)[: (len(steps) if upto is None else upto + 1)]
    fig = go.Figure()
    node_y = {(0, 0): 0.0}  # (step, beam index) -> y of the kept node that is that beam
    edges_x, edges_y, edge_colors = [], [], []
    max_rows = 1
    groups = {"kept": ([], [], [], []), "finished": ([], [], [], []), "pruned": ([], [], [], [])}
    for s, step in enumerate(steps, start=1):  # x = step number; the prompt sits at x = 0
        pruned = [c for c in step.candidates if c.status == "pruned"][:top_pruned]
        shown = [c for c in step.candidates if c.status != "pruned"] + pruned
        shown.sort(key=lambda c: -c.score)
        max_rows = max(max_rows, len(shown))
        for row, c in enumerate(shown):
            y = -float(row)
            px, py = s - 1, node_y.get((s - 1, c.parent), 0.0)
            edges_x += [px, s, None]
            edges_y += [py, y, None]
            edge_colors.append(c.status)
            if c.status == "kept":
                node_y[(s, c.child)] = y
            xs, ys, texts, hovers = groups[c.status]
            xs.append(s)
            ys.append(y)
            texts.append(label(c.text) + (f" <span style='font-size:10px;color:#666'>{c.score:.2f}</span>"
                                          if c.status != "pruned" else ""))
            hovers.append(f"{label(c.text)}<br>log p = {c.logprob:.3f}<br>cumulative = {c.score:.3f}"
                          f"<br>{c.status}" + (f" (rank {c.rank + 1})" if c.rank >= 0 else ""))
    for status, color, width in (("pruned", "#dddddd", 1), ("finished", FINISHED, 2), ("kept", KEPT, 2)):
        xs = [v for i, st in enumerate(edge_colors) if st == status for v in edges_x[3 * i:3 * i + 3]]
        ys = [v for i, st in enumerate(edge_colors) if st == status for v in edges_y[3 * i:3 * i + 3]]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width),
                                 hoverinfo="skip", showlegend=False, name=f"edges {status}"))
    styles = {"kept": (KEPT, "circle", 14), "finished": (FINISHED, "star", 18), "pruned": (PRUNED, "x", 9)}
    for status, (xs, ys, texts, hovers) in groups.items():
        color, symbol, size = styles[status]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers+text", text=texts, textposition="middle right", name=status,
            marker=dict(color=color, symbol=symbol, size=size), hovertext=hovers, hoverinfo="text",
            textfont=dict(color="#222" if status != "pruned" else "#999")))
    fig.add_trace(go.Scatter(x=[0], y=[0], mode="markers+text", text=["prompt"], textposition="middle left",
                             marker=dict(color="#555", size=12), name="prompt", showlegend=False))
    fig.update_layout(height=max(320, 90 + 30 * max_rows),
                      margin=dict(l=10, r=10, t=30, b=10), xaxis=dict(title="step", dtick=1, range=[-0.6, max(len(steps), 3) + 0.8]),
                      yaxis=dict(visible=False), legend=dict(orientation="h", y=1.08), plot_bgcolor="white",
                      title=dict(text="Beam search tree", x=0, font=dict(size=14)))
    return fig


def final_ranking(hypotheses) -> go.Figure:
    """Finished hypotheses by length-penalised score (what beam search returns: the top bar)."""
    hyps = list(hypotheses)
    names = [f"#{i + 1} " + label(h.text[:40] + ("…" if len(h.text) > 40 else "")) for i, h in enumerate(hyps)]
    fig = go.Figure(go.Bar(x=[h.score for h in hyps], y=names, orientation="h", marker_color=FINISHED,
                           text=[f"{h.score:.3f} (log p {h.logprob:.2f}, {len(h.tokens)} tok)" for h in hyps],
                           textposition="auto", name="score"))
    fig.update_layout(height=80 + 40 * len(hyps), margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(autorange="reversed"), xaxis_title="score = log p / length^penalty",
                      title=dict(text="Finished hypotheses", x=0, font=dict(size=14)))
    return fig
