"""The views layer: what a step page shows at each cursor position, as data (issue 46).

For each step page (Beam search, Speculative decoding, Tree speculation, Lookahead decoding) one pure function turns
the trace and the cursor's event into an Event: a heading per phase and the items the page shows, each tagged with
the phases it shows at. Two renderers draw the same Events: the page's (ui/views.py, with Streamlit) and the
offline lesson's (specviz/lesson.py, into its HTML player). So page and lesson cannot drift apart: a caption added
here appears in both, and tests/test_lesson.py checks at every step that they show the same items.

No Streamlit here, no math: the sentences and figures come from specviz.figures, the numbers from the trace."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ITEM_KINDS = ("chart", "markdown", "caption", "info", "heading", "html", "pre", "metrics", "slot")


@dataclass(frozen=True)
class Chart:
    """A figure not yet built: build(*args, **kwargs). The page builds it only when it is on screen, once per server
    for the same trace events (shared=True: the arguments are the recording's own immutable events); the lesson
    builds every one."""
    build: Callable
    args: tuple = ()
    kwargs: tuple = ()  # (name, value) pairs: a frozen dataclass keeps no dict
    shared: bool = True

    def figure(self):
        return self.build(*self.args, **dict(self.kwargs))


@dataclass(frozen=True)
class Item:
    """One thing a page shows, from phase `at` up to, not including, `until` (None: to the event's end).

    kind: chart (value a Chart) · markdown, caption, info (value Markdown) · heading (plain text) · html (value
    HTML whose every piece of text is escaped already) · pre (plain text kept as typed) · metrics (value rows
    (label, value, help[, delta[, neutral]]): neutral deltas are drawn without colour or arrow) · slot (value a
    name: an interactive part only the page has, e.g. its predictions; the lesson leaves it out)."""
    kind: str
    value: object
    at: int = 0
    until: int | None = None
    key: str = ""  # the page's element key (a chart's): the same chart is updated in place from step to step
    row: tuple[str, int, int] | None = None  # (row name, column, columns): side by side with its row's items
    fold: str = ""  # inside a folded section with this title (the page's expander)

    def __post_init__(self):
        assert self.kind in ITEM_KINDS, self.kind


@dataclass
class Event:
    """One event of a run (a beam step, a speculative cycle, a tree cycle, a lookahead pass) as its page shows it:
    a heading per phase and the items."""
    titles: list[str]
    items: list[Item] = field(default_factory=list)

    def add(self, kind: str, value, at: int = 0, until: int | None = None, **place) -> None:
        self.items.append(Item(kind, value, at, until, **place))

    def chart(self, build: Callable, *args, at: int = 0, until: int | None = None, key: str = "",
              shared: bool = True, row=None, fold: str = "", **kwargs) -> None:
        self.items.append(Item("chart", Chart(build, args, tuple(kwargs.items()), shared), at, until, key, row, fold))

    def shown(self, phase: int) -> list[Item]:
        return [i for i in self.items if i.at <= phase and (i.until is None or phase < i.until)]


def whole_run(event: Callable[..., Event], events: list, *args, **kwargs) -> list[Event]:
    """Every event of a recorded run through its page's view function (the lesson shows them all)."""
    return [event(events, n, *args, last=n == len(events) - 1, **kwargs) for n in range(len(events))]
