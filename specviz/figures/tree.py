"""Tree speculation figures: the token tree drawn as a tree (accepted path highlighted), the tree attention
mask with the position ids, and chain vs tree: the measured verify cost v(n), tokens per pass and wall clock,
what a tree needs to pay, and the tree chi-square. Pure functions: trace events or measured rows in, a figure out."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.trace import Counters
from specviz.figures import ACCEPTED, BONUS, CORRECTION, REJECTED, RESAMPLED, label, md_escape, token_labels

NOT_REACHED = "#b0b0b0"
VERDICT_COLORS = {"accepted": ACCEPTED, "rejected": REJECTED, "not reached": NOT_REACHED}
# a second cue beside the colour: red and green are the pair most colour-blind readers cannot tell apart
VERDICT_SYMBOLS = {"accepted": "circle", "rejected": "x", "not reached": "circle-open"}
NEW_COLORS = {"correction": CORRECTION, "bonus": BONUS, "resampled": RESAMPLED}


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


def star_y(pos: dict[int, tuple[float, float]], x: float, y0: float, clearance: float = 0.75) -> float:
    """Where the target's own token goes in column x (one past the last accepted node, at height y0): `clearance`
    below y0 (its rejected child may sit level with it), unless a node of column x sits within `clearance` of
    that; then the free height nearest to it (between two nodes of the column, or past its last). Rows are one
    unit apart but a parent sits at its children's mean, so a node can be anywhere: at N = 32, depth 8 the star
    covered another node in 7 of 20 cycles. Three quarters of a row, not a half: half of one left the star touching a
    rejected node's cross (a walk, 2026-11-29, when rows were 20 pixels apart; tree_figure now gives 30 or more)."""
    taken = sorted(y for (px, y) in pos.values() if abs(px - x) < 1e-9)
    want = y0 - clearance
    if all(abs(y - want) >= clearance for y in taken):
        return want
    spots = [(a + b) / 2 for a, b in zip(taken, taken[1:]) if b - a >= 2 * clearance] + [taken[0] - 1, taken[-1] + 1]
    return min(spots, key=lambda y: (abs(y - want), y > want))


def ancestry_text(cycle, node, root_text: str = "context") -> str:
    """The root-to-node path as text: "context → a → b → node"."""
    by_index = {n.index: n for n in cycle.nodes}
    path = []
    while node is not None:
        path.append(label(node.text))
        node = by_index.get(node.parent)
    return " → ".join([label(root_text)] + path[::-1])


def node_hover(cycle, n, root_text: str = "context") -> str:
    """What hovering a node shows: its ancestors (the path it is scored on), where it sits, p, q, the verdict."""
    ruled = f", accept prob {n.accept_prob:.3f}" if n.accept_prob is not None else ""
    drawn = f", u {n.u:.3f}" if n.u is not None else ""
    return (f"node {n.index}: {label(n.text)}<br>path: {ancestry_text(cycle, n, root_text)}"
            f"<br>depth {n.depth}, position id {n.position_id}<br>p {n.p:.3f}, q {n.q:.3f}{ruled}{drawn}"
            f"<br><b>{n.verdict}</b>")


def tree_figure(cycle, root_text: str = "context", hide: bool = False) -> go.Figure:
    """Nodes labelled with their token; colour and shape = verdict, opacity = the draft's confidence q; the accepted
    path's edges thick, its labels above the line, and after it the token the target adds itself (correction,
    resampled or bonus: not a node of the tree); hovering shows the node's ancestors, depth, position id, p, q
    and the verdict. hide: the drafted tree only (no verdicts, no path, no target token), while a learner predicts
    how far the walk goes."""
    pos = layout_positions(cycle)
    on_path = set() if hide else set(cycle.path)
    shown = dict(zip((n.index for n in cycle.nodes), token_labels(n.text for n in cycle.nodes)))  # " hash" ≠ "hash"
    fig = go.Figure()
    for trace in _edge_traces(cycle, pos, on_path):
        fig.add_trace(trace)
    if hide:
        fig.add_trace(_drafted_nodes(cycle, pos, shown))
    for verdict, color in ({} if hide else VERDICT_COLORS).items():
        nodes = [n for n in cycle.nodes if n.verdict == verdict]
        if not nodes:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[n.index][0] for n in nodes], y=[pos[n.index][1] for n in nodes], mode="markers+text",
            name=verdict, text=[shown[n.index] for n in nodes],
            # not under the thick line
            textposition=["top right" if n.index in on_path else "middle right" for n in nodes],
            marker=dict(size=18, color=color, symbol=VERDICT_SYMBOLS[verdict],
                        opacity=[0.35 + 0.65 * min(1.0, n.q) for n in nodes],
                        line=dict(color="#333", width=2 if verdict == "not reached" else 1)),
            hovertext=[node_hover(cycle, n, root_text) for n in nodes], hoverinfo="text"))
    fig.add_trace(go.Scatter(x=[0], y=[pos[-1][1]], mode="markers+text", text=[label(root_text)], name="root",
                             textposition="middle left", marker=dict(size=20, color="#444", symbol="square")))
    if cycle.new_token is not None and cycle.new_origin in NEW_COLORS and not hide:
        for trace in _target_token(cycle, pos):
            fig.add_trace(trace)
    # a row per leaf, one more for the target's token, and room for an 18-pixel marker in each: at 36 pixels a leaf
    # with a floor of 260 the rows came out 20 pixels apart and neighbouring crosses touched (a walk, 2026-11-29)
    leaves = sum(1 for n in cycle.nodes if not any(m.parent == n.index for m in cycle.nodes))
    fig.update_layout(xaxis=dict(title="depth (drafted position)", dtick=1), yaxis=dict(visible=False),
                      height=max(300, 40 * (2 + leaves)),
                      # legend above the nodes: below them Plotly puts it over the axis title
                      margin=dict(l=10, r=10, t=40, b=30),
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.0, yanchor="bottom"))
    return fig


def _edge_traces(cycle, pos: dict, on_path: set) -> list:
    """The edges as two traces (the rest, then the accepted path over it), segments split by None: one trace per
    edge made every Step build and draw N + 4 traces (117 ms to build at N = 12 on this CPU, and as long again to
    draw)."""
    traces = []
    for hot in (False, True):
        xs, ys = [], []
        for n in cycle.nodes:
            if (n.index in on_path) == hot:
                (x0, y0), (x1, y1) = pos[n.parent], pos[n.index]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        if xs:
            traces.append(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                     line=dict(color=ACCEPTED if hot else "#cccccc", width=4 if hot else 1.5)))
    return traces


def _drafted_nodes(cycle, pos: dict, shown: dict) -> go.Scatter:
    """Every node in one grey trace, its verdict hidden: token, depth and the draft's confidence q only."""
    return go.Scatter(
        x=[pos[n.index][0] for n in cycle.nodes], y=[pos[n.index][1] for n in cycle.nodes], mode="markers+text",
        name="drafted (verdict hidden)", text=[shown[n.index] for n in cycle.nodes], textposition="middle right",
        marker=dict(size=18, color="#bdbdbd", symbol="circle", opacity=[0.35 + 0.65 * min(1.0, n.q)
                                                                        for n in cycle.nodes],
                    line=dict(color="#333", width=1)),
        hovertext=[f"{label(n.text)} · depth {n.depth} · q {n.q:.3f} (the draft's confidence)"
                   for n in cycle.nodes],
        hoverinfo="text")


def _target_token(cycle, pos: dict) -> list:
    """The token the target adds itself, one column past the last accepted node (the root when none), where no
    node sits (star_y), joined to that node by a dotted line: (line, star)."""
    x0, y0 = pos[cycle.path[-1] if cycle.path else -1]
    y1 = star_y(pos, x0 + 1, y0)
    color = NEW_COLORS[cycle.new_origin]
    return [go.Scatter(x=[x0, x0 + 1], y=[y0, y1], mode="lines", line=dict(color=color, dash="dot", width=2),
                       hoverinfo="skip", showlegend=False),
            go.Scatter(
                x=[x0 + 1], y=[y1], mode="markers+text", text=[label(cycle.new_text)], textposition="middle right",
                name=f"{cycle.new_origin} (the target's own token)",
                marker=dict(size=15, color=color, symbol="star", line=dict(color="#333", width=1)),
                hovertext=[f"{cycle.new_origin}: {label(cycle.new_text)}, from the target's distribution at the end "
                           "of the accepted path (not drafted)"], hoverinfo="text")]


def mask_figure(cycle, context_tail: int = 4) -> go.Figure:
    """The tree attention mask: rows = nodes, columns = the last context positions + the nodes; 1 where a
    node may attend. Each row label carries the node's position id (siblings share it), and so does each
    column, under the heatmap (a context token's position id is its index)."""
    n = len(cycle.nodes)
    ctx = min(context_tail, cycle.context_len)
    full = ([f"context, pos {cycle.context_len - ctx + j}" for j in range(ctx)]
            + [f"{i}:{label(m.text)} (pos {m.position_id})" for i, m in enumerate(cycle.nodes)])
    compact = n + ctx > 12  # past a dozen columns, token texts under the columns run into each other
    cols = ([f"ctx<br>{'' if compact else 'pos '}{cycle.context_len - ctx + j}" for j in range(ctx)]
            + [(f"{i}<br>{m.position_id}" if compact else f"{i}:{label(m.text)}<br>pos {m.position_id}")
               for i, m in enumerate(cycle.nodes)])
    rows = full[ctx:]
    z = [[1] * ctx + [int(v) for v in cycle.mask[i]] for i in range(n)]
    sees = [[f"{rows[i]} {'sees' if v else 'does not see'} {full[j]}" for j, v in enumerate(z[i])] for i in range(n)]
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, colorscale=[[0, "#f4f4f4"], [1, "#1565c0"]], showscale=False,
                               xgap=1, ygap=1, customdata=sees, hovertemplate="%{customdata}<extra></extra>"))
    fig.update_layout(yaxis=dict(autorange="reversed"), height=max(240, 24 * n + 100),
                      xaxis=dict(tickangle=0, title=dict(text="columns: node index (the row labels' numbers) over its "
                                                              "position id; ctx = context" if compact else None)),
                      margin=dict(l=10, r=10, t=30, b=10), title="tree attention mask (rows attend to columns)")
    return fig


# ---------------------------------------------------------------- the page's sentences (shared with the offline lesson)
def heading(cycle, at_end: bool) -> str:
    """The line over a cycle (Markdown): nodes drafted, the accepted path, the target's own token."""
    return (f"**Cycle {cycle.cycle + 1}** · " + (f"{len(cycle.nodes)} nodes · accepted path of {cycle.accepted} + "
                                                 if cycle.nodes else "no tree · ")
            + f"{cycle.new_origin} token “{md_escape(cycle.new_text)}”" + (" · done" if at_end else ""))


def no_tree_caption(max_new: int) -> str:
    return (f"No tree this cycle: one token was left of the {max_new} this page generates, so nothing was drafted and "
            "the target's one pass gives that token itself, as plain decoding would.")


def cache_caption(cycle) -> str:
    return (f"Target KV cache: {cycle.target_cache.before} entries after the verify pass (context + every node) "
            f"→ {cycle.target_cache.after} after the gather (context + the accepted path).")


def metrics(done: list) -> list[tuple[str, str, str | None]]:
    """(label, value, help) of the page's metric row after the cycles `done`: the engine's own Counters."""
    c = Counters.of(done)
    tokens, verify, prefill = c.tokens, c.verify_passes, c.prefill_passes
    return [("Tokens", str(tokens), None),
            ("Target passes", str(verify + prefill), f"{verify} verify pass{'es' if verify != 1 else ''}"
             + (f" + {prefill} prefill pass over the prompt" if prefill else "")),
            ("Tokens per verify pass", f"{tokens / verify:.2f}",
             "Mean acceptance length, as on the Speculative decoding page: output tokens / verify passes, each "
             "pass's correction, resampled or bonus token included."),
            ("Tokens per target pass", f"{tokens / (verify + prefill):.2f}",
             "The prefill pass counted too (the drafter reads the target's states, so it needs one first): the "
             "figure the model card reports.")]


def legend_caption(cycle, typical) -> str:
    rule = {"greedy": "Greedy: the walk takes the child equal to the target's argmax, so the output is plain "
                      "greedy's" + (" (typical acceptance too: at T = 0 it is exact match)." if typical else "."),
            "sampling": "Sampling: children are tried in turn, each against the residual the earlier rejections left "
                        "(multi-draft recursive rejection sampling): exactly the target's distribution.",
            "typical": "Typical acceptance (LOSSY): a node passes when p(x) clears min(ε, δ·exp(−H(p))) under its "
                       "parent; of the longest passing paths the likeliest is kept, and the target adds p's argmax "
                       "after it. No draw decides anything: the output is not distributed as the target's."}
    return ("Colour and shape: the verdict (● accepted, ✕ rejected, ○ not reached). Opacity: the draft's confidence q "
            "in that token (fainter: less sure). The star after the accepted path is the token the target adds itself "
            "(correction, resampled or bonus): it is not drafted, so it is not a node of the tree. "
            + rule[cycle.verify_mode] + " Hover a node for its path from the root, p, q and the verdict.")


# ---------------------------------------------------------------- chain vs tree (specviz/labs/tree_compare.py)
GPU_FLAT = "#7b1fa2"


def verify_cost_figure(curve: dict) -> go.Figure:
    """v(n): ms of one target forward over n positions, measured here (median, min-max bars), beside the flat
    line a memory-bound GPU forward roughly follows (v(n) ≈ v(1) up to ~64 positions)."""
    xs = sorted(curve)
    med = [curve[x]["median"] for x in xs]
    fig = go.Figure(go.Scatter(
        x=xs, y=med, mode="lines+markers", name="this machine (median)",
        error_y=dict(type="data", symmetric=False, array=[curve[x]["hi"] - m for x, m in zip(xs, med)],
                     arrayminus=[m - curve[x]["lo"] for x, m in zip(xs, med)]),
        hovertemplate="%{x} positions: %{y:.1f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(x=xs, y=[med[0]] * len(xs), mode="lines", name="flat v (GPU-like: 64 ≈ 1)",
                             line=dict(dash="dash", color=GPU_FLAT), hoverinfo="skip"))
    fig.update_layout(title="v(n): the cost of verifying n positions in one target forward",
                      xaxis=dict(title="positions verified in one forward (n)", type="log", tickvals=xs),
                      yaxis=dict(title="ms", rangemode="tozero"), height=320, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.3))
    return fig


def chain_vs_tree_figure(rows: list[dict]) -> go.Figure:
    """Side by side for each run (tree_compare.comparison rows): tokens per verify pass, target passes, verify
    ms per token (measured v here and a flat v) and the measured wall clock."""
    names = [r["name"] for r in rows]
    fig = make_subplots(rows=1, cols=4, subplot_titles=("tokens per verify pass", "target passes",
                                                         "verify ms per token", "wall clock (s)"))
    fig.add_trace(go.Bar(x=names, y=[r["tokens per verify pass"] for r in rows], name="tokens per verify pass",
                         marker_color=ACCEPTED, showlegend=False), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["target passes"] for r in rows], name="target passes",
                         marker_color="#546e7a", showlegend=False), 1, 2)
    fig.add_trace(go.Bar(x=names, y=[r["verify ms per token"] for r in rows], name="v(n) / τ, measured v"), 1, 3)
    fig.add_trace(go.Bar(x=names, y=[r["flat-v verify ms per token"] for r in rows], name="v(1) / τ, flat v",
                         marker_color=GPU_FLAT), 1, 3)
    fig.add_trace(go.Bar(x=names, y=[r["seconds"] for r in rows], name="wall clock", marker_color="#ef6c00",
                         showlegend=False,
                         error_y=dict(type="data", symmetric=False,
                                      array=[r["seconds range"][1] - r["seconds"] for r in rows],
                                      arrayminus=[r["seconds"] - r["seconds range"][0] for r in rows])), 1, 4)
    fig.update_layout(height=360, barmode="group", margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.35))
    return fig


def break_even_figure(needed: list[dict], measured: list[tuple[str, int, float]] = ()) -> go.Figure:
    """The tokens per verify pass a tree of N nodes needs to match the chain's verify time per token: with the
    measured v here (rises with N) and with a flat v (the chain's own τ); the measured trees as points."""
    xs = [r["budget"] for r in needed]
    fig = go.Figure(go.Scatter(x=xs, y=[r["needed tau here"] for r in needed], mode="lines+markers",
                               name="needed here (measured v)"))
    fig.add_trace(go.Scatter(x=xs, y=[r["needed tau, flat v"] for r in needed], mode="lines",
                             name="needed with flat v (GPU-like)", line=dict(dash="dash", color=GPU_FLAT)))
    for name, n, tau in measured:
        fig.add_trace(go.Scatter(x=[n], y=[tau], mode="markers+text", text=[name], textposition="top center",
                                 marker=dict(size=12, color=ACCEPTED, symbol="star"), name=name))
    fig.update_layout(title="Where a tree stops paying: τ a tree of N nodes needs to break even with the chain",
                      xaxis=dict(title="verify budget N (nodes)"), yaxis=dict(title="tokens per verify pass τ"),
                      height=340, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.3))
    return fig


def fit_figure(names: list[str], observed: list[int], expected: list[float], title: str) -> go.Figure:
    """Observed counts against the counts the target's p predicts (the tree chi-square's bins)."""
    fig = go.Figure(go.Bar(x=names, y=observed, name="tree speculation (observed)", marker_color=ACCEPTED))
    fig.add_trace(go.Scatter(x=names, y=expected, mode="markers", name="n · p (expected)",
                             marker=dict(symbol="line-ew-open", size=22, color="black", line=dict(width=3))))
    # a long tail of small bins is unreadable on a linear axis next to one big bin: counts on a log axis then
    log = max(expected) > 50 * max(min(expected), 1e-9)
    # the legend sits under the title, above the plot: below it, it collided with long rotated token labels
    fig.update_layout(title=title, height=340, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
                      yaxis=dict(type="log", title="count (log scale)") if log else dict(title="count"))
    return fig


def sized_tree_figure(curve, chosen_budget: int, measured: list[dict]) -> go.Figure:
    """The hardware-sized tree (labs/tree_sizing): expected tokens per second against the budget (each budget at its
    best depth), the chosen point, and beside it what the decoding runs measured (tokens per second over the whole
    run, Python and all: below the expectation, which counts only the draft and verify passes)."""
    budgets = [row[0] for row in curve]
    fig = go.Figure(go.Scatter(
        x=budgets, y=[row[4] for row in curve], mode="lines+markers", name="expected (draft + verify passes)",
        customdata=[[row[1], row[2], row[3]] for row in curve],
        hovertemplate="N = %{x}, depth %{customdata[0]}: %{customdata[1]:.2f} tokens per cycle in "
                      "%{customdata[2]:.0f} ms → %{y:.1f} tokens/s<extra></extra>"))
    best = next(row for row in curve if row[0] == chosen_budget)
    fig.add_trace(go.Scatter(x=[best[0]], y=[best[4]], mode="markers+text", name=f"chosen: N = {best[0]}, "
                             f"depth {best[1]}", marker=dict(symbol="star", size=16, color=ACCEPTED),
                             text=[f"N = {best[0]}, D = {best[1]}"], textposition="top center"))
    for row in measured:
        if row["budget"] is None:  # plain greedy: a level, not a point
            fig.add_hline(y=row["tokens_per_s"], line_dash="dot", line_color="#546e7a",
                          annotation_text=f"plain greedy, measured: {row['tokens_per_s']:.1f} tokens/s",
                          annotation_position="bottom right")
        else:
            fig.add_trace(go.Scatter(x=[row["budget"]], y=[row["tokens_per_s"]], mode="markers",
                                     name=f"{row['run']}, measured", marker=dict(symbol="diamond", size=12),
                                     hovertemplate="%{y:.1f} tokens/s measured<extra></extra>"))
    fig.update_layout(title="A tree sized for this machine: expected tokens per second against the budget",
                      xaxis=dict(title="tree budget N (nodes; each at its best depth)"),
                      # headroom above the highest point: the chosen point's label sits over it
                      yaxis=dict(title="tokens per second", range=[0, 1.15 * max(
                          [row[4] for row in curve] + [row["tokens_per_s"] for row in measured])]), height=360,
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


# ---------------------------------------------------------------- the page's longer sentences
WHY_NOT_LONGEST = (
    "Tempting: judge every node with min(1, p/q) against its parent's p on its own and keep the longest "
    "path down from the root whose nodes all passed. It is **biased**, two ways. (1) Which of several "
    "accepted siblings wins depends on how far its subtree got, a property of the draft's continuations, "
    "not of p: a token whose "
    "continuations the draft guesses well is emitted more often than p says. (2) Siblings judged against the "
    "same p do not share out p's mass. Say p(a) = 0.8, p(b) = 0.2 and the draft proposes both, a first (one-hot "
    "q each). The exact rule accepts a with 0.8; after a's rejection the residual is all b, so b is accepted: "
    "b comes out 0.2 of the time, as p says. Judged on its own, b passes only 20 % of the time after a failed "
    "and the rest falls back to p: b comes out 0.2 × (0.2 + 0.8 × 0.2) = 0.072, a 0.928.\n\n"
    "**Multi-draft recursive rejection sampling** (SpecInfer) walks from the root and at each node tries its "
    "children **in turn**: child x is accepted with min(1, p(x)/q(x)); after a rejection, p ← normalize(max(0, "
    "p − q)) for the next child (a deterministic child has one-hot q: its token simply leaves p). If every "
    "child fails, the token is drawn from the final residual. Each step is the single-draft rule applied to "
    "what is left, so by the same argument as for a chain (accepted mass min(p, q) + rejected mass × "
    "residual = p) the emitted token is distributed exactly as p, at every depth. The chi-square test at the "
    "bottom of this page checks it on the real model.")

WHY_CPU = (
    "**Why.** Each verified position costs a 2-core CPU real arithmetic (a forward over n positions is n rows "
    "of matrix products once the weights are in cache), so past a few positions a tree pays only if each extra "
    "node adds about as much to τ as it adds to v(n): the needed-τ curve above rises with N, and trees stop "
    "paying where it passes what the tree delivers. On a GPU a decoding forward is bound by reading the "
    "weights, not by arithmetic: 64 positions cost about what 1 does, v is flat (the dashed lines), every "
    "extra accepted token is profit, and a tree of 32–64 nodes is the better deal: that is why Medusa, EAGLE "
    "and SpecInfer verify trees on GPUs.")


def machine_says(f: dict, depth: int, budget: int, max_new: int, bench: dict | None, spent: float | None) -> str:
    """"What this machine says" under the chain-vs-tree measurement (f: labs.tree_compare.finding), worded from the
    run's own figures, beside the committed benchmark's verdict when there is one."""
    vs = f["tree vs"].get(f"chain K={depth}")
    faster = None if vs is None else vs["tree faster"]
    lin = f"from about {f['linear from']} positions on" if f["linear from"] else "nowhere in the measured range"
    return (
        f"**What this machine says.** Verifying {f['largest n']} positions costs **{f['v largest / v1']:.1f}×** "
        f"verifying one; v(n) roughly doubles with n {lin}. Fastest by wall clock in this run: **{f['fastest']}**."
        + (f" The tree emits **{vs['tau ratio']:.2f}×** the tokens per verify pass of the chain at K = {depth}, and "
           f"its verify time per token is **{vs['verify cost ratio here']:.2f}×** the chain's with the v measured "
           f"here (**{vs['verify cost ratio flat v']:.2f}×** with a flat v); its wall clock is "
           f"**{vs['wall clock ratio']:.2f}×** the chain's: the tree was **{'faster' if faster else 'slower'}** here."
           if vs else "")
        + (f" The benchmark of {bench['date']} found the {bench['faster']} faster"
           + (", as this run does." if bench["faster"] == ("tree" if faster else "chain") else
              f"; this run differs. It can: it times one prompt of {max_new} tokens at N = {budget}, depth {depth}, "
              f"twice, against {bench['prompts']} prompts of {bench['max_new_tokens']} at the benchmark's sizes, and "
              "the machine's speed moves between runs, more when it is busy.")
           if bench and faster is not None else "")
        + (f" (This measurement took {spent:.0f} s.)" if spent else ""))


def typical_verdict(eps: float, dlt: float, fit: dict, exact_first: dict, detected: bool, verdict: str) -> str:
    """The chi-square's reading of Medusa's typical acceptance on the same trials (first token), beside the exact
    rule's total variation."""
    return (f"**Typical acceptance (ε = {eps}, δ = {dlt}), LOSSY**, on the same trials, first token: "
            + verdict + f" (The exact rule's first token: total variation {exact_first['tv']:.4f}.) "
            + ("A drafted token whose p clears the threshold passes every time instead of with probability "
               "min(1, p/q), and where none does the target's argmax stands in for a draw: the output leans "
               "to the likeliest tokens." if detected else
               f"At this n the test does not show the loss on this prompt: the rule is lossy all the same "
               f"(its distance from p is a property of the rule, measured exactly on the Medusa heads in "
               f"`models/medusa/typical_tv.json`), but here the draft's proposals and p agree closely enough "
               f"that {fit['n']:,} trials do not separate them. Try another prompt."))
