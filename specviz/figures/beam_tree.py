"""The beam search tree: every step's expansions, what survived the prune back to B, what finished."""
from __future__ import annotations

import re

import plotly.graph_objects as go

from specviz.figures import FINISHED, KEPT, PRUNED, label

WINDOW = 12  # steps on screen at once: the view follows the frontier; drag (pan) to see earlier steps
SPECIAL = re.compile(r"<\|[^|<>]{1,40}\|>")  # chat special tokens such as <|im_end|>


LEGEND = ("Green: kept beams · star: finished · grey ×: pruned candidates (hover any node for its token, log p and "
          "cumulative log p). With many steps the chart follows the newest; drag it to see earlier ones.")


def heading(step) -> str:
    """The Beam search page's line over a step (Markdown), shared with the offline lesson."""
    return f"**Step {step.step + 1}**" + (f" · stopped: {step.stopped}" if step.stopped else "")


def short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def readable(text: str) -> str:
    """A hypothesis' text without chat special tokens; an end-of-sequence token becomes " ■" (ended)."""
    ended = bool(SPECIAL.search(text[-20:]))
    return SPECIAL.sub("", text).rstrip() + (" ■" if ended else "")


def shown_candidates(step, top_pruned: int = 6) -> list:
    """The candidates of a step the tree draws: every kept and finished one, and the best `top_pruned` pruned ones,
    best first (the page's prediction lists the same ones)."""
    pruned = [c for c in step.candidates if c.status == "pruned"][:top_pruned]
    return sorted([c for c in step.candidates if c.status != "pruned"] + pruned, key=lambda c: -c.score)


def by_beam(candidates) -> list:
    """Candidates grouped by the beam they extend (likelier tokens first within a beam): the order a learner
    predicting the prune sees them in, which gives no rank away."""
    return sorted(candidates, key=lambda c: (c.parent, -c.logprob))


def beam_tree(steps, upto: int | None = None, top_pruned: int = 6, window: int = WINDOW,
              hide_last: bool = False) -> go.Figure:
    """steps: BeamStep events; draws steps[: upto + 1]. Nodes at depth s are that step's candidates,
    placed by cumulative log-prob (best on top); edges join each to the beam it extended. Kept and finished
    nodes carry their token and cumulative log-prob; pruned ones only a hover (their labels would collide).
    The x range shows the last `window` steps (the frontier); the rest is a drag away. hide_last: the newest step's
    candidates drawn without their fate (a learner predicting which survive)."""
    steps = list(steps)[: (len(steps) if upto is None else upto + 1)]
    fig = go.Figure()
    node_y = {(0, 0): 0.0}  # (step, beam index) -> y of the kept node that is that beam
    edges = {"kept": ([], []), "finished": ([], []), "pruned": ([], [])}
    max_rows = 1
    groups = {"kept": ([], [], [], []), "finished": ([], [], [], []), "pruned": ([], [], [], []),
              "candidate": ([], [], [], [])}
    edges["candidate"] = ([], [])
    at = {}  # (step, parent beam, token) -> y of that kept or finished node: to trace the best hypothesis
    for s, step in enumerate(steps, start=1):  # x = step number; the prompt sits at x = 0
        shown = shown_candidates(step, top_pruned)
        max_rows = max(max_rows, len(shown))
        hidden = hide_last and s == len(steps)
        if hidden:  # rows by beam, labels with the token's own log p: the learner adds and ranks
            shown = by_beam(shown)
        for row, c in enumerate(shown):
            y = -float(row)
            px, py = s - 1, node_y.get((s - 1, c.parent), 0.0)
            status = "candidate" if hidden else c.status
            ex, ey = edges[status]
            ex += [px, s, None]
            ey += [py, y, None]
            if c.status == "kept":
                node_y[(s, c.child)] = y
            if c.status != "pruned" and not hidden:
                at[(s, c.parent, c.token)] = (y, c.child)
            xs, ys, texts, hovers = groups[status]
            xs.append(s)
            ys.append(y)
            texts.append("" if status == "pruned" else
                         f"{label(short(c.text, 11))}<br><span style='font-size:9px;color:#666'>"
                         + (f"log p {c.logprob:.2f}" if hidden else f"{c.score:.2f}") + "</span>")
            hovers.append(f"step {s}: “{label(c.text)}”<br>log p = {c.logprob:.3f}"
                          + ("<br>kept or pruned? your prediction first" if hidden else
                             f"<br>cumulative = {c.score:.3f}" +
                             f"<br>{c.status}" + (f" (rank {c.rank + 1})" if c.rank >= 0 else "")))
    for status, color, width in (("pruned", "#e0e0e0", 1), ("candidate", "#9e9e9e", 1), ("finished", FINISHED, 2),
                                 ("kept", KEPT, 2)):
        ex, ey = edges[status]
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=color, width=width),
                                 hoverinfo="skip", showlegend=False, name=f"edges {status}"))
    done = steps[:-1] if hide_last else steps  # a hidden step's finished hypotheses are not revealed either
    best = done[-1].finished[0] if done and done[-1].finished else None
    if best is not None:  # the winning path, under the nodes: the best finished hypothesis so far, step by step
        xs, ys, beam = [0], [0.0], 0
        for s, token in enumerate(best.tokens, start=1):
            node = at.get((s, beam, token))
            if node is None:  # a hypothesis from before the steps drawn (never: it was built from them)
                break
            xs.append(s)
            ys.append(node[0])
            beam = node[1]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="#ffb300", width=7), opacity=0.55,
                                 name="best finished path", hoverinfo="skip"))
    styles = {"kept": (KEPT, "circle", 12), "finished": (FINISHED, "star", 16), "pruned": (PRUNED, "x", 8),
              "candidate": ("#9e9e9e", "circle-open", 12)}
    for status, (xs, ys, texts, hovers) in groups.items():
        if not xs and status == "candidate":
            continue
        color, symbol, size = styles[status]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers+text" if status != "pruned" else "markers", text=texts,
            textposition="middle right", name=status,
            marker=dict(color=color, symbol=symbol, size=size), hovertext=hovers, hoverinfo="text",
            # a white outline keeps a label readable where other beams' edges cross it
            textfont=dict(color="#222", size=11, shadow="auto"), cliponaxis=False))
    fig.add_trace(go.Scatter(x=[0], y=[0], mode="markers+text", text=["prompt"], textposition="top center",
                             marker=dict(color="#555", size=12), name="prompt", showlegend=False, cliponaxis=False,
                             hovertext=["the prompt (step 0)"], hoverinfo="text"))
    n = len(steps)
    first = max(0, n - window)
    fig.update_layout(
        height=max(340, 110 + 34 * max_rows), dragmode="pan",
        margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title="step" + (f" (steps {first}–{n} shown; drag left for earlier ones)" if first else ""),
                   dtick=1, range=[first - 0.6, max(n, 3) + 0.95], showgrid=False),
        yaxis=dict(visible=False, range=[-(max_rows - 1) - 0.6, 0.8], fixedrange=True),
        legend=dict(orientation="h", x=1, xanchor="right", y=1.0, yanchor="bottom"), plot_bgcolor="white",
        title=dict(text="Beam search tree", x=0, y=0.98, yanchor="top", font=dict(size=14)))
    return fig


def distinct_labels(texts: list[str], width: int = 56) -> list[str]:
    """One label per hypothesis that shows where it differs from the others: where a hypothesis shares a
    long opening with its closest neighbour, that opening is cut to "…" plus a few words of context."""
    def shared(a: str, b: str) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    out = []
    for i, t in enumerate(texts):
        d = max((shared(t, u) for j, u in enumerate(texts) if j != i), default=0)
        start = 0
        if len(t) > width and d > 20:
            start = max(0, t.rfind(" ", 0, max(d - 16, 1)))  # a few words before the difference
        out.append(("…" if start else "") + short(t[start:], width))
    return out


def final_ranking(hypotheses) -> go.Figure:
    """Finished hypotheses by length-penalised score (what beam search returns: the top bar). Labels show
    where the hypotheses differ; score, log p and length on each label, the whole text on hover."""
    hyps = list(hypotheses)
    texts = [readable(h.text) for h in hyps]
    shown = distinct_labels(texts)
    names = [f"#{i + 1} {label(t)}  <span style='color:#666'>({len(h.tokens)} tok)</span>"
             for i, (t, h) in enumerate(zip(shown, hyps))]
    lo = min(h.score for h in hyps)
    fig = go.Figure(go.Bar(
        x=[h.score for h in hyps], y=names, orientation="h", marker_color=FINISHED, name="score",
        text=[f"{h.score:.3f}" for h in hyps], textposition="inside", insidetextanchor="start",
        customdata=[[label(t), h.logprob, len(h.tokens)] for t, h in zip(texts, hyps)],
        hovertemplate="%{customdata[0]}<br>score %{x:.4f} · log p %{customdata[1]:.3f} · %{customdata[2]} tokens"
                      "<extra></extra>"))
    fig.update_layout(height=90 + 34 * len(hyps), margin=dict(l=10, r=20, t=40, b=10),
                      yaxis=dict(autorange="reversed", automargin=True, tickfont=dict(family="monospace", size=12)),
                      xaxis=dict(title="score = log p / length^penalty (closer to 0 is better)",
                                 range=[lo * 1.08 if lo < 0 else 0, 0] if lo < 0 else None),
                      title=dict(text="Finished hypotheses, best first (■: ended with end-of-sequence)", x=0,
                                 font=dict(size=14)))
    return fig
