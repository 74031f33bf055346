"""Figure builders: pure functions, trace events in, Plotly figures out. No model calls, no Streamlit."""
import copy
import functools
import html
import json
import re

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

KEPT, FINISHED, PRUNED = "#2e7d32", "#f9a825", "#b0b0b0"
ACCEPTED, REJECTED, RESAMPLED, BONUS, CORRECTION = "#2e7d32", "#c62828", "#6a1b9a", "#1565c0", "#ef6c00"
P_COLOR, Q_COLOR = "#1565c0", "#ef6c00"


# ---------------------------------------------------------------- the look, as a small template
# The page draws each chart with Streamlit's theme off (ui.charts.chart): that theme is re-applied in the
# browser on every new chart and, not being idempotent (it wraps the title in <b> a second time), makes
# Plotly draw every new chart twice. Measured in headless Chromium on the Speculative page (16 Steps,
# two runs each): Step median 324-333 ms with the theme, 257-267 ms without. This template gives the
# charts the same look (Streamlit's font and greys, automargins) in layout only: no per-trace defaults,
# which Plotly would otherwise merge into every trace.
TEXT, MUTED, GRID = "#31333f", "#6b6f80", "#e6eaf1"
TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family='"Source Sans", sans-serif', size=12, color=MUTED),
    title=dict(font=dict(size=15, color=TEXT, weight=600), x=0, xanchor="left"),
    paper_bgcolor="white", plot_bgcolor="white",
    colorway=["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0",
              "#d5dae5"],
    xaxis=dict(automargin=True, showgrid=False, zeroline=False, linecolor=GRID, tickcolor=GRID,
               title=dict(standoff=12, font=dict(size=13))),
    yaxis=dict(automargin=True, gridcolor=GRID, zerolinecolor=GRID, tickcolor=GRID,
               title=dict(standoff=16, font=dict(size=13))),
    legend=dict(font=dict(size=12, color=TEXT), bgcolor="rgba(0,0,0,0)"),
    hoverlabel=dict(bgcolor="white", bordercolor="#d5dae5", font=dict(color=TEXT, size=13)),
    annotationdefaults=dict(font=dict(color=TEXT))))
pio.templates["specviz"] = TEMPLATE
pio.templates.default = "specviz"  # figures made after this import (importing streamlit later resets it: ui.state)
_TEMPLATE_JSON = TEMPLATE.to_plotly_json()


def label_plain(text: str) -> str:
    """Token text with whitespace made visible (newline ↵, tab ⇥, a token of only spaces, non-breaking or
    other Unicode spaces included, ␣ each), not escaped."""
    shown = text.replace("\n", "↵").replace("\t", "⇥")
    if shown.strip() == "":
        shown = "".join("␣" if ch.isspace() else ch for ch in shown) or "∅"
    return shown


def label(text: str) -> str:
    """Token text made safe and visible in a chart: Plotly renders a subset of HTML in text, so
    escape it, and show whitespace that would otherwise be invisible."""
    return html.escape(label_plain(text), quote=False)


def token_labels(texts, marked=()) -> list[str]:
    """label() of each token text, except where two different tokens would look alike: " hash" and "hash"
    are two tokens, but a leading space is invisible in a chart. Those show every space as ␣, so a learner
    sees two tokens, not one drawn twice. `marked`: one bool per text, True puts ▶ in front (the token
    ruled on, or drawn)."""
    texts = list(texts)
    marked = list(marked) or [False] * len(texts)
    looks: dict[str, set[str]] = {}
    for t in texts:
        looks.setdefault(label_plain(t).strip(), set()).add(t)

    def spaced(t):
        return html.escape("".join("␣" if ch.isspace() else ch for ch in label_plain(t)), quote=False)
    return [("▶" if m else "") + (spaced(t) if len(looks[label_plain(t).strip()]) > 1 else label(t))
            for t, m in zip(texts, marked)]


def short_label(text: str, width: int) -> str:
    """label() cut to `width` characters with "…" (cut before escaping, so an entity is never split)."""
    shown = label_plain(text)
    return html.escape(shown if len(shown) <= width else shown[: width - 1] + "…", quote=False)


_MD_SPECIAL = set("\\`*_{}[]()#+-.!<>|~$")


def md_escape(text: str) -> str:
    """Model or user text inside a Markdown string: every Markdown/HTML metacharacter backslashed, so
    `<img onerror=...>` or `[x](javascript:...)` shows as the characters typed."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


# ---------------------------------------------------------------- building figures fast
# Plotly's object API checks every property on every update (make_subplots alone: ~30 ms for a 1 x 4 grid on
# this CPU; a speculative cycle's five charts ~150 ms, more than the engine's step). The step pages' builders
# therefore assemble plain dicts and wrap them once with build(), unchecked; tests/test_figures.py rebuilds
# every builder's output through plotly's full validation, so a misspelt property still fails a test.


def build(data: list, layout: dict) -> go.Figure:
    """A figure from trace dicts (or trace objects) and a layout dict, without per-property validation, in the
    specviz look whatever the process's default template, ready for the browser (for_browser)."""
    return go.Figure(data=data, layout=_inline(data, {"template": _TEMPLATE_JSON, **layout}), _validate=False)


# ---------------------------------------------------------------- drawn once, not twice
# Streamlit's chart mounts a new figure with Plotly.newPlot, then (an effect on mount) hands Plotly.react a JSON copy
# of the same figure. react compares the two: a template object that is a new copy, or data arrays that are new
# copies, make it lay out and draw the whole chart a second time (counted in headless Chromium with a listener on
# Plotly's "plotly_beforeplot": two full draws per chart per "Next cycle"). With the template's values written into
# the layout itself and a fixed `datarevision` (arrays are then compared by revision, not by identity), the copy
# compares equal and react only restyles. Safe to fix: a changed figure is a new Streamlit element, mounted afresh.
CARTESIAN = {"bar", "scatter", "scattergl", "heatmap", "histogram", "box", "violin", "contour", "waterfall", "funnel"}
_AXIS = re.compile(r"[xy]axis\d*")


def _under(value, default):
    """`value` over `default`: dicts merged key by key (value wins), a bare title string taken as its text."""
    if isinstance(default, dict):
        if isinstance(value, str):
            value = {"text": value}
        if value is None or isinstance(value, dict):
            out = dict(value or {})
            for k, d in default.items():
                out[k] = _under(out.get(k), d)
            return out
    return copy.deepcopy(default) if value is None else value


# Plotly reads these axis colours and sizes with coerce2: set in the figure itself they also switch their feature on
# (a linecolor draws the axis line, a tickcolor the ticks); from a template they only colour it. Written into the
# layout, each is kept only where its feature is shown anyway: said so by the axis, or Plotly's default for it.
_SWITCHED_ON_BY = {"linecolor": "showline", "linewidth": "showline", "tickcolor": "ticks", "ticklen": "ticks",
                   "tickwidth": "ticks", "gridcolor": "showgrid", "gridwidth": "showgrid", "griddash": "showgrid",
                   "zerolinecolor": "zeroline", "zerolinewidth": "zeroline"}
ORIENTED = {"bar", "box", "violin", "funnel", "waterfall", "histogram"}  # no grid along their category axis
MAPS = {"heatmap", "contour", "histogram2d", "histogram2dcontour"}  # ticks outside on both axes


def _axis_under(axis, default: dict, shown: dict) -> dict:
    """An axis over the template's axis defaults as Plotly applies a template; `shown`: Plotly's default for each
    switch on this axis (see _SWITCHED_ON_BY)."""
    axis = _under(axis, {k: v for k, v in default.items() if k not in _SWITCHED_ON_BY})
    for k, switch in _SWITCHED_ON_BY.items():
        if k in default and k not in axis and (switch in axis or shown[switch]):
            axis[k] = copy.deepcopy(default[k])
    return axis


def _axes_of(trace: dict) -> tuple[str, str]:
    """The layout keys of a cartesian trace's axes: x2 -> "xaxis2"."""
    return "xaxis" + trace.get("xaxis", "x")[1:], "yaxis" + trace.get("yaxis", "y")[1:]


def _defaults_shown(data: list):
    """axis name -> {switch: shown by default}, as Plotly decides from the traces on the axis."""
    no_grid, ticks = set(), set()
    for t in data:
        kind = t.get("type", "scatter")
        x, y = _axes_of(t)
        if kind in ORIENTED:
            no_grid.add(y if t.get("orientation") == "h" else x)
        if kind in MAPS:
            ticks |= {x, y}
    return lambda axis: {"showline": False, "ticks": axis in ticks, "showgrid": axis not in no_grid,
                         "zeroline": axis not in no_grid}


def _inline(data: list, layout: dict) -> dict:
    """The layout with its template's layout written into it (every axis a trace uses, every annotation), template
    "none", and a fixed datarevision. A template with trace defaults stays (only the datarevision is set)."""
    layout = dict(layout)
    template = layout.get("template")
    if isinstance(template, dict) and not template.get("data"):
        data = [t if isinstance(t, dict) else t.to_plotly_json() for t in data]
        axes = {k for k in layout if _AXIS.fullmatch(k)}
        for t in data:
            if t.get("type", "scatter") in CARTESIAN:
                axes |= set(_axes_of(t))
        shown = _defaults_shown(data)
        for key, default in (template.get("layout") or {}).items():
            if key in ("xaxis", "yaxis"):
                for axis in axes:
                    if axis[0] == key[0]:
                        layout[axis] = _axis_under(layout.get(axis), default, shown(axis))
            elif key.endswith("defaults"):  # annotationdefaults: every item of layout.annotations
                items = key[: -len("defaults")] + "s"
                if layout.get(items):
                    layout[items] = [_under(item, default) for item in layout[items]]
            else:
                layout[key] = _under(layout.get(key), default)
        layout["template"] = "none"
    layout.setdefault("datarevision", 1)
    return layout


def for_browser(fig: go.Figure) -> go.Figure:
    """The same chart, drawn once in the browser (see above). build()'s figures are ready as they are."""
    if fig.layout.datarevision is not None:
        return fig
    spec = fig.to_plotly_json()
    return go.Figure({**spec, "layout": _inline(spec["data"], spec.get("layout") or {})}, _validate=False)


@functools.lru_cache(maxsize=128)
def _grid(rows: int, cols: int, titled: tuple, options: str) -> tuple[str, tuple]:
    """make_subplots' layout for one grid shape, computed once: its axes' domains and anchors and the subplot
    title annotations (placeholders), as JSON, and each cell's (x axis, y axis) layout names."""
    opts = json.loads(options)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(i) if t else "" for i, t in enumerate(titled)],
                        **opts)
    layout = fig.to_dict()["layout"]
    layout.pop("template", None)  # build() applies the default template itself
    cells = tuple(tuple((fig.get_subplot(r + 1, c + 1).xaxis.plotly_name,
                         fig.get_subplot(r + 1, c + 1).yaxis.plotly_name)
                        for c in range(cols)) for r in range(rows))
    return json.dumps(layout), cells


def grid(rows: int, cols: int, titles: list[str], **options) -> tuple[dict, tuple]:
    """make_subplots(rows, cols, subplot_titles=titles, **options) as a fresh layout dict (fill it in, then
    build()) and cells[r][c] = (x axis, y axis) layout names, e.g. ("xaxis2", "yaxis2"); a trace in that cell
    takes **ref(cells[r][c])."""
    titles = list(titles) + [""] * (rows * cols - len(titles))
    text, cells = _grid(rows, cols, tuple(bool(t) for t in titles), json.dumps(options, sort_keys=True))
    layout = json.loads(text)
    for a in layout.get("annotations", []):
        a["text"] = titles[int(a["text"])]
    return layout, cells


def ref(cell: tuple) -> dict:
    """A trace's axis references for a grid cell: ("xaxis2", "yaxis2") -> xaxis="x2", yaxis="y2"."""
    x, y = cell
    return dict(xaxis=x.replace("axis", ""), yaxis=y.replace("axis", ""))
