"""One speculative cycle, drawn in the order it happens: draft proposals (q), the target's single
verify pass, the per-token accept test (u against min(1, p/q)), the residual or bonus, the KV caches."""
from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import ACCEPTED, BONUS, CORRECTION, P_COLOR, Q_COLOR, REJECTED, RESAMPLED, label

ORIGIN_COLORS = {"accepted": ACCEPTED, "resampled": RESAMPLED, "bonus": BONUS, "correction": CORRECTION,
                 "target": "#607d8b", "prompt": "#9e9e9e"}


def draft_proposals(cycle, shown: int | None = None) -> go.Figure:
    """q's top candidates at each draft position; the proposed token highlighted."""
    drafts = cycle.drafts[: len(cycle.drafts) if shown is None else shown]
    n = max(len(drafts), 1)
    fig = make_subplots(rows=1, cols=n, subplot_titles=[f"draft {d.position + 1}: {label(d.text)}" for d in drafts] or ["no drafts"])
    for i, d in enumerate(drafts):
        fig.add_trace(go.Bar(
            x=[label(t.text) for t in d.q_top], y=[t.prob for t in d.q_top], name=f"q (draft {i + 1})",
            marker_color=[Q_COLOR if t.id == d.token else "#ffcc80" for t in d.q_top], showlegend=False,
            hovertemplate="%{x}: q = %{y:.3f}<extra></extra>"), row=1, col=i + 1)
        fig.update_yaxes(range=[0, 1], row=1, col=i + 1, showticklabels=i == 0)
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=50, b=10),
                      title=dict(text="1 · The draft proposes (bars: q, proposed token dark)", x=0, font=dict(size=14)))
    return fig


def verify_pass(cycle) -> go.Figure:
    """The target's ONE forward pass: k + 1 positions scored together."""
    k = cycle.k
    xs = list(range(k + 1))
    names = [f"pos {i + 1}<br>{label(d.text)}" for i, d in enumerate(cycle.drafts)] + [f"pos {k + 1}<br>(next)"]
    fig = go.Figure(go.Bar(x=xs, y=[1] * (k + 1), text=names, textposition="inside", marker_color=P_COLOR,
                           hovertemplate="scored in the same forward pass<extra></extra>", name="target pass"))
    fig.update_layout(height=140, margin=dict(l=10, r=10, t=40, b=10), yaxis=dict(visible=False),
                      xaxis=dict(visible=False), bargap=0.05, showlegend=False,
                      title=dict(text=f"2 · The target scores all {k} drafts + 1 in ONE forward pass" if k else
                                 "2 · Nothing drafted: the target decodes one token, as plain decoding would", x=0, font=dict(size=14)))
    return fig


def verdicts(cycle) -> go.Figure:
    """Per drafted token: p and q side by side for it and its top alternatives, and the accept test."""
    vs = cycle.verdicts
    n = max(len(vs), 1)
    titles = []
    for v in vs:
        if cycle.verify_mode == "greedy":
            titles.append(f"{label(v.text)}: {'match ✓' if v.accepted else 'mismatch ✗'}")
        else:
            titles.append(f"{label(v.text)}: u={v.u:.2f} {'<' if v.accepted else '≥'} {v.accept_prob:.2f} {'✓' if v.accepted else '✗'}")
    fig = make_subplots(rows=2, cols=n, row_heights=[0.72, 0.28], vertical_spacing=0.12,
                        subplot_titles=titles or ["nothing drafted"])
    for i, v in enumerate(vs):
        ids = [t.id for t in v.p_top]
        ids += [t.id for t in v.q_top if t.id not in ids]
        pmap = {t.id: t for t in v.p_top}
        qmap = {t.id: t for t in v.q_top}
        text = {t.id: t.text for t in list(v.p_top) + list(v.q_top)}
        xs = [("▶ " if t == v.token else "") + label(text[t]) for t in ids]
        fig.add_trace(go.Bar(x=xs, y=[pmap[t].prob if t in pmap else 0 for t in ids], name="p (target)",
                             marker_color=P_COLOR, showlegend=i == 0, legendgroup="p"), row=1, col=i + 1)
        fig.add_trace(go.Bar(x=xs, y=[qmap[t].prob if t in qmap else 0 for t in ids], name="q (draft)",
                             marker_color=Q_COLOR, showlegend=i == 0, legendgroup="q"), row=1, col=i + 1)
        color = ACCEPTED if v.accepted else REJECTED
        fig.add_trace(go.Bar(x=[v.accept_prob], y=[""], orientation="h", marker_color=color, opacity=0.5,
                             name="min(1, p/q)", showlegend=i == 0, legendgroup="a",
                             hovertemplate="accept probability %{x:.3f}<extra></extra>"), row=2, col=i + 1)
        if v.u is not None:
            fig.add_trace(go.Scatter(x=[v.u], y=[""], mode="markers", marker=dict(symbol="line-ns-open", size=22,
                                     color="black", line=dict(width=3)), name="u", showlegend=i == 0,
                                     legendgroup="u", hovertemplate="u = %{x:.3f}<extra></extra>"), row=2, col=i + 1)
        fig.update_xaxes(range=[0, 1], row=2, col=i + 1)
        fig.update_yaxes(range=[0, 1], row=1, col=i + 1, showticklabels=i == 0)
    rule = "accept while draft == target argmax" if cycle.verify_mode == "greedy" else "accept if u < min(1, p/q)"
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=70, b=10), barmode="group",
                      legend=dict(orientation="h", y=-0.08),
                      title=dict(text=f"3 · Verify each draft token in order: {rule}", x=0, font=dict(size=14)))
    return fig


def resolution(cycle) -> go.Figure:
    """The residual normalize(max(0, p - q)) after a rejection, or the bonus / correction token."""
    if cycle.new_origin == "resampled":
        r = cycle.residual_top
        fig = go.Figure(go.Bar(x=[("▶ " if t.id == cycle.new_token else "") + label(t.text) for t in r],
                               y=[t.prob for t in r], marker_color=[RESAMPLED if t.id == cycle.new_token else "#ce93d8" for t in r],
                               name="residual", hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
        title = "4 · Rejected: resample from the residual normalize(max(0, p − q))"
        if cycle.residual_fallback:
            title += " (all zero: p = q, drew from p)"
    else:
        what = {"bonus": f"all {cycle.k} drafts accepted: the bonus token comes free from the target's last position",
                "correction": "mismatch: the target's own argmax replaces the draft token (greedy correction)",
                "target": "nothing was drafted: the target's own next token"}[cycle.new_origin]
        fig = go.Figure(go.Bar(x=[label(cycle.new_text)], y=[1], marker_color=ORIGIN_COLORS[cycle.new_origin], name=cycle.new_origin))
        title = f"4 · {what}"
    fig.update_layout(height=230, margin=dict(l=10, r=10, t=40, b=10), yaxis=dict(range=[0, 1]),
                      title=dict(text=title, x=0, font=dict(size=14)), showlegend=False)
    return fig


def cache_strip(cycle, window: int = 24) -> go.Figure:
    """Both KV caches after the verify pass: positions kept vs rolled back (cropped)."""
    fig = go.Figure()
    rows = [("target", cycle.target_cache)] + ([("draft", cycle.draft_cache)] if cycle.draft_cache else [])
    lo = max(0, cycle.context_len - window // 2)
    for name, state in rows:
        xs = list(range(lo, max(state.before, state.after)))
        colors = ["#90caf9" if x < state.after else REJECTED for x in xs]
        fig.add_trace(go.Bar(x=xs, y=[1] * len(xs), marker_color=colors, name=name, showlegend=False,
                             customdata=["kept" if x < state.after else "rolled back" for x in xs],
                             hovertemplate=f"{name} cache position %{{x}}: %{{customdata}}<extra></extra>",
                             yaxis="y" if name == "target" else "y2"))
    fig.update_layout(
        height=200, margin=dict(l=60, r=10, t=40, b=30), bargap=0.08,
        yaxis=dict(domain=[0.55, 1] if len(rows) > 1 else [0, 1], showticklabels=False, title="target"),
        yaxis2=dict(domain=[0, 0.45], showticklabels=False, title="draft", anchor="x"),
        xaxis=dict(title="position (blue kept, red rolled back)"),
        title=dict(text=f"5 · KV caches: target {cycle.target_cache.before}→{cycle.target_cache.after}"
                   + (f", draft {cycle.draft_cache.before}→{cycle.draft_cache.after}" if cycle.draft_cache else ", n-gram: no cache"),
                   x=0, font=dict(size=14)))
    return fig


def token_chips(tokens_with_origin) -> str:
    """The output so far as HTML chips coloured by origin. Every piece of text is escaped here, so
    the page can render the result with unsafe_allow_html."""
    chips = []
    for text, origin, *token in tokens_with_origin:
        tid = f' data-tok="{int(token[0])}"' if token else ""
        shown = html.escape(text.replace("\n", "↵\n"), quote=True)
        color = ORIGIN_COLORS.get(origin, "#777")
        chips.append(f'<span class="chip"{tid} title="{html.escape(origin)}" style="border-bottom:3px solid {color};'
                     f'background:{color}22;padding:1px 2px;margin:0 1px;border-radius:3px;white-space:pre-wrap">{shown}</span>')
    return '<div style="line-height:2;font-family:monospace">' + "".join(chips) + "</div>"


def chip_legend() -> str:
    return " ".join(f'<span style="border-bottom:3px solid {c};background:{c}22;padding:1px 4px">{html.escape(k)}</span>'
                    for k, c in ORIGIN_COLORS.items() if k != "prompt")
