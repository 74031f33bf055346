"""The beam search tree: every step's expansions, what survived the prune back to B, what finished."""
from __future__ import annotations

import re

import plotly.graph_objects as go

from specviz.figures import FINISHED, KEPT, PRUNED, label, md_escape

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
    edges, nodes, at, max_rows = _place_nodes(steps, top_pruned, hide_last)
    fig = go.Figure()
    for trace in _edge_traces(edges):
        fig.add_trace(trace)
    done = steps[:-1] if hide_last else steps  # a hidden step's finished hypotheses are not revealed either
    best = done[-1].finished[0] if done and done[-1].finished else None
    if best is not None:  # the winning path, under the nodes: the best finished hypothesis so far, step by step
        fig.add_trace(_best_path(best, at))
    for trace in _node_traces(nodes):
        fig.add_trace(trace)
    _frame(fig, len(steps), window, max_rows)
    return fig


STATUSES = ("kept", "finished", "pruned", "candidate")  # candidate: a hidden step's node, its fate not shown yet


def _place_nodes(steps, top_pruned: int, hide_last: bool) -> tuple[dict, dict, dict, int]:
    """Every drawn candidate at x = its step, y = minus its row (best on top), by status: (edges, nodes, at,
    max_rows). edges[status] = (xs, ys) of segments split by None, each from the beam it extended; nodes[status] =
    (xs, ys, texts, hovers); at[(step, parent beam, token)] = (y, child beam) of each kept or finished node, to
    trace the best hypothesis back through them; max_rows: the most nodes one step draws."""
    node_y = {(0, 0): 0.0}  # (step, beam index) -> y of the kept node that is that beam
    edges = {status: ([], []) for status in STATUSES}
    nodes = {status: ([], [], [], []) for status in STATUSES}
    at, max_rows = {}, 1
    for s, step in enumerate(steps, start=1):  # x = step number; the prompt sits at x = 0
        shown = shown_candidates(step, top_pruned)
        max_rows = max(max_rows, len(shown))
        hidden = hide_last and s == len(steps)
        if hidden:  # rows by beam, labels with the token's own log p: the learner adds and ranks
            shown = by_beam(shown)
        for row, c in enumerate(shown):
            y = -float(row)
            status = "candidate" if hidden else c.status
            ex, ey = edges[status]
            ex += [s - 1, s, None]
            ey += [node_y.get((s - 1, c.parent), 0.0), y, None]
            if c.status == "kept":
                node_y[(s, c.child)] = y
            if c.status != "pruned" and not hidden:
                at[(s, c.parent, c.token)] = (y, c.child)
            xs, ys, texts, hovers = nodes[status]
            xs.append(s)
            ys.append(y)
            texts.append(_node_label(c, status, hidden))
            hovers.append(_node_hover(s, c, hidden))
    return edges, nodes, at, max_rows


def _node_label(c, status: str, hidden: bool) -> str:
    """A node's label: its token and cumulative log-prob (a hidden step's: the token's own log p, for the learner to
    add); none on a pruned node."""
    if status == "pruned":
        return ""
    value = f"log p {c.logprob:.2f}" if hidden else f"{c.score:.2f}"
    return f"{label(short(c.text, 11))}<br><span style='font-size:9px;color:#666'>{value}</span>"


def _node_hover(s: int, c, hidden: bool) -> str:
    """A node's hover: step, token, log p, and (unless hidden) the cumulative log p, its fate and its rank."""
    head = f"step {s}: “{label(c.text)}”<br>log p = {c.logprob:.3f}"
    if hidden:
        return head + "<br>kept or pruned? your prediction first"
    return head + f"<br>cumulative = {c.score:.3f}<br>{c.status}" + (f" (rank {c.rank + 1})" if c.rank >= 0 else "")


def _edge_traces(edges: dict) -> list:
    """One line trace per status, pruned first so the kept beams' edges are drawn over them."""
    return [go.Scatter(x=edges[status][0], y=edges[status][1], mode="lines", line=dict(color=color, width=width),
                       hoverinfo="skip", showlegend=False, name=f"edges {status}")
            for status, color, width in (("pruned", "#e0e0e0", 1), ("candidate", "#9e9e9e", 1),
                                         ("finished", FINISHED, 2), ("kept", KEPT, 2))]


def _best_path(best, at: dict) -> go.Scatter:
    """The best finished hypothesis as a line from the prompt through its node at each step (found by the beam it
    extended and its token)."""
    xs, ys, beam = [0], [0.0], 0
    for s, token in enumerate(best.tokens, start=1):
        node = at.get((s, beam, token))
        if node is None:  # a hypothesis from before the steps drawn (never: it was built from them)
            break
        xs.append(s)
        ys.append(node[0])
        beam = node[1]
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="#ffb300", width=7), opacity=0.55,
                      name="best finished path", hoverinfo="skip")


NODE_STYLES = {"kept": (KEPT, "circle", 12), "finished": (FINISHED, "star", 16), "pruned": (PRUNED, "x", 8),
               "candidate": ("#9e9e9e", "circle-open", 12)}  # status -> colour, symbol, size


def _node_traces(nodes: dict) -> list:
    """One marker trace per status (candidate only when a step is hidden), then the prompt at x = 0."""
    traces = []
    for status, (xs, ys, texts, hovers) in nodes.items():
        if not xs and status == "candidate":
            continue
        color, symbol, size = NODE_STYLES[status]
        traces.append(go.Scatter(
            x=xs, y=ys, mode="markers+text" if status != "pruned" else "markers", text=texts,
            textposition="middle right", name=status,
            marker=dict(color=color, symbol=symbol, size=size), hovertext=hovers, hoverinfo="text",
            # a white outline keeps a label readable where other beams' edges cross it
            textfont=dict(color="#222", size=11, shadow="auto"), cliponaxis=False))
    traces.append(go.Scatter(x=[0], y=[0], mode="markers+text", text=["prompt"], textposition="top center",
                             marker=dict(color="#555", size=12), name="prompt", showlegend=False, cliponaxis=False,
                             hovertext=["the prompt (step 0)"], hoverinfo="text"))
    return traces


def _frame(fig: go.Figure, n: int, window: int, max_rows: int) -> None:
    """The layout for n steps: the x range on the last `window` of them (pan for the rest), rows fixed."""
    first = max(0, n - window)
    fig.update_layout(
        height=max(340, 110 + 34 * max_rows), dragmode="pan",
        margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title="step" + (f" (steps {first}–{n} shown; drag left for earlier ones)" if first else ""),
                   dtick=1, range=[first - 0.6, max(n, 3) + 0.95], showgrid=False),
        yaxis=dict(visible=False, range=[-(max_rows - 1) - 0.6, 0.8], fixedrange=True),
        legend=dict(orientation="h", x=1, xanchor="right", y=1.0, yanchor="bottom"), plot_bgcolor="white",
        title=dict(text="Beam search tree", x=0, y=0.98, yanchor="top", font=dict(size=14)))


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


# ---------------------------------------------------------------- the page's sentences, worded from results
def beam_vs_greedy(tokenizer, greedy_ids, greedy_lp, beam_ids, beam_lp, beams: int,
                   length_penalty: float = 1.0) -> str:
    if beams == 1:  # one beam keeps only the best token each step: greedy itself, whatever the prompt
        return ("With B = 1, beam search keeps a single hypothesis, the best token at every step: it *is* greedy "
                "search, so the two match by construction. Raise B to let beam keep tokens that look worse now.")
    if list(greedy_ids) == list(beam_ids):
        return (f"Beam search and greedy chose the same sequence here: keeping {beams} hypotheses found nothing "
                "likelier than greedy's locally best tokens (a wider beam, or another prompt, may).")
    branch = next((i for i, (a, b) in enumerate(zip(greedy_ids, beam_ids)) if a != b),
                  min(len(greedy_ids), len(beam_ids)))
    # the sentence is shown as Markdown: escape the model's text
    shared = md_escape(tokenizer.decode(list(greedy_ids[:branch]))[-40:])
    g_tok = md_escape(tokenizer.decode([greedy_ids[branch]])) if branch < len(greedy_ids) else "(end)"
    b_tok = md_escape(tokenizer.decode([beam_ids[branch]])) if branch < len(beam_ids) else "(end)"
    where = f"after {branch} shared token{'s' if branch != 1 else ''}" + (f" (“{shared}”)" if shared else "")
    if beam_lp > greedy_lp:
        return (f"Beam search found a sequence greedy missed, with higher total log-probability "
                f"({beam_lp:.2f} vs {greedy_lp:.2f}). They branch off {where}: greedy took “{g_tok}”, beam kept "
                f"“{b_tok}”, which looked worse at that step but led somewhere more likely overall.")
    differ = (f"The two differ {where} (greedy “{g_tok}”, beam “{b_tok}”), but greedy's sequence has the higher total "
              f"log-probability ({greedy_lp:.2f} vs {beam_lp:.2f})")
    # two causes, told apart by the scores: the length penalty can only reorder hypotheses of different lengths
    # (and not at all when alpha = 0); otherwise beam never kept greedy's path to the end
    g_len, b_len = max(len(greedy_ids), 1), max(len(beam_ids), 1)
    g_score, b_score = greedy_lp / g_len ** length_penalty, beam_lp / b_len ** length_penalty
    if length_penalty != 0 and g_len != b_len and b_score > g_score:
        return (f"{differ}: beam ranks finished hypotheses by log p / L^α, and with α = {length_penalty:g} its "
                f"{b_len}-token sequence scores {b_score:.3f} against greedy's {g_len} tokens' {g_score:.3f}. "
                "The length penalty chose it, not probability.")
    return (f"{differ}: the length penalty is not why"
            + (" (α = 0: beam compares raw log-probabilities)" if length_penalty == 0 else
               f" (both have {g_len} tokens: dividing by the same L^α cannot reorder them)" if g_len == b_len else
               f" (greedy would score {g_score:.3f} against beam's {b_score:.3f} even after it)")
            + f". Beam pruned greedy's path: at some step greedy's prefix fell out of the {beams} best partial "
            "hypotheses, so beam never finished it. Keeping the B best prefixes is no guarantee of keeping the "
            "best sequence — beam search can return something less likely than greedy.")


def length_penalty_note(hypotheses, penalty: float) -> str | None:
    """When every finished hypothesis has the same length, the penalty divides all scores by the same number
    and cannot reorder them: say so (None when lengths differ, or fewer than two hypotheses)."""
    lengths = {len(h.tokens) for h in hypotheses}
    if len(hypotheses) < 2 or len(lengths) != 1:
        return None
    n = lengths.pop()
    return (f"All {len(hypotheses)} finished hypotheses have the same length ({n} tokens), so score = log p / "
            f"{n}^{penalty:g} divides every one by the same number: the length penalty cannot reorder them here. "
            "It matters when hypotheses end at different lengths — try a prompt with a short answer (e.g. the "
            "curated “What is 2+2?”) and move the slider.")
