"""Work made before it is asked for (the Practice page's next live drill), one worker per process, the model run
under the engine lock every step page takes (ui.stepping.engine_lock): a drill made in the background never runs
the model at the same time as a Step, which would only oversubscribe the cores."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st

from ui.stepping import engine_lock

KEPT = 256  # futures kept per process, the oldest dropped


@st.cache_resource(show_spinner=False)
def _worker():
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch"), {}


def _locked(work, args):
    with engine_lock():
        return work(*args)


def ahead(key, work, *args) -> Future:
    """The future of work(*args), submitted once per process for `key` (hashable: what the result depends on)."""
    pool, futures = _worker()
    if key not in futures:
        if len(futures) > KEPT:
            futures.pop(next(iter(futures)))
        futures[key] = pool.submit(_locked, work, args)
    return futures[key]
