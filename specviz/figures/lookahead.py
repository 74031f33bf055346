"""Lookahead decoding figures: the 2-D Jacobi window and its new level, the verification branch's candidates,
the step's attention mask with position ids, plain Jacobi's guesses vs outputs, and the pool growing.
Pure functions: trace events (specviz/trace.py LookaheadStep / JacobiStep) in, a Plotly figure out."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from specviz.figures import ACCEPTED, BONUS, REJECTED, label, label_plain, md_escape

LEVEL, NEW_LEVEL, KNOWN, NOT_REACHED = "#90caf9", "#1565c0", "#7986cb", "#e0e0e0"


def grid(rows: list[list[str]], colors: list[list[str]], names: list[str], hover: list[list[str]], title: str,
         height_per_row: int = 46, min_columns: int = 1) -> go.Figure:
    """A table of token cells as rectangles with their text: one shape per cell, text as annotations (a
    Heatmap cannot colour cells by category and keep the text readable)."""
    fig = go.Figure()
    n = len(rows)
    width = max([len(r) for r in rows] + [min_columns])
    for r, (row, cols, tips) in enumerate(zip(rows, colors, hover)):
        y = n - 1 - r
        for c, (text, color, tip) in enumerate(zip(row, cols, tips)):
            fig.add_shape(type="rect", x0=c + 0.04, x1=c + 0.96, y0=y + 0.08, y1=y + 0.92, fillcolor=color,
                          line=dict(width=0), layer="below")
            raw = html.unescape(text)  # cut the text, not an HTML entity; the full text is in the hover
            short = text if len(raw) <= 9 else html.escape(raw[:8], quote=False) + "…"
            fig.add_annotation(x=c + 0.5, y=y + 0.5, text=short, showarrow=False,
                               font=dict(color="white" if color in (NEW_LEVEL, ACCEPTED, REJECTED, BONUS) else "#222"))
        # invisible points carry the hover text (shapes have none)
        fig.add_trace(go.Scatter(x=[c + 0.5 for c in range(len(row))], y=[y + 0.5] * len(row), mode="markers",
                                 marker=dict(size=30, opacity=0), hovertext=tips, hoverinfo="text", showlegend=False))
    # room for "column"
    fig.update_layout(title=title, height=90 + height_per_row * n, margin=dict(l=10, r=10, t=40, b=30),
                      xaxis=dict(range=[0, width], showgrid=False, zeroline=False,
                                 tickvals=[c + 0.5 for c in range(width)],
                                 ticktext=[str(c) for c in range(width)], title="column"),
                      yaxis=dict(range=[0, n], showgrid=False, zeroline=False,
                                 tickvals=[n - 1 - r + 0.5 for r in range(n)],
                                 ticktext=names), plot_bgcolor="white")
    return fig


def window_figure(step) -> go.Figure:
    """The 2-D window fed this step (oldest level at the top) and, below it, the target's outputs: the next
    level. Each column read top to bottom is one n-gram (once the window is full)."""
    t = step.texts
    rows = [[label(t[x]) for x in level] for level in step.levels] + [[label(t[x]) for x in step.outputs]]
    names = [f"level {l}" for l in range(len(step.levels))] + ["outputs → next level"]
    full = bool(step.new_ngrams)
    # the outputs row: dark where its column's n-gram is new to the pool, muted where the pool had it already
    colors = [[LEVEL] * len(level) for level in step.levels] + [
        [NEW_LEVEL if not full or step.fresh[i] else KNOWN for i in range(len(step.outputs))]]
    hover = [[f"level {l}, column {i}: {label(t[x])!s}<br>position id context + {i + l}"
              for i, x in enumerate(level)] for l, level in enumerate(step.levels)]
    hover.append([f"the target's argmax after column {i}: {label(t[x])}"
                  + (f"<br>n-gram: {' '.join(label(t[y]) for y in step.new_ngrams[i])}"
                     + (" (new to the pool)" if step.fresh[i] else " (already in the pool)") if full else "")
                  for i, x in enumerate(step.outputs)])
    return grid(rows, colors, names, hover, "lookahead window · "
                + (f"{len(step.new_ngrams)} n-gram{'s' if len(step.new_ngrams) != 1 else ''} down the columns, "
                   f"{step.added} new (dark)" if full
                   else f"filling: {len(step.levels)} level{'s' if len(step.levels) > 1 else ''}, no n-grams yet"))


def candidates_figure(step) -> go.Figure:
    """The verification branch: each pool n-gram that starts with the root, cell green where the target agreed
    (the accepted candidate's), red at its first disagreement, grey after it; the emitted tokens last."""
    t = step.texts
    rows, colors, hover, names = [], [], [], []
    for g, (cand, m) in enumerate(zip(step.candidates, step.matched)):
        rows.append([label(t[x]) for x in cand])
        colors.append([ACCEPTED if j < m else REJECTED if j == m else NOT_REACHED for j in range(len(cand))])
        hover.append([("agreed" if j < m else "first disagreement" if j == m else "not reached") + f": {label(t[x])}"
                      for j, x in enumerate(cand)])
        names.append(("✔ " if g == step.best else "") + f"candidate {g}")
    rows.append([label(t[x]) for x in step.emitted])
    colors.append([ACCEPTED] * (len(step.emitted) - 1) + [BONUS])
    hover.append([f"emitted: {label(t[x])}" for x in step.emitted])
    names.append("emitted")
    title = (f"verification · {len(step.candidates)} candidate{'s' if len(step.candidates) > 1 else ''} "
             f"after “{label(t[step.root])}”"
             if step.candidates else f"verification · no n-gram after “{label(t[step.root])}” yet")
    return grid(rows, colors, names, hover, title, min_columns=4)


def mask_figure(step) -> go.Figure:
    """Who attends to whom in the step's ONE forward (root, window, candidates; all also see the context),
    with each row's position id: a window cell sits i + l after the root, a candidate token j + 1."""
    n = len(step.allowed)
    w = len(step.levels[0]) if step.levels else 0
    kinds = ["root"] + [f"L{l}c{i}" for l in range(len(step.levels)) for i in range(w)]
    kinds += [f"g{g}t{j}" for g, c in enumerate(step.candidates) for j in range(len(c))]
    names = [f"{k} (pos {p})" for k, p in zip(kinds, step.position_ids)]
    fig = go.Figure(go.Heatmap(z=[[int(v) for v in row] for row in step.allowed], x=names, y=names, showscale=False,
                               colorscale=[[0, "#f4f4f4"], [1, "#1565c0"]], xgap=1, ygap=1,
                               hovertemplate="%{y} sees %{x}: %{z}<extra></extra>"))
    fig.update_layout(title="attention mask of the one forward (rows attend to columns; all see the context)",
                      yaxis=dict(autorange="reversed"), height=max(300, 14 * n + 120),
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


def jacobi_figure(step) -> go.Figure:
    """Plain Jacobi: the guesses and what the target outputs after each; converged guesses (equal to the
    output before them) are exact and emitted with the next output."""
    t = step.texts
    w = len(step.guesses)
    rows = [[label(t[x]) for x in step.guesses], [label(t[x]) for x in step.outputs[:w]]]
    colors = [[ACCEPTED if i < step.converged else REJECTED if i == step.converged else NOT_REACHED for i in range(w)],
              [ACCEPTED if i < step.converged else BONUS if i == step.converged else LEVEL for i in range(w)]]
    hover = [[f"guess {i}: {label(t[x])}" for i, x in enumerate(step.guesses)],
             [f"argmax after guesses 0..{i - 1}: {label(t[x])}" for i, x in enumerate(step.outputs[:w])]]
    return grid(rows, colors, ["guesses", "outputs"], hover,
                f"plain Jacobi: {step.converged} guess{'es' if step.converged != 1 else ''} converged → "
                f"{len(step.emitted)} token{'s' if len(step.emitted) != 1 else ''} this pass")


def progress_figure(lookahead: list, jacobi: list) -> go.Figure:
    """Tokens emitted per target pass, step by step, for lookahead and plain Jacobi, with the pool's size."""
    fig = go.Figure()
    fig.add_trace(go.Bar(x=[s.step + 1 for s in lookahead], y=[len(s.emitted) for s in lookahead],
                         name="lookahead: tokens this pass", marker_color=NEW_LEVEL))
    fig.add_trace(go.Bar(x=[s.step + 1 for s in jacobi], y=[len(s.emitted) for s in jacobi],
                         name="plain Jacobi: tokens this pass", marker_color="#9e9e9e"))
    fig.add_trace(go.Scatter(x=[s.step + 1 for s in lookahead], y=[s.pool_size for s in lookahead], yaxis="y2",
                             name="n-grams in the pool", mode="lines+markers", line=dict(color=ACCEPTED)))
    fig.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=40, b=10),
                      title="tokens per target pass: the pool is what makes lookahead gain",
                      xaxis=dict(title="target pass", tickmode="linear", tick0=1, dtick=max(1, len(lookahead) // 12)),
                      yaxis=dict(title="tokens", dtick=1, rangemode="tozero"),
                      # its own ticks (whole n-gram counts), not ticks synced to the left axis's grid
                      yaxis2=dict(title="pool", overlaying="y", side="right", rangemode="tozero", showgrid=False,
                                  tickmode="auto"),
                      legend=dict(orientation="h", y=-0.3))
    return fig


# ---------------------------------------------------------------- the page's sentences (shared with the offline lesson)
JACOBI_CAPTION = ("Plain Jacobi iteration (no pool) on the same prompt: every guess is replaced by the target's output "
                  "after the guesses before it. A guess is exact only when every guess before it was, so it converges "
                  "to greedy's output but seldom gains more than one token per pass: the reason lookahead keeps the "
                  "n-grams the iteration produces.")
MASK_CAPTION = ("Window cell (level l, column i) continues level 0's columns 0..i "
                "and its own column's lower levels, at "
                "position id t + 1 + i + l; candidate token j sits at t + 1 + j and sees its own earlier tokens. "
                "Nothing sees across branches, so one pass does both jobs.")
CPU_CAPTION = ("On this 2-core CPU a forward over ~30 positions costs several times one over 1 position, so lookahead "
               "usually LOSES wall-clock time here even when it gains tokens per pass (see the benchmark in the "
               "README); on a GPU a decode forward is memory-bound and extra positions are nearly free, which is "
               "where lookahead pays.")


def _n(count: int, word: str) -> str:  # "1 token", "2 tokens"
    return f"{count} {word}{'s' if count != 1 else ''}"


def heading(step, at_end: bool) -> str:
    """The line over a target pass (Markdown): what verification found, the tokens it gave, the pool."""
    texts = step.texts
    how = (f"candidate {step.best} matched {_n(step.matched[step.best], 'token')}" if step.best >= 0
           else "no candidate matched" if step.candidates else
           "nothing to verify yet: the pool is still empty" if step.pool_size == step.added else
           f"nothing to verify: no n-gram in the pool starts with the last token "
           f"“{md_escape(label_plain(texts.get(step.root, '?')))}”")
    return (f"**Target pass {step.step + 1}** · {how} → {_n(len(step.emitted), 'token')}: "
            + " ".join(f"“{md_escape(label_plain(texts[x]))}”" for x in step.emitted)
            + f" · pool {_n(step.pool_size, 'n-gram')}" + (" · done" if at_end else ""))


def cache_caption(step) -> str:
    kept = ("context + the accepted candidate's tokens" if step.best >= 0 else
            "context only: no candidate matched, so the pass's one token is fed next pass")
    filled, dropped = (("context + window + candidates", "The window's and the rejected candidates' entries are")
                       if step.candidates else ("context + window", "The window's entries are"))
    return (f"Target KV cache: {step.target_cache.before} entries after the pass ({filled}) → "
            f"{step.target_cache.after} kept ({kept}). {dropped} dropped: they were computed under the mask, not as "
            "part of the output.")


def metrics(done: list, jacobi_done: list) -> list[tuple[str, str, str | None]]:
    """(label, value, help) of the page's metric row after the passes `done` (and plain Jacobi's after as many)."""
    tokens = sum(len(s.emitted) for s in done)
    jac_tokens = sum(len(s.emitted) for s in jacobi_done)
    return [("Target passes", str(len(done)), None),
            ("Tokens (lookahead)", str(tokens), "emitted after this many target passes"),
            ("Tokens per pass (lookahead)", f"{tokens / len(done):.2f}", None),
            ("Tokens per pass (plain Jacobi)", f"{jac_tokens / len(jacobi_done):.2f}" if jacobi_done else "—", None)]
