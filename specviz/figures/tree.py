"""Tree speculation figures: the token tree drawn as a tree (accepted path highlighted) and the tree
attention mask with the position ids. Pure functions: a TreeCycle (specviz/trace.py) in, a figure out."""
from __future__ import annotations

import plotly.graph_objects as go

from . import ACCEPTED, REJECTED, label

NOT_REACHED = "#b0b0b0"
VERDICT_COLORS = {"accepted": ACCEPTED, "rejected": REJECTED, "not reached": NOT_REACHED}


def layout_positions(cycle) -> dict[int, tuple[float, float]]:
    """x = depth (the root at 0), y = leaf order (a parent centred over its children). -1 is the root."""
    kids: dict[int, list[int]] = {-1: []}
    for n in cycle.nodes:
        kids.setdefault(n.parent, []).append(n.index)
        kids.setdefault(n.index, [])
    pos, row = {}, [0]

    def place(node: int, depth: int) -> float:
        if not kids[node]:
            y = float(row[0])
            row[0] += 1
        else:
            ys = [place(c, depth + 1) for c in kids[node]]
            y = sum(ys) / len(ys)
        pos[node] = (float(depth), -y)
        return y
    place(-1, 0)
    return pos


def tree_figure(cycle, root_text: str = "context") -> go.Figure:
    """Nodes labelled with their token; colour = verdict, opacity = the draft's confidence q; the accepted
    path's edges thick; hovering shows depth, position id, p, q and the verdict."""
    pos = layout_positions(cycle)
    on_path = set(cycle.path)
    fig = go.Figure()
    for n in cycle.nodes:
        (x0, y0), (x1, y1) = pos[n.parent], pos[n.index]
        hot = n.index in on_path
        fig.add_trace(go.Scatter(x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="skip", showlegend=False,
                                 line=dict(color=ACCEPTED if hot else "#cccccc", width=4 if hot else 1.5)))
    for verdict, color in VERDICT_COLORS.items():
        nodes = [n for n in cycle.nodes if n.verdict == verdict]
        if not nodes:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[n.index][0] for n in nodes], y=[pos[n.index][1] for n in nodes], mode="markers+text",
            name=verdict, text=[label(n.text) for n in nodes], textposition="middle right",
            marker=dict(size=18, color=color, opacity=[0.35 + 0.65 * min(1.0, n.q) for n in nodes],
                        line=dict(color="#333", width=1)),
            hovertext=[f"node {n.index}: {label(n.text)}<br>depth {n.depth}, position id {n.position_id}"
                       f"<br>q {n.q:.3f}, p {n.p:.3f}<br>{n.verdict}" for n in nodes], hoverinfo="text"))
    fig.add_trace(go.Scatter(x=[0], y=[pos[-1][1]], mode="markers+text", text=[label(root_text)], name="root",
                             textposition="middle left", marker=dict(size=20, color="#444", symbol="square")))
    fig.update_layout(xaxis=dict(title="depth (drafted position)", dtick=1), yaxis=dict(visible=False),
                      height=max(260, 36 * (1 + sum(1 for n in cycle.nodes if not any(m.parent == n.index for m in cycle.nodes)))),
                      margin=dict(l=10, r=10, t=30, b=30), legend=dict(orientation="h"))
    return fig


def mask_figure(cycle, context_tail: int = 4) -> go.Figure:
    """The tree attention mask: rows = nodes, columns = the last context positions + the nodes; 1 where a
    node may attend. Each row label carries the node's position id (siblings share it)."""
    n = len(cycle.nodes)
    ctx = min(context_tail, cycle.context_len)
    cols = [f"ctx {cycle.context_len - ctx + j}" for j in range(ctx)] + [f"{i}:{label(m.text)}" for i, m in enumerate(cycle.nodes)]
    rows = [f"{i}:{label(m.text)} (pos {m.position_id})" for i, m in enumerate(cycle.nodes)]
    z = [[1] * ctx + [int(v) for v in cycle.mask[i]] for i in range(n)]
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, colorscale=[[0, "#f4f4f4"], [1, "#1565c0"]], showscale=False,
                               xgap=1, ygap=1, hovertemplate="%{y} sees %{x}: %{z}<extra></extra>"))
    fig.update_layout(yaxis=dict(autorange="reversed"), height=max(240, 24 * n + 80),
                      margin=dict(l=10, r=10, t=30, b=10), title="tree attention mask (rows attend to columns)")
    return fig
