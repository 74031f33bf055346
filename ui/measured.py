"""Measurements a page starts on a button (issue 45, item D): a page opens at once, and what takes seconds (a
recorded run, timed decoding) runs when the learner asks, under a status box. Each result is kept per settings for
the whole server (every session opening the page at the same settings sees it at once); each session remembers the
settings of what it last saw, so when a setting changes after a measurement the old figures stay on screen, marked
stale, until the button measures the new settings."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from specviz.figures import md_escape

PER_SECTION = 16  # results kept per section, least recently used out


@dataclass
class Measured:
    value: Any
    stale: bool  # measured at other settings than the page's current ones
    measured_for: str  # the settings it was measured at, in words
    key: Any = None  # ... and as the key it is kept under


class _Results:
    """{(section, key): (settings in words, result)}, shared by every session of this server."""

    def __init__(self):
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, section: str, key):
        with self.lock:
            hit = self.items.get((section, key))
            if hit is not None:
                self.items.move_to_end((section, key))
            return hit

    def put(self, section: str, key, described: str, value) -> None:
        with self.lock:
            self.items[(section, key)] = (described, value)
            self.items.move_to_end((section, key))
            mine = [k for k in self.items if k[0] == section]
            for old in mine[:max(0, len(mine) - PER_SECTION)]:
                del self.items[old]


@st.cache_resource(show_spinner=False)
def results() -> _Results:
    return _Results()


def on_button(section: str, key, described: str, label: str, work: Callable[[], Any], *, where=None,
              again: str | None = None, status: str = "Measuring…", expanded: bool = False, help: str | None = None,
              disabled: bool = False, todo: str = "measure at the current settings") -> Measured | None:
    """The result of work() for `key` (the settings it depends on, hashable), measured when the button `label`
    (widget key `section`) is pressed; the button is drawn in `where` (a column; default the page). With a result at
    this key it is shown, the button then labelled `again` (None: no button, measuring again would give the same).
    Without one, the last result this session saw is returned marked stale, with a note saying so; with none, a note
    saying what the button does (`todo`), and None. `described` names the current settings in words (the stale
    note's)."""
    where = where or st
    store = results()
    seen = st.session_state.setdefault("_measured_for", {})
    hit = store.get(section, key)
    if hit is None or again is not None:
        if where.button(label if hit is None else again, key=section, help=help, disabled=disabled):
            with st.status(status, expanded=expanded) as box:  # expanded: work() draws its own progress in it
                value = work()
                box.update(label=status.rstrip("…") + ": done", state="complete", expanded=False)
            store.put(section, key, described, value)
            seen[section] = key
            st.rerun()  # draw the page once more from the top, the new figures in place of the status box
    if hit is not None:
        seen[section] = key
        return Measured(hit[1], False, hit[0], key)
    earlier = seen.get(section)
    old = store.get(section, earlier) if earlier is not None else None
    if old is None:
        st.info(f"Press **{md_escape(label)}** to {todo}.")
        return None
    was = (f"for {md_escape(old[0])}; the settings now say {md_escape(described)}" if old[0] != described
           else "before the prompt, the chat template or the models changed")
    st.warning(f"**Stale figures:** what follows was measured {was}. Press **{md_escape(label)}** to measure the "
               "current settings.", icon="⏳")
    return Measured(old[1], True, old[0], earlier)


def left_in_words(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s left"
    return f"about {seconds / 60:.0f} min left"


class ProgressBar:
    """st.progress that says how long is left, from the pace so far (a walk found a 4.6-minute run whose bar
    read only "200/400 samples": without a time it looks hung). Pass it as a measurement's `progress`."""

    def __init__(self, text: str):
        self.bar, self.start = st.progress(0.0, text=text), time.monotonic()

    def __call__(self, fraction: float, message: str) -> None:
        fraction, spent = min(max(float(fraction), 0.0), 1.0), time.monotonic() - self.start
        # the pace is a guess until a little of the run is done; a run nearly over needs no estimate
        left = spent * (1 - fraction) / fraction if fraction >= 0.05 and spent >= 3 else 0.0
        self.bar.progress(fraction, text=message + (f" — {left_in_words(left)}" if left >= 5 else ""))

    def empty(self) -> None:
        self.bar.empty()
