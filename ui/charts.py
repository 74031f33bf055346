"""Every chart through one call (chart), and figures built once per server for the same trace events (figure)."""
from __future__ import annotations

import streamlit as st

from specviz.figures import for_browser
from ui.cache import SharedLRU


def chart(fig, key: str, container=None, **kw) -> None:
    """Every chart through one call: Plotly's toolbar shown (on hover, top right) with its camera saving the
    chart as PNG or SVG (the sidebar's "Chart download format"), named after the chart's key."""
    fmt = st.session_state.get("s_chart_format", "png")
    config = {"displayModeBar": "hover", "displaylogo": False,  # hover: never over a title when not in use
              "modeBarButtonsToRemove": ["lasso2d", "select2d"],
              "toImageButtonOptions": {"format": fmt, "filename": f"specviz_{key}",
                                       **({"scale": 2} if fmt == "png" else {})}}
    # theme=None: the charts carry their own look (specviz.figures.TEMPLATE); Streamlit's theme, applied in the
    # browser, made Plotly draw every new chart twice (see there)
    # for_browser: Plotly draws it once, not twice (specviz.figures, "drawn once, not twice")
    (container or st).plotly_chart(for_browser(fig), key=key, config=config, theme=None, **kw)


class Figures(SharedLRU):
    """Figures already built, shared by every session: a figure is a pure function of trace events, which
    are immutable and shared (the recordings), so a figure for the same events is built once per server and
    a Step rebuilds only the charts that changed. Keyed by the builder and its arguments' identities (the
    arguments are kept with the figure, so an identity is never reused while its entry lives)."""

    def __init__(self, size: int = 256):
        super().__init__(size)

    def get(self, builder, args, kwargs):
        ident = lambda v: v if isinstance(v, (int, float, str, bool, type(None))) else ("id", id(v))  # noqa: E731
        key = (builder.__module__, builder.__qualname__, tuple(ident(a) for a in args),
               tuple(sorted((k, ident(v)) for k, v in kwargs.items())))
        return super().get(key, lambda: (builder(*args, **kwargs), args, kwargs))[0]


@st.cache_resource(show_spinner=False)
def figures() -> Figures:
    return Figures()


def figure(builder, *args, **kwargs):
    """builder(*args, **kwargs), built once per server for the same (immutable, shared) trace events: pass
    the events themselves (a Cycle, replay.events), not copies or slices, so the identities match."""
    return figures().get(builder, args, kwargs)
