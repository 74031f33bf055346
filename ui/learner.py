"""Who is practising: a name typed once in the sidebar keys the learner's progress in the server's store
(specviz.practice.progress: SQLite, or PostgreSQL for a cohort). No password: a name keeps progress apart, it does not
protect it (a server binds to 127.0.0.1 unless its teacher opens it to a class)."""
from __future__ import annotations

import streamlit as st

from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.practice.progress import MAX_NAME, Progress


@st.cache_resource(show_spinner=False)
def _store() -> Progress | SpecVizError:
    """One store per server process (SPECVIZ_DB: a SQLite file, or a cohort's postgresql:// URL; else the user's
    cache folder). A store that cannot be opened is kept as its one-sentence error: not retried on every rerun (an
    unreachable host takes seconds to say so), shown in the sidebar, and practice goes on without keeping progress."""
    try:
        return Progress()
    except SpecVizError as e:
        return e


def progress() -> Progress:
    """The server's store (called once current() has given a learner, so it opened)."""
    store = _store()
    if isinstance(store, SpecVizError):
        raise store
    return store


def _on_name():
    st.session_state["s_learner"] = st.session_state.get("w_learner", "")


def name_box(container) -> None:
    """The sidebar's name box (every page draws it, so the name is typed once per session)."""
    st.session_state.setdefault("s_learner", "")
    st.session_state["w_learner"] = st.session_state["s_learner"]
    container.text_input("Your name (keeps your practice progress)", key="w_learner", max_chars=MAX_NAME,
                         on_change=_on_name, placeholder="e.g. Ada",
                         help="Progress (quiz boxes, drills, predictions, mock interviews) is kept in this "
                              "server's database (a SQLite file, or a class's PostgreSQL) under this name. No "
                              "password: anyone using this server can type the same name.")
    if isinstance(_store(), SpecVizError):  # once per page, under the box it concerns
        container.warning(md_escape(str(_store())) + " Practice works; nothing is kept.")


def name_hint(without_name: str) -> str:
    """What a page says where progress is not being kept: the page's own invitation to type a name, or, when this
    server's store cannot be opened, that nothing is kept whatever the name (the sidebar says why)."""
    if isinstance(_store(), SpecVizError):
        return "This server cannot keep progress right now (the sidebar says why): practice works, nothing is stored."
    return without_name


def current() -> int | None:
    """The learner's id, or None before a name is typed (practice then works, but nothing is kept)."""
    name = st.session_state.get("s_learner", "")
    if not name:
        return None
    if isinstance(_store(), SpecVizError):  # said under the name box
        return None
    try:
        return progress().learner(name)
    except SpecVizError as e:
        st.sidebar.warning(md_escape(str(e)))
        return None


def count_prediction(page: str, key, right: int, total: int) -> tuple[int, int]:
    """A revealed prediction on a step page, counted once however often its screen is shown (Back, replays): kept
    for the session and recorded under the learner's name. Returns the session's (right, total) on that page."""
    done = st.session_state.setdefault(f"pred_done_{page}", {})
    if key not in done and total:
        done[key] = (right, total)
        me = current()
        if me is not None:
            progress().record_prediction(me, page, right, total)
    return sum(r for r, _ in done.values()), sum(t for _, t in done.values())
