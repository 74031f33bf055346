"""The page's renderer of the views layer (specviz/views): an Event's items at the cursor's phase, drawn with
Streamlit. The offline lesson draws the same Events (specviz/lesson.py)."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from specviz.views import Chart, Event, Item
from ui.charts import chart, figure

METRICS_PER_ROW = 3


def render(event: Event, phase: int, slots: dict[str, Callable[[], None]] | None = None) -> None:
    """The heading, then every item shown at this phase in order: a row's items side by side in its columns, a fold's
    inside one expander. slots: the page's own interactive parts, by the name the view gives their place."""
    st.markdown(event.titles[phase])
    box, fold, row, columns = st, "", None, None
    for item in event.shown(phase):
        if item.fold != fold:
            fold, row = item.fold, None
            box = st.expander(fold, expanded=False) if fold else st
        if item.row and item.row[0] != row:
            columns = box.columns(item.row[2], gap="small")
        row = item.row[0] if item.row else None
        draw(item, columns[item.row[1]] if item.row else box, slots or {})


def draw(item: Item, place, slots: dict) -> None:
    kind, value = item.kind, item.value
    if kind == "chart":
        assert isinstance(value, Chart)
        chart(figure(value.build, *value.args, **dict(value.kwargs)) if value.shared else value.figure(),
              key=item.key, container=place)
    elif kind == "markdown":
        place.markdown(value)
    elif kind == "caption":
        place.caption(value)
    elif kind == "info":
        place.info(value)
    elif kind == "heading":
        place.subheader(value)
    elif kind == "html":
        place.markdown(value, unsafe_allow_html=True)
    elif kind == "pre":  # monospace, so the beams' padded scores line up; long outputs wrap
        place.code(value, language=None, wrap_lines=True)
    elif kind == "metrics":
        # at most METRICS_PER_ROW side by side: six in one row cut their labels and values short below ~1900 px
        width = min(len(value), METRICS_PER_ROW)
        cells = [place] if width == 1 else [c for i in range(0, len(value), width) for c in place.columns(width)]
        for cell, (label, shown, about, *delta) in zip(cells, value):
            neutral = len(delta) > 1 and delta[1]
            cell.metric(label, shown, help=about, delta=delta[0] if delta else None,
                        delta_color="off" if neutral else "normal", delta_arrow="off" if neutral else "auto")
    elif kind == "slot" and value in slots:
        if place is st:
            slots[value]()
        else:
            with place:
                slots[value]()
