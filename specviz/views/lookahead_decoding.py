"""The Lookahead decoding page's view of one target pass, with plain Jacobi after as many passes beside it."""
from __future__ import annotations

from specviz.figures import lookahead as L
from specviz.views import Event

MASK = "The attention mask of this pass"


def lookahead_event(steps: list, n: int, jacobi: list, last: bool) -> Event:
    """Pass n (steps: the run's passes so far; jacobi: plain Jacobi's steps, as many as its run has up to pass n)."""
    step = steps[n]
    j = min(step.step, len(jacobi) - 1)  # plain Jacobi after the same number of target passes, if its run got there
    e = Event([L.heading(step, last)])
    # full width: at W = 10 a half-width column leaves no room for the cells' text
    e.chart(L.window_figure, step, key="la_window_fig")
    e.chart(L.candidates_figure, step, key="la_cand_fig")
    e.add("caption", L.cache_caption(step))
    e.add("metrics", L.metrics(steps[: n + 1], jacobi[: j + 1]))
    if j >= 0:
        e.chart(L.jacobi_figure, jacobi[j], key="la_jacobi_fig")
        e.add("caption", L.JACOBI_CAPTION)
    e.chart(L.progress_figure, steps[: n + 1], jacobi[: j + 1], key="la_progress", shared=False)
    e.chart(L.mask_figure, step, key="la_mask_fig", fold=MASK)
    e.add("caption", L.MASK_CAPTION, fold=MASK)
    e.add("caption", L.CPU_CAPTION)
    return e
