"""One speculative cycle, drawn in the order it happens: draft proposals (q), the target's single
verify pass, the per-token accept test (u against min(1, p/q)), the residual or bonus, the KV caches. Under block
verification (Sun et al., ICLR 2025) the test is each draft's uniform against its block weight h_i, and block_decision
draws what the joint rule kept that the token-wise one would not."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from specviz.figures import (ACCEPTED, BONUS, CORRECTION, P_COLOR, Q_COLOR, REJECTED, RESAMPLED, build, grid, label,
                             label_plain, md_escape, ref, short_label, token_labels)
from specviz.verify import accept_probability

ORIGIN_COLORS = {"accepted": ACCEPTED, "resampled": RESAMPLED, "bonus": BONUS, "correction": CORRECTION,
                 "target": "#607d8b", "prompt": "#9e9e9e"}
# the chips' second cue beside colour (a colour-blind learner): each origin underlined in its own line style
ORIGIN_LINES = {"accepted": "solid", "resampled": "dotted", "bonus": "double", "correction": "dashed",
                "target": "solid", "prompt": "solid"}


PER_ROW = 8  # subplots per row: K = 16 wraps onto two rows instead of squeezing titles into one line
MASS = 1e-4  # a token with less probability than this is not drawn as a bar (one-hot q: only the proposal)


def _grid(n: int) -> tuple[int, int]:
    cols = max(1, min(n, PER_ROW))
    return (n + cols - 1) // cols, cols


def _cell(i: int, cols: int) -> tuple[int, int]:
    return i // cols + 1, i % cols + 1


def _fixed(layout: dict, **margin) -> dict:
    """Margins given here instead of grown by Plotly's automargin (the template's default), which lays a chart
    out again after its first draw: measured ~40 ms more per Step on the Speculative page in headless Chromium.
    Every axis of the layout is set to automargin=False; `margin` (l, r, t, b in px) leaves room for the
    tick labels and titles."""
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            axis["automargin"] = False
    layout["margin"] = dict(layout.get("margin", {}), **margin)
    return layout


def _small(x: float, digits: int = 3) -> str:
    """A probability as a label: `digits` decimals, and a smaller one with two significant digits (0.0043, 3e-05)
    instead of a misleading 0.00 (min(1, p/q) is a ratio: two tiny values are still worth reading)."""
    return f"{x:.{digits}f}" if x >= 10 ** -digits or x == 0 else f"{x:.2g}"


def _fit(top: float) -> list[float]:
    """A probability axis that fits its bars (room above for the value labels), never past 1.15."""
    return [0, min(1.15, max(top, 0.02) * 1.3)]


DRAFT_TITLE = "1 · The draft proposes"
DRAFT_CAPTION = "bars: q, the draft's probabilities at each position; the proposed token dark"


def draft_rows(k: int, most: int = 4) -> list[range]:
    """The draft positions' charts in rows of at most `most`, balanced (K = 6: 3 + 3; K = 13: 4 + 3 + 3 + 3): a
    Streamlit chart is at least 150 px wide, so more per row would be cut off in the page's columns. The page
    gives every row as many columns as the first, so all charts are the same width."""
    rows = -(-k // most)
    if not rows:
        return []
    size, extra = divmod(k, rows)
    starts = [r * size + min(r, extra) for r in range(rows + 1)]
    return [range(starts[r], starts[r + 1]) for r in range(rows)]


def draft_proposal(cycle, i: int) -> go.Figure:
    """q's top candidates at draft position i (only tokens with mass), the proposed token dark, each bar
    labelled with its value, on an axis that fits them. One chart per position, side by side in the page
    (draft_rows): a Step adds one small chart and leaves the ones drawn before as they are (the browser
    redraws only a chart that changed; one chart of K subplots was redrawn whole at every draft Step)."""
    d = cycle.drafts[i]
    top = [t for t in d.q_top if t.prob >= MASS or t.id == d.token]
    size = 11
    data = [dict(type="bar", x=token_labels(t.text for t in top), y=[t.prob for t in top], name=f"q (draft {i + 1})",
                 marker=dict(color=[Q_COLOR if t.id == d.token else "#ffcc80" for t in top]), showlegend=False,
                 text=[_small(t.prob, 2) for t in top], textposition="outside", cliponaxis=False,
                 textfont=dict(size=size),
                 hovertemplate="%{x}: q = %{y:.4f}<extra>draft " + str(i + 1) + "</extra>")]
    layout = dict(height=250, showlegend=False, bargap=0.2,
                  title=dict(text=f"{i + 1}: " + short_label(d.text, 15), x=0.5, xanchor="center",
                             font=dict(size=13, weight=400)),  # the hover has it whole
                  yaxis=dict(range=_fit(max(t.prob for t in top)), tickfont=dict(size=size)),
                  xaxis=dict(type="category", tickfont=dict(size=size)))  # "0" is a token, not a number
    return build(data, _fixed(layout, l=38, r=30, t=30, b=60))  # l: ticks like 0.005; b, r: token labels turned 30-90°


def _title_size(layout: dict, size: int) -> None:
    """Every subplot title (a grid's annotations) at this font size."""
    for a in layout.get("annotations", []):
        a.setdefault("font", {})["size"] = size


def verify_pass(cycle, marks: bool = True) -> go.Figure:
    """The target's ONE forward pass over k + 1 positions, and what it computes at each: its own most likely
    token there and p(draft token). A draft token the target itself ranks first passes greedy verification;
    under rejection sampling it is kept with probability min(1, p/q). marks=False: no verdict on the chart (no
    green/red, ✓/✗ or fading) while a learner predicts the verdicts from it."""
    k = cycle.k
    if len(cycle.target_top) != k + 1:  # a trace recorded before the engine kept these: blocks only
        data, layout = _pass_blocks(cycle)
    else:
        data, layout = _pass_bars(cycle, marks)
    layout.update(bargap=0.25,
                  title=dict(text=f"2 · ONE target forward pass over the {k} draft{'s' if k != 1 else ''} + 1: at each "
                                  f"position, the target's top choice and p(draft token)" if k else
                             "2 · Nothing drafted: the target decodes one token, as plain decoding would", x=0,
                             font=dict(size=14)))
    return build(data, _fixed(layout, l=55, r=10, t=60, b=75 if k > 8 else 50))


def _pass_blocks(cycle) -> tuple[list, dict]:
    """The pass of a trace that kept no target_top: one block per position, scored together, no values."""
    k = cycle.k
    xs = list(range(k + 1))
    names = [f"pos {i + 1}<br>{label(d.text)}" for i, d in enumerate(cycle.drafts)] + [f"pos {k + 1}<br>(next)"]
    data = [dict(type="bar", x=xs, y=[1] * (k + 1), text=names, textposition="inside", marker=dict(color=P_COLOR),
                 hovertemplate="scored in the same forward pass<extra></extra>", name="target pass")]
    layout = dict(height=140, yaxis=dict(visible=False), xaxis=dict(visible=False), showlegend=False)
    return data, layout


def _pass_bars(cycle, marks: bool) -> tuple[list, dict]:
    """At each position of the pass two bars: p of the target's own top choice, and p(draft token) (none at the
    bonus slot), marked with the verdict unless `marks` is False."""
    k = cycle.k
    dense = k > 8  # many positions: the draft token goes under the axis, values on hover only
    draft_text = [label(d.text) for d in cycle.drafts] + ["(none: bonus slot)"]
    xs = [f"{i + 1}<br>{short_label(d.text, 8)}" if dense else f"{i + 1}"
          for i, d in enumerate(cycle.drafts)] + [f"{k + 1}"]
    top_text = [label(t.text) for t in cycle.target_top]
    ruled = len(cycle.verdicts) if marks else k  # positions past the first rejection: computed, discarded
    colors, patterns, p_text = _draft_marks(cycle, draft_text, marks)
    data = [dict(
        type="bar", x=xs, y=[t.prob for t in cycle.target_top], name="target's top choice: p(top)",
        marker=dict(color="#90caf9"),
        text=[short_label(pt.text, 8) if dense else f"{t}<br>{_small(pt.prob, 2)}"
              for t, pt in zip(top_text, cycle.target_top)],
        textposition="outside", textfont=dict(size=9 if dense else 11),
        cliponaxis=False, customdata=top_text,
        hovertemplate="position %{x}: the target's top choice %{customdata}, p = %{y:.4f}<extra></extra>"), dict(
        type="bar", x=xs[:k], y=list(cycle.p_draft), name="p(draft token)",
        marker=dict(color=colors, opacity=[1 if i < ruled else 0.35 for i in range(k)],
                    pattern=dict(shape=patterns)),
        textposition="outside", cliponaxis=False, customdata=draft_text[:k],
        hovertemplate="position %{x}: p(draft %{customdata}) = %{y:.4f}<extra></extra>",
        **({} if dense else dict(text=p_text)))]
    layout = dict(
        height=300, barmode="group", bargap=0.25,
        yaxis=dict(range=[0, 1.3], title=dict(text="p (target)"), tickvals=[0, 0.5, 1]),
        xaxis=dict(title=dict(text=_pass_axis_title(cycle, marks)), type="category"),
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return data, layout


def _draft_marks(cycle, draft_text: list[str], marks: bool) -> tuple[list, list, list]:
    """The p(draft token) bars' colours, hatch patterns and labels. Greedy with marks: green ✓ where the draft is
    the target's top choice, red ✗ hatched where it is not; otherwise one colour, and under sampling p and q in the
    label (the learner computes min(1, p/q) from them)."""
    k = cycle.k
    agree = [d.token == cycle.target_top[i].id for i, d in enumerate(cycle.drafts)]
    greedy = cycle.verify_mode == "greedy"
    # a second cue beside red/green, for a colour-blind learner: ✓/✗ on the bar and a hatch on a mismatch
    patterns = [""] * k
    if greedy and not marks:
        colors = [P_COLOR] * k
        p_text = [f"{t}<br>{_small(p, 2)}" for t, p in zip(draft_text, cycle.p_draft)]
    elif greedy:
        colors = [ACCEPTED if a else REJECTED for a in agree]
        patterns = ["" if a else "x" for a in agree]
        p_text = [f"{'✓' if a else '✗'} {t}<br>{_small(p, 2)}" for t, p, a in zip(draft_text, cycle.p_draft, agree)]
    else:
        colors = [P_COLOR] * k
        # three significant digits: the learner computes min(1, p/q) from these (0.01 / 0.03 read as 1/3)
        p_text = [f"{t}<br>p {p:.3g} · q {d.q:.3g}" for t, p, d in zip(draft_text, cycle.p_draft, cycle.drafts)]
    return colors, patterns, p_text


def _pass_axis_title(cycle, marks: bool) -> str:
    """What the pass's x axis tells the learner to read from it, by verification rule."""
    greedy = cycle.verify_mode == "greedy"
    if greedy and not marks:
        return "position in this pass: compare each draft token with the target's top choice (your prediction first)"
    if greedy:
        return ("position in this pass (green ✓: draft = target's top choice, red ✗ hatched: it is not; "
                "faded: after the first mismatch, computed but discarded)")
    if is_block(cycle):
        return "position in this pass (block verification judges all the drafts together: see 3)"
    return ("position in this pass (the draft token is kept with probability min(1, p/q); faded: "
            "after the first rejection, computed but discarded)")


def verdicts(cycle) -> go.Figure:
    """Per drafted token up to the first rejection: p and q for it and its top alternatives (only tokens with
    mass, values on the bars), and in rejection sampling the accept test u against min(1, p/q). Block verification
    rules on every draft: its uniform η against its block weight h, and ✓ for the drafts kept (block_decision says
    why a draft can be kept although its own test failed)."""
    vs = cycle.verdicts
    greedy = cycle.verify_mode == "greedy"
    block = is_block(cycle)
    rows, cols = _grid(max(len(vs), 1))
    layout, cells = _verdict_grid([_verdict_title(v, greedy, block) for v in vs], rows, cols, greedy)
    data = []
    small = cols > 4
    for i, v in enumerate(vs):
        r, c = _cell(i, cols)
        x, y = cells[(r if greedy else 2 * r - 1) - 1][c - 1]
        xs, py, qy = _p_and_q(v)
        for name, ys, color, group in (("p (target)", py, P_COLOR, "p"), ("q (draft)", qy, Q_COLOR, "q")):
            data.append(dict(type="bar", x=xs, y=ys, name=name, marker=dict(color=color), showlegend=i == 0,
                             legendgroup=group, text=[f"{y:.2f}" if y >= 0.005 else "" for y in ys],
                             textposition="outside", cliponaxis=False, textfont=dict(size=8 if small else 10),
                             hovertemplate="%{x}: " + name.split()[0] + " = %{y:.4f}<extra></extra>", **ref((x, y))))
        layout[y].update(range=_fit(max(py + qy)), showticklabels=c == 1)
        layout[x].update(tickfont=dict(size=8 if small else 10), type="category")
        if not greedy:
            test = cells[2 * r - 1][c - 1]
            data += _accept_test(v, i == 0, test, block)
            layout[test[0]].update(range=[0, 1], tickvals=[0, 0.5, 1], tickfont=dict(size=9))
    _title_size(layout, 10 if small else 12)
    rule = ("accept while the draft token is the target's top choice (▶: the draft token)" if greedy else
            "block verification keeps drafts 1..τ, τ = the last i with η ≤ h (▶: the draft token)" if block else
            "accept if u < min(1, p/q) (▶: the draft token)")
    height = (300 if greedy else 360) * rows + 30
    layout.update(height=height, barmode="group",  # t = 95: the legend 24 px above the subplot titles
                  legend=dict(orientation="h", y=1 + 24 / (height - 105), x=1, xanchor="right", yanchor="bottom"),
                  title=dict(text=f"3 · Verify each draft token in order: {rule}", x=0, font=dict(size=14)))
    return build(data, _fixed(layout, l=40, r=10, t=95, b=60))


def _odds(x: float) -> str:
    """A probability in a title: two decimals, or two significant digits below 0.01 (a test that failed at
    "0.00 > 0.00" reads as nonsense; 2.1e-05 > 3.4e-06 does not)."""
    return "0" if x == 0 else f"{x:.2f}" if x >= 0.01 else f"{x:.1e}"


def _verdict_title(v, greedy: bool, block: bool) -> str:
    """A verdict's subplot title: the token and its verdict, and under sampling the test that decided it."""
    if greedy:
        return short_label(v.text, 12) + f" {'✓' if v.accepted else '✗'}"
    if block:  # the test passes at η <= h (verify_block); kept is decided by the last passing position
        passed = v.u <= v.accept_prob  # a failed test can still be kept: rescued by a later passing draft
        return (short_label(v.text, 10) + f" η={_odds(v.u)}{'≤' if passed else '>'}h={_odds(v.accept_prob)} "
                + ("✓" if v.accepted and passed else "✓ rescued" if v.accepted else "✗"))
    return (short_label(v.text, 10) + f" u={_odds(v.u)}{'<' if v.accepted else '≥'}{_odds(v.accept_prob)}"
            f" {'✓' if v.accepted else '✗'}")


def _verdict_grid(titles: list[str], rows: int, cols: int, greedy: bool) -> tuple[dict, tuple]:
    """The verdicts' grid: `cols` p/q charts a row and, under sampling, under each row a thin row for the accept
    tests (untitled)."""
    cell_titles = [t for r in range(rows) for t in
                   (titles[r * cols:(r + 1) * cols] + [""] * (cols - len(titles[r * cols:(r + 1) * cols]))
                    + ([] if greedy else [""] * cols))] if titles else ["nothing drafted"]
    return grid(rows if greedy else 2 * rows, cols, cell_titles,
                row_heights=[1] * rows if greedy else [0.75, 0.25] * rows,
                vertical_spacing=(0.3 if rows > 1 else 0.12) / (1 if greedy else 2),
                horizontal_spacing=0.02 if cols > 4 else 0.05)


def _p_and_q(v) -> tuple[list[str], list[float], list[float]]:
    """The tokens a verdict's chart shows, the target's top ones then the draft's (only those with mass, and the
    draft token, marked ▶), with p and q for each (0 where a top list lacks it): (labels, p, q)."""
    pmap = {t.id: t for t in v.p_top if t.prob >= MASS or t.id == v.token}
    qmap = {t.id: t for t in v.q_top if t.prob >= MASS or t.id == v.token}
    ids = list(pmap) + [t for t in qmap if t not in pmap]
    text = {t.id: t.text for t in list(v.p_top) + list(v.q_top)}
    xs = token_labels([text[t] for t in ids], [t == v.token for t in ids])
    return xs, [pmap[t].prob if t in pmap else 0.0 for t in ids], [qmap[t].prob if t in qmap else 0.0 for t in ids]


def _accept_test(v, legend: bool, cell: tuple, block: bool) -> list[dict]:
    """A verdict's accept test in its thin cell: the bar up to min(1, p/q) (block: up to h), green kept or red
    hatched, and the uniform drawn as a tick on it."""
    test_name, draw_name = ("h (block weight)", "η") if block else ("min(1, p/q)", "u")
    return [dict(type="bar", x=[v.accept_prob], y=[""], orientation="h",
                 marker=dict(color=ACCEPTED if v.accepted else REJECTED, pattern=dict(shape="" if v.accepted else "x")),
                 opacity=0.5, name=test_name, showlegend=legend, legendgroup="a",
                 hovertemplate=("block weight h" if block else "accept probability min(1, p/q)")
                 + " = %{x:.3f}<extra></extra>", **ref(cell)),
            dict(type="scatter", x=[v.u], y=[""], mode="markers",
                 marker=dict(symbol="line-ns-open", size=22, color="black", line=dict(width=3)),
                 name=draw_name, showlegend=legend, legendgroup="u",
                 hovertemplate=draw_name + " = %{x:.3f}<extra></extra>", **ref(cell))]


def resolution(cycle) -> go.Figure | None:
    """The residual normalize(max(0, p - q)) and the token drawn from it, after a rejection in rejection
    sampling. A bonus, correction or lone target token is one token: resolution_text says it in a line and
    this returns None."""
    if cycle.new_origin != "resampled":
        return None
    r = [t for t in cycle.residual_top if t.prob >= MASS or t.id == cycle.new_token]
    data = [dict(type="bar", x=token_labels([t.text for t in r], [t.id == cycle.new_token for t in r]),
                 y=[t.prob for t in r],
                 marker=dict(color=[RESAMPLED if t.id == cycle.new_token else "#ce93d8" for t in r]),
                 text=[_small(t.prob) for t in r], textposition="outside", cliponaxis=False,
                 name="residual", hovertemplate="%{x}: residual = %{y:.4f}<extra></extra>")]
    title = ("4 · Rejected: resample from the residual normalize(max(0, p − q)) (▶: the token drawn)"
             if not is_block(cycle) else
             f"4 · Block kept {cycle.accepted}: draw from normalize(max(0, p_τ·p − q)) at position "
             f"{cycle.accepted + 1}, p_τ = {cycle.block_ratio[cycle.accepted - 1] if cycle.accepted else 1.0:.3f} "
             "(▶: the token drawn)")
    if cycle.residual_fallback:
        title += " (all zero: p = q, drew from p)"
    return build(data, _fixed(dict(height=300, yaxis=dict(range=_fit(max(t.prob for t in r))),
                                   xaxis=dict(type="category"),
                                   title=dict(text=title, x=0, font=dict(size=14)), showlegend=False),
                              l=40, r=10, t=40, b=60))


def is_block(cycle) -> bool:
    """Judged by block verification (a sampling cycle recorded with its block weights)."""
    return getattr(cycle, "acceptance", "token") == "block" and bool(getattr(cycle, "block_weight", ()))


def block_outcomes(cycle) -> list[str]:
    """Per draft: what block verification did beside what token-wise verification would have done with the same
    uniforms: "kept" (both keep it), "rescued" (block keeps it, token-wise would have stopped before or at it),
    "token-wise only" (token-wise would keep it, block does not) or "dropped" (neither)."""
    tw = cycle.tokenwise_kept if cycle.tokenwise_kept is not None else 0
    return [("kept" if i < tw else "rescued") if i < cycle.accepted else ("token-wise only" if i < tw else "dropped")
            for i in range(len(cycle.verdicts))]


BLOCK_COLOR, TOKENWISE_COLOR = "#00897b", "#90a4ae"
OUTCOME_MARK = {"kept": "✓ kept", "rescued": "✓ rescued", "token-wise only": "✗ (token-wise ✓)", "dropped": "✗"}


def block_decision(cycle) -> go.Figure:
    """Block verification's decision on this cycle's drafts, beside token-wise verification's. Top: at each draft
    position the token-wise test min(1, p/q), the block weight h_i and the clipped running ratio p_i (block_weights),
    and the uniform η_i drawn there: token-wise keeps drafts while η_i < min(1, p/q); block keeps drafts 1..τ, τ the
    last position with η_i ≤ h_i, so a draft whose own test failed is kept when a later one passes. Bottom: how
    likely each draft was to be kept given these drafts (over the draws), under each rule. The x labels say what
    happened: kept by both, rescued by block, kept by token-wise only, or dropped."""
    vs, k = cycle.verdicts, cycle.k  # every draft is ruled on; fewer only after an accepted end-of-sequence
    n = len(vs)
    outcome = block_outcomes(cycle)
    xs = [f"{i + 1}: {short_label(v.text, 10)}<br>{OUTCOME_MARK[o]}" for i, (v, o) in enumerate(zip(vs, outcome))]
    names = [label(v.text) for v in vs]
    layout, cells = grid(2, 1, ["the draws: token-wise keeps while η < min(1, p/q) · block keeps 1..τ, τ = the last "
                                "η ≤ h", "P(draft kept | these drafts), over the draws"],
                         row_heights=[0.6, 0.4], vertical_spacing=0.16)
    top, bottom = cells[0][0], cells[1][0]
    accept = [accept_probability(v.p, v.q) if v.q > 0 else 0.0 for v in vs]
    data = [
        dict(type="bar", x=xs, y=accept, name="token-wise test min(1, p/q)", marker=dict(color=TOKENWISE_COLOR),
             customdata=names, hovertemplate="%{customdata}: min(1, p/q) = %{y:.3f}<extra></extra>", **ref(top)),
        dict(type="bar", x=xs, y=list(cycle.block_weight[:n]), name="block weight h", marker=dict(color=BLOCK_COLOR),
             customdata=names, hovertemplate="%{customdata}: h = %{y:.3f}<extra></extra>", **ref(top)),
        dict(type="scatter", x=xs, y=list(cycle.block_ratio[:n]), mode="lines+markers", name="running ratio p_i",
             line=dict(color=BLOCK_COLOR, dash="dot"), marker=dict(size=7), customdata=names,
             hovertemplate="%{customdata}: p_i = min(1, p_(i−1)·p/q) = %{y:.3f}<extra></extra>", **ref(top)),
        dict(type="scatter", x=xs, y=[v.u for v in vs], mode="markers", name="η (the uniform drawn)",
             marker=dict(symbol="line-ew-open", size=34, color="black", line=dict(width=3)), customdata=names,
             hovertemplate="%{customdata}: η = %{y:.3f}<extra></extra>", **ref(top)),
        dict(type="bar", x=xs, y=list(cycle.kept_token[:n]), name="P(kept), token-wise", showlegend=False,
             marker=dict(color=TOKENWISE_COLOR), text=[_small(x, 2) for x in cycle.kept_token[:n]],
             textposition="outside", cliponaxis=False,
             hovertemplate="token-wise: P(kept) = %{y:.3f}<extra></extra>", **ref(bottom)),
        dict(type="bar", x=xs, y=list(cycle.kept_block[:n]), name="P(kept), block", showlegend=False,
             marker=dict(color=BLOCK_COLOR), text=[_small(x, 2) for x in cycle.kept_block[:n]], textposition="outside",
             cliponaxis=False, hovertemplate="block: P(kept) = %{y:.3f}<extra></extra>", **ref(bottom))]
    for axis in (top, bottom):
        layout[axis[0]].update(type="category", tickfont=dict(size=10))
        layout[axis[1]].update(range=[0, 1.15], tickvals=[0, 0.5, 1])
    layout[top[0]].update(showticklabels=False)
    _title_size(layout, 12)
    tw = cycle.tokenwise_kept if cycle.tokenwise_kept is not None else 0
    rescued = [i + 1 for i, o in enumerate(outcome) if o == "rescued"]
    title = (f"3b · Block verification kept {cycle.accepted} of {k}; token-wise, with the same draws, would keep {tw}"
             + (f": draft{'s' if len(rescued) > 1 else ''} {', '.join(map(str, rescued))} rescued" if rescued else "")
             + f" · expected {sum(cycle.kept_block):.2f} vs {sum(cycle.kept_token):.2f} given these drafts")
    layout.update(height=470, barmode="group", bargap=0.3,
                  legend=dict(orientation="h", y=1.06, x=1, xanchor="right", yanchor="bottom"),
                  title=dict(text=title, x=0, font=dict(size=14)))
    return build(data, _fixed(layout, l=40, r=10, t=95, b=60))


def resolution_text(cycle) -> str:
    """Stage 4 in one line (Markdown, token text escaped)."""
    tok = md_escape(label_plain(cycle.new_text))
    p = f" (p = {cycle.new_p:.2f})" if cycle.new_p is not None else ""
    k = cycle.k
    return {
        "bonus": f"**4 · All {k} draft{'s' if k != 1 else ''} accepted:** the bonus token “{tok}”{p} comes free from "
                 "the target's last position in the same pass.",
        "correction": f"**4 · Mismatch at draft {cycle.accepted + 1}:** the target's own top choice “{tok}”{p} "
                      "replaces the draft token (greedy correction); the drafts after it are discarded.",
        "target": f"**4 · Nothing was drafted:** the target's own next token “{tok}”{p}.",
        "resampled": f"**4 · Rejected at draft {cycle.accepted + 1}:** “{tok}” drawn from the residual.",
        "none": "**4 · An accepted end-of-sequence token ends the output:** no new token.",
    }.get(cycle.new_origin, "")




def _share(x: float) -> str:
    """A share in percent with the digits a small one needs (0.3 %, 0.004 %), never a misleading "0 %"."""
    return f"{x:.0%}" if x >= 0.01 else "less than 0.0001 %" if x < 1e-6 else f"{x * 100:.1g} %"


def rare_draw_note(cycle, below: float = 0.01) -> str | None:
    """When the residual produced a token the target itself finds unlikely, say why that is still exact
    (Markdown, escaped); None otherwise."""
    if cycle.new_origin != "resampled" or cycle.new_p is None or cycle.new_p >= below:
        return None
    tok = md_escape(label_plain(cycle.new_text))
    share = next((t.prob for t in cycle.residual_top if t.id == cycle.new_token), None)
    one_in = f"about 1 in {round(1 / cycle.new_p):,}" if cycle.new_p > 0 else "almost never"
    # "yet" only when the residual made it much likelier than p did; a thin share is a second unlikely draw
    got = ("" if share is None else f", yet it got {_share(share)} of the residual"
           if share >= max(0.01, 2 * cycle.new_p)
           else f", and only {_share(share)} of the residual: an unlikely draw twice over")
    return (f"**A rare token was drawn.** The target gives “{tok}” only p = "
            f"{f'{cycle.new_p:.4f}' if cycle.new_p >= 1e-4 else _small(cycle.new_p)} here "
            f"({one_in} draws)" + got
            + ": after the draft's token is rejected, the residual max(0, p − q) keeps only the mass p has *beyond* "
            "q, which can be a thin tail. Whatever the rejection rate, the accept path (min(p, q)) and the "
            "residual path (the rest of p) add up to exactly p for every token, so this token comes out with "
            "probability p overall, as plain sampling at this temperature would give it. It is not a bug; another "
            "seed (or a lower temperature) gives a likelier path.")


def cache_strip(cycle, context: list[str] | None = None, window: int = 24) -> go.Figure:
    """Both KV caches after the verify pass, one row each: positions kept vs rolled back (cropped), each cell
    with its token's text. context: the texts of the tokens before this cycle (the last ones suffice)."""
    rows = [("target", cycle.target_cache)] + ([("draft", cycle.draft_cache)] if cycle.draft_cache else [])
    end = max(max(s.before, s.after) for _, s in rows)
    lo = max(0, min(cycle.context_len - window // 2, end - window))
    xs = list(range(lo, end))
    context = list(context or [])

    def token(x):  # the raw text of the token at cache position x, if known
        if x >= cycle.context_len:
            i = x - cycle.context_len
            return cycle.drafts[i].text if i < len(cycle.drafts) else None
        j = x - cycle.context_len + len(context)
        return context[j] if 0 <= j < len(context) else None

    names = [name for name, _ in rows][::-1]  # target drawn on top
    z, texts, hover = [], [], []
    for name, state in rows[::-1]:
        z.append([(0 if x < cycle.context_len else 1) if x < state.after else (2 if x < state.before else None)
                  for x in xs])
        shown = [token(x) if x < max(state.before, state.after) else None for x in xs]
        texts.append(["" if t is None else short_label(t, 6) for t in shown])  # a cell's width; the hover has it whole
        hover.append([f"{name} cache, position {x}: " + ("kept" if x < state.after else "rolled back")
                      + ("" if t is None else "<br>" + label(t)) for x, t in zip(xs, shown)])
    data = [dict(
        type="heatmap", x=xs, y=names, z=z, text=texts, texttemplate="%{text}", textfont=dict(size=10),
        customdata=hover,
        hovertemplate="%{customdata}<extra></extra>", xgap=2, ygap=4, showscale=False, zmin=0, zmax=2,
        colorscale=[[0, "#cfd8dc"], [0.33, "#cfd8dc"], [0.34, "#90caf9"], [0.66, "#90caf9"], [0.67, "#ef9a9a"],
                    [1, "#ef9a9a"]])]
    layout = dict(
        height=130 + 45 * len(rows),
        yaxis=dict(tickfont=dict(size=13)), plot_bgcolor="white",
        xaxis=dict(title=dict(text="cache position (grey: earlier tokens · blue: this cycle, kept · red: rolled back)"),
                   dtick=2 if len(xs) > 20 else 1),
        title=dict(text=f"5 · KV caches, filled → kept: target {_moved(cycle.target_cache)}"
                   + (f", draft {_moved(cycle.draft_cache)}" if cycle.draft_cache else ", n-gram: no cache"),
                   x=0, font=dict(size=14)))
    return build(data, _fixed(layout, l=60, r=10, t=40, b=55))


def _moved(state) -> str:
    """'46→44 (2 rolled back)': the cache's length once its forward filled it, once the rollback cropped it."""
    gone = state.before - state.after
    return f"{state.before}→{state.after} " + (f"({gone} rolled back)" if gone > 0 else "(nothing rolled back)"
                                               if gone == 0 else f"(+{-gone})")


def token_chips(tokens_with_origin) -> str:
    """The output so far as HTML chips coloured by origin. Every piece of text is escaped here, so
    the page can render the result with unsafe_allow_html."""
    chips = []
    for text, origin, *token in tokens_with_origin:
        tid = f' data-tok="{int(token[0])}"' if token else ""
        shown = html.escape(text.replace("\n", "↵\n"), quote=True)
        color = ORIGIN_COLORS.get(origin, "#777")
        title = html.escape(origin) if text else f"{html.escape(origin)} · a byte token: part of the next character"
        chips.append(f'<span class="chip"{tid} title="{title}" '
                     f'style="border-bottom:3px {ORIGIN_LINES.get(origin, "solid")} {color};'
                     f'background:{color}22;padding:1px 2px;margin:0 1px;border-radius:3px;'
                     f'white-space:pre-wrap">{shown}</span>')
    return '<div style="line-height:2;font-family:monospace">' + "".join(chips) + "</div>"


def chip_legend() -> str:
    return " ".join(f'<span style="border-bottom:3px {ORIGIN_LINES[k]} {c};background:{c}22;padding:1px 4px">'
                    f'{html.escape(k)}</span>' for k, c in ORIGIN_COLORS.items() if k != "prompt")


# ---------------------------------------------------------------- the page's sentences (shared with the offline lesson)
NOTHING_DRAFTED = ("**1 · Nothing drafted:** the target decodes one token alone, as plain decoding would "
                   "(still one target pass).")
NOTHING_JUDGED = "**3 · Nothing to judge:** no draft token, so no accept test."
FEATURE_CACHE = ("The feature draft keeps only positions it built from the target's "
                 "real hidden states; the ones it built "
                 "on its own guesses are dropped and rebuilt next cycle from the states this verify pass computed.")
BLOCK_CAPTION = ("Block verification (Sun et al., ICLR 2025) draws one uniform η per draft, as token-wise "
                 "verification does, but tests it against the block weight h_i, built from the clipped running "
                 "ratio p_i = min(1, p_(i−1)·p/q) and the mass of max(0, p_i·p − q) at the next position. It keeps "
                 "drafts 1..τ, τ the LAST position whose test passes, then "
                 "draws one token from normalize(max(0, p_τ·p − q)) (or the bonus). A low ratio early can be made up "
                 "by a draft the target likes more later: the drafts marked rescued. The output is still exactly the "
                 "target's, and on average it keeps at least as many drafts as token-wise; for one block it can keep "
                 "fewer.")
FEATURE_PREFILL = ("Before this first cycle the target ran one prefill pass over the prompt: "
                   "the feature draft reads the "
                   "target's hidden states, so it cannot draft before they exist (counted as a target pass).")


def heading(cycle, upto: list[str], kind: str, at_end: bool) -> str:
    """The line over a cycle at a stage (Markdown). upto: the stages on screen. Why K came out short is read from
    the cycle: the K the engine asked for (k_asked, dynamic K's value that cycle) and the budget's cap (k_room)."""
    stage = upto[-1] + (f" {upto.count('draft')}/{cycle.k}" if upto[-1] == "draft" else "")
    short = ("few tokens left" if cycle.k >= cycle.k_room else
             f"the context's copy of the matched n-gram continues for only {cycle.k}" if kind == "ngram" else
             "the drafter stopped early")
    drafted = (f"K = {cycle.k}" + (f" (asked {cycle.k_asked}: {short})" if 0 < cycle.k < cycle.k_asked else "")
               if cycle.k else ("K = 0: the n-gram lookup found no match in the context, so nothing was drafted"
                                if kind == "ngram" else "K = 0: too close to the token limit to draft"))
    return f"**Cycle {cycle.cycle + 1}** · {drafted} · stage: *{stage}*" + (" · done" if at_end else "")


def totals_caption(decided: int, shown: int, cycle) -> str:
    """What the metrics under the chips count: `decided` cycles of the `shown` on screen."""
    return (f"Totals over {decided} decided cycle{'s' if decided != 1 else ''}"
            + (f" · cycle {cycle.cycle + 1}'s passes and tokens are added at its stage 4, when its new token is decided"
               if decided < shown else ""))


def summary_metrics(s: dict) -> list[tuple[str, str, str | None]]:
    """(label, value, help) of the page's metric row from metrics.spec_summary."""
    return [
        ("Target passes", str(s["target_passes"]),
         f"{s['verify_passes']} verify pass{'es' if s['verify_passes'] != 1 else ''}"
         + (f" + {s['prefill_passes']} prefill pass over the prompt" if s["prefill_passes"] else "")),
        ("Draft passes", str(s["draft_passes"]), None),
        ("Tokens per verify pass", f"{s['mean_acceptance_length']:.2f}" if s["verify_passes"] else "—",
         "Mean acceptance length: output tokens / verify passes, including each pass's bonus or correction token"
         + (" (the prefill pass is not a verify pass)." if s["prefill_passes"] else ".")),
        ("Accepted ÷ ruled on", "—" if s["acceptance_rate"] is None else f"{s['acceptance_rate']:.0%}",
         "Acceptance rate per drafted token the verifier ruled on: the estimate of a in the speedup formulas. Drafts "
         "after a cycle's first rejection are never ruled on."),
        ("Accepted ÷ proposed", "—" if s["draft_acceptance_rate"] is None else f"{s['draft_acceptance_rate']:.0%}",
         "Accepted / every drafted token, ruled on or not: vLLM's \"draft acceptance rate\" "
         "(spec_decode_num_accepted_tokens ÷ num_draft_tokens). Far below the rate at its left at a large K, where "
         "most drafts come after a rejection."),
        ("Target alone would need", f"{s['plain_target_passes']} pass{'es' if s['plain_target_passes'] != 1 else ''}",
         None)]


def positions_caption(s: dict) -> str | None:
    if not s["per_position"]:
        return None
    return "Acceptance by draft position: " + " · ".join(
        f"{i + 1}: {a:.0%} ({r})" for i, (a, r) in enumerate(zip(s["per_position"], s["reached"])))
