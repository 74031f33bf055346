"""The speedup lab's charts: expected tokens per target pass and walltime improvement against K."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.colors import qualitative

from specviz.theory import best_k, expected_tokens, walltime_improvement
from specviz.figures import build

A_FAMILY = (0.5, 0.6, 0.7, 0.8, 0.9)


def _a_values(a):
    """(a, its colour) for the family and the chosen a: the same a has the same colour in every chart."""
    values = sorted(set(A_FAMILY) | {round(a, 3)})
    return [(av, qualitative.Plotly[i % len(qualitative.Plotly)]) for i, av in enumerate(values)]


def tokens_per_pass(a: float, k_max: int = 16) -> go.Figure:
    ks = list(range(1, k_max + 1))
    fig = go.Figure()
    for av, color in _a_values(a):
        chosen = abs(av - a) < 1e-9
        fig.add_trace(go.Scatter(x=ks, y=[expected_tokens(av, k) for k in ks],
                                 mode="lines+markers" if chosen else "lines",
                                 name=f"a = {av:g}", line=dict(width=4 if chosen else 1.5, color=color)))
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="K (drafts per cycle)",
                      yaxis_title="expected tokens per target pass",
                      legend=dict(orientation="h", x=0, y=-0.18, yanchor="top", font=dict(size=10)),
                      title=dict(text="(1 − a^(K+1)) / (1 − a): diminishing returns in K", x=0, font=dict(size=14)))
    return fig


def what_k_buys(k: int, others=(1, 2, 4, 8, 16)) -> go.Figure:
    """Expected tokens per verify pass against the acceptance rate a, (1 - a^(K+1)) / (1 - a), at the page's K
    (bold, its ceiling K + 1 dotted) and a few other K (faint), each named at its end: what the "Tokens per verify
    pass" counter should come near when the run's acceptance rate is a."""
    a = [i / 100 for i in range(100)]
    top = max(k + 1, 9)  # larger K's curves leave the top: their rise at high a is the point
    data, notes = [], []
    for kk in [o for o in others if o != k] + [k]:
        mine = kk == k
        y = [expected_tokens(x, kk) for x in a]
        data.append(dict(type="scatter", x=a, y=y, mode="lines", showlegend=False,
                         line=dict(width=3.5, color="#0068c9") if mine else dict(width=1.2, color="#b0bec5"),
                         hovertemplate=f"K = {kk}, a = %{{x:.2f}}: %{{y:.2f}} tokens per verify pass<extra></extra>"))
        end = max(i for i, v in enumerate(y) if v <= top)  # where the curve leaves the chart (top or right)
        notes.append(dict(x=a[end], y=y[end], xanchor="left" if end == len(a) - 1 else "right",
                          yanchor="middle" if end == len(a) - 1 else "bottom", showarrow=False,
                          text=f"<b>K = {kk} (yours)</b>" if mine else f"K = {kk}",
                          font=dict(color="#0068c9" if mine else "#78909c", size=12 if mine else 11)))
    notes.append(dict(x=0.01, y=k + 1, xanchor="left", yanchor="bottom", showarrow=False,
                      text=f"ceiling K + 1 = {k + 1}", font=dict(color="#0068c9", size=11)))
    # margins fixed, not grown by automargin: that lays the chart out a second time after its first draw
    layout = dict(height=300, margin=dict(l=60, r=95, t=20, b=50), showlegend=False, annotations=notes,
                  xaxis=dict(title="a: probability a drafted token is accepted", range=[0, 1], automargin=False),
                  yaxis=dict(title="tokens per verify pass", range=[0, top + 0.5], automargin=False),
                  shapes=[dict(type="line", xref="x", yref="y", x0=0, x1=1, y0=k + 1, y1=k + 1,
                               line=dict(dash="dot", color="#0068c9", width=1))])
    return build(data, layout)


def improvement(a: float, c: float, v_of_k=None, k_max: int = 16, measured=None, through=None) -> go.Figure:
    """Estimated walltime improvement vs K for several a at cost ratio c (Leviathan et al. Theorem 3.8, an
    estimate under i.i.d. acceptance, not a bound); with v_of_k (K -> verify cost), the machine-aware
    estimate tau / (K c + v). Where no K pays (a <= c), an annotation instead of a best-K marker.
    measured: (K, speedup, label) points to overlay. through: (a, c, v_of_k) measured in a real run: the
    machine-aware estimate at those values, the curve the measured point should sit near."""
    ks = list(range(1, k_max + 1))
    fig = go.Figure()
    top = 1.0  # the highest speedup drawn: the y range fits it
    for av, color in _a_values(a):
        chosen = abs(av - a) < 1e-9
        ys = [walltime_improvement(av, k, c) for k in ks]
        top = max(top, *ys)
        fig.add_trace(go.Scatter(x=ks, y=ys, mode="lines", name=f"a = {av:g}",
                                 line=dict(width=4 if chosen else 1.5, color=color), opacity=1 if chosen else 0.6))
        if chosen:
            _best_k_paper(fig, av, c, k_max)
            if v_of_k:
                top = max(top, *_machine_aware(fig, av, c, v_of_k, ks, k_max))
    if through is not None:
        am, cm, vm = through
        ys = [walltime_improvement(am, k, cm, vm(k)) for k in ks]
        top = max(top, *ys)
        fig.add_trace(go.Scatter(x=ks, y=ys, mode="lines",
                                 name=f"estimate at the measured a = {am:.2f}, c = {cm:.2f}, v",
                                 line=dict(width=3, dash="dot", color="#c62828")))
    for k, s, lab in measured or []:
        top = max(top, s)
        _measured_point(fig, k, s, lab, k_max, top)
    fig.add_hrect(y0=0, y1=1, fillcolor="#c62828", opacity=0.08, line_width=0,
                  annotation_text="slower than plain decoding", annotation_position="bottom right")
    fig.add_hline(y=1, line_dash="dot", line_color="#c62828")
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="K (drafts per cycle)",
                      yaxis_title="speedup over plain decoding", yaxis_range=[0, top * 1.15],
                      legend=dict(orientation="h", x=0, y=-0.18, yanchor="top", font=dict(size=10)),
                      title=dict(text=f"Estimated walltime improvement "
                                      f"(1 − a^(K+1)) / ((1 − a)(Kc + 1)), c = {c:g}", x=0,
                                 font=dict(size=14)))
    return fig


def _best_k_paper(fig: go.Figure, a: float, c: float, k_max: int) -> None:
    """The paper's best K for a at c as a star with its speedup, or, where no K pays (a <= c), a warning."""
    kb = best_k(a, c, 1.0, k_max)
    if kb:
        best = walltime_improvement(a, kb, c)
        fig.add_trace(go.Scatter(x=[kb], y=[best], mode="markers+text",
                                 marker=dict(size=14, symbol="star", color="black"),
                                 text=[f"best K = {kb}: {best:.2f}×"],
                                 textposition="top center", name="best K (paper)"))
    else:
        fig.add_annotation(x=0.5, y=0.99, xref="paper", yref="paper", yanchor="top", showarrow=False,
                           font=dict(size=14, color="#c62828"), bgcolor="rgba(255,255,255,0.85)",
                           text=f"a = {a:g} ≤ c = {c:g}: no K pays — don't speculate")


def _machine_aware(fig: go.Figure, a: float, c: float, v_of_k, ks: list[int], k_max: int) -> list[float]:
    """The estimate with this machine's verify cost v(K) (dashed) and its best K, or a warning where none pays;
    returns the curve."""
    ym = [walltime_improvement(a, k, c, v_of_k(k)) for k in ks]
    fig.add_trace(go.Scatter(x=ks, y=ym, mode="lines", name=f"a = {a:g}, with measured verify cost v",
                             line=dict(width=3, dash="dash", color="black")))
    km = best_k(a, c, v_of_k, k_max)  # the machine-aware best K (theory.py), or none that pays
    if km:
        best_m = walltime_improvement(a, km, c, v_of_k(km))
        fig.add_trace(go.Scatter(x=[km], y=[best_m],
                                 mode="markers+text", marker=dict(size=12, symbol="diamond", color="black"),
                                 text=[f"best K = {km}: {best_m:.2f}× (this machine)"],
                                 textposition="top right" if km <= k_max // 2 else "top left",
                                 cliponaxis=False, name="best K (machine-aware)"))
    else:
        fig.add_annotation(x=0.5, y=0.90, xref="paper", yref="paper", yanchor="top", showarrow=False,
                           font=dict(size=13, color="#c62828"), bgcolor="rgba(255,255,255,0.85)",
                           text="with this machine's verify cost v no K pays")
    return ym


def _measured_point(fig: go.Figure, k: int, s: float, lab: str, k_max: int, top: float) -> None:
    """A measured speedup s at K = k, labelled; top: the highest speedup drawn so far."""
    fig.add_trace(go.Scatter(x=[k], y=[s], mode="markers", marker=dict(size=14, color="#c62828", symbol="circle"),
                             name="measured", hovertemplate=f"{lab}, K = {k}<extra></extra>"))
    # level with the point, on the side facing the middle of the chart: a label hung below the point crossed
    # the K axis when the point sat low (a high a stretches the y range); above it sit the best-K markers
    left, low = k <= k_max // 2, s < 0.15 * top  # low: a two-line label level with it would reach the axis
    fig.add_annotation(x=k, y=s, text=lab.replace(" (", "<br>(", 1), showarrow=True, arrowhead=0,
                       ax=24 if left else -24, ay=-28 if low else 0, xanchor="left" if left else "right",
                       yanchor="bottom" if low else "middle",
                       font=dict(color="#c62828"), bgcolor="rgba(255,255,255,0.8)")


def position_histogram(per_position, reached) -> go.Figure:
    xs = [f"{i + 1}" for i in range(len(per_position))]
    fig = go.Figure(go.Bar(x=xs, y=per_position, text=[f"{p:.0%} of {r}" for p, r in zip(per_position, reached)],
                           marker_color="#2e7d32", name="acceptance"))
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=40, b=10), yaxis_range=[0, 1],
                      xaxis_title="draft position in the cycle", yaxis_title="accepted when reached",
                      title=dict(text="Acceptance by draft position", x=0, font=dict(size=14)))
    return fig


def tokens_per_pass_histogram(accepted_per_pass) -> go.Figure:
    counts = {}
    for a in accepted_per_pass:
        counts[a + 1] = counts.get(a + 1, 0) + 1
    xs = sorted(counts)
    fig = go.Figure(go.Bar(x=xs, y=[counts[x] for x in xs], marker_color="#1565c0", name="passes"))
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="tokens produced by a target pass",
                      yaxis_title="target passes", xaxis_dtick=1,
                      title=dict(text="Tokens per target pass (accepted drafts + 1)", x=0, font=dict(size=14)))
    return fig


# ---------------------------------------------------------------- the committed benchmark's figures, in sentences
def _k4(rows: dict, prefix: str) -> str | None:
    return next((k for k in rows if k.startswith(prefix) and k.endswith("K=4")), None)


def packing_note(bench: dict) -> str:
    """What packing the linear layers did in the benchmark, in its own numbers: one target step unpacked and
    packed, greedy's gain, the token draft at K = 4 without and with packing, and v for 3, 5, 9 tokens."""
    f, u, rows = bench["forward_ms"], bench["forward_ms_unpacked"], bench["rows"]
    spec, unpacked_spec = _k4(rows, "spec token") or _k4(rows, "spec model"), _k4(rows, "unpacked spec")
    base = rows["unpacked greedy"]["vs_ours_greedy"]  # unpacked greedy's speed over packed greedy's
    before = rows[unpacked_spec]["vs_ours_greedy"] / base  # the token draft unpacked, over unpacked greedy
    after = rows[spec]["vs_ours_greedy"]
    vs = ", ".join(f"{f['target_verify'][n] / f['target_1']:.2f} for {n}" for n in sorted(f["target_verify"], key=int))
    turned = (" — in that run packing turned the token draft from a slowdown into a speedup" if before < 1 <= after
              else "")
    return (f"In the benchmark of {bench['date']} (`docs/{bench['file']}`, on this project's 2-core machine) one "
            f"unpacked step took {u['target_1']:.1f} ms against {f['target_1']:.1f} ms packed, and unpacked, the token "
            f"draft at K = 4 ran at {before:.2f}× plain greedy. SpecViz packs the weights once for oneDNN when it "
            f"loads a model on a CPU where that measures faster (`specviz/packed.py`; on some AVX-512 hosts with AMX "
            f"the plain layers win): in that run greedy got {1 / base:.2f}× faster, a verify "
            f"pass cost v = {vs} tokens (one step = 1), and the token draft at K = 4 ran at {after:.2f}× plain "
            f"greedy{turned}. Those are one run's figures; toggle the measured v above to see "
            "this machine's now.")


def estimate_note(bench: dict) -> str:
    """How the benchmark's measured speedups sat against the machine-aware estimate, from its rows."""
    fr = {k: r["fraction_of_machine_bound"] for k, r in bench["rows"].items() if r.get("fraction_of_machine_bound")}
    if not fr:
        return ""
    above = sorted(v for v in fr.values() if v > 1)
    return (f"In the benchmark of {bench['date']} (`docs/{bench['file']}`) the measured speedups ran at "
            f"{min(fr.values()):.0%}–{max(fr.values()):.0%} of the machine-aware estimate over {len(fr)} "
            f"configurations ({len(above)} above it).")
