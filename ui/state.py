"""Settings that survive: session keys with defaults, widget values kept across page switches (keep), a page's
settings read from its link on a first visit (linked, bounded, slider) and re-read when Back or Forward returns to
an address this session wrote (history_visit)."""
from __future__ import annotations

import plotly.io as pio
import streamlit as st

from specviz.figures import md_escape

# every page imports this module (through ui.sidebar): the specviz look over Streamlit's, which importing streamlit
# set (specviz.figures.TEMPLATE)
pio.templates.default = "specviz"


def persist(name: str, default):
    """A plain (non-widget) session key with a default: it lives as long as the session."""
    if name not in st.session_state:
        st.session_state[name] = default
    return st.session_state[name]


def keep(key: str) -> None:
    """Call just before creating the widget `key`. Streamlit drops a widget's value at the end of any run
    that does not draw it (another page), so a page's settings would reset on every page switch; a shadow
    key carries the value across. The widget is then created WITHOUT value=/index= (its value comes from
    session state), which is also what keeps Streamlit's "created with a default value but also had its
    value set via the Session State API" warning out of the log."""
    shadow = "_keep_" + key
    if key in st.session_state:
        st.session_state[shadow] = st.session_state[key]
    elif shadow in st.session_state:
        st.session_state[key] = st.session_state[shadow]


def kept(key: str, default):
    """A setting kept across page switches (keep) with a first value: the widget is then created with key= and no
    value= (select_slider, radio, toggle, selectbox; sliders and numbers use slider / bounded). Returns the key."""
    keep(key)
    st.session_state.setdefault(key, default)
    return key


def mirror(key: str, canonical: str) -> None:
    """Sidebar widgets mirror a canonical key (s_*), which code, tests and links may set: put its value in
    the widget's key before the widget is drawn, on every run (never value=, see keep). Every run, because
    the sidebar's widgets are new widgets on each page (Streamlit's widget ids include the page), so on a
    page switch the key still holds the old page's value while the new widget would start from its default."""
    st.session_state[key] = st.session_state[canonical]


def copy_to(src: str, dst: str):
    def cb():
        st.session_state[dst] = st.session_state[src]
    return cb


def page_hash() -> str:
    """The page this run draws (Streamlit's page script hash)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx else ""


def owned(kind: str, key: str) -> None:
    """Note that `key` (a setting or a replay) belongs to this page: a Back/Forward to it re-reads them from the URL."""
    st.session_state.setdefault("owned", {}).setdefault((page_hash(), kind), set()).add(key)


def history_visit() -> None:
    """Back or Forward lands on this page at settings and a step this session wrote into the address bar earlier:
    take them as a link's first visit would. Streamlit keeps every URL change in the browser's history; without
    this the page wrote its current state back over the one Back went to, and Back did nothing. Only the page's
    own earlier addresses count, and only when the browser moved in its history (not a click racing the address
    bar's update): a page switch from the sidebar keeps the state."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if not (ctx and ctx.is_history_navigation):
        return
    page, now = ctx.page_script_hash, dict(st.query_params)
    earlier = st.session_state.get("_written", {}).get(page, [])
    if not now or now not in earlier or now == earlier[-1]:
        return
    owned = st.session_state.get("owned", {})
    for key in owned.get((page, "setting"), ()):
        st.session_state.pop(key, None)
        st.session_state.pop("_keep_" + key, None)
    for name in owned.get((page, "replay"), ()):
        st.session_state.pop(name, None)  # its Run (ui/stepping.py): cursor, play state, link
    st.session_state.pop("s_url_read", None)  # the prompt and chat too


ON_OFF = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def linked(key: str, param: str, options: dict | None = None) -> None:
    """Call just before creating a setting's widget: on a first visit its value comes from the URL (?param=...)
    when the link names one of `options` (URL value -> widget value; no options: a text widget, given the text as
    it is, which the page checks like typed text); then it is kept across page switches like every setting.
    keep() comes after the link's value is written: the Steps that follow are fragment reruns, which never run
    keep() again, so a value kept only later would be lost on a page switch."""
    owned("setting", key)
    value = st.query_params.get(param)
    first = key not in st.session_state and "_keep_" + key not in st.session_state
    if first and value is not None and (options is None or value in options):
        st.session_state[key] = value if options is None else options[value]
    keep(key)


def bounded(key: str, lo, hi, default, param: str | None = None, name: str = ""):
    """A widget's value from the URL (?param=...) on first visit, or from session state, checked
    against [lo, hi] before the widget sees it: out-of-range or malformed values are clamped with a
    notice instead of crashing the widget."""
    if param:
        owned("setting", key)
    keep(key)
    raw = st.query_params.get(param) if param and key not in st.session_state else None
    value = raw if raw is not None else st.session_state.get(key, default)
    kind = type(default)
    try:
        v = kind(float(value)) if kind is int else kind(value)
        if v != v:  # NaN
            raise ValueError
    except (TypeError, ValueError):
        st.warning(f"{name or key}: {md_escape(str(value))!s} is not a number; using {default}.")
        v = default
    if not lo <= v <= hi:
        clamped = min(max(v, lo), hi)
        st.warning(f"{name or key} = {v} is outside [{lo}, {hi}]; using {clamped}.")
        v = clamped
    if st.session_state.get(key) != v:
        st.session_state[key] = v
    # the shadow too: a value from the URL followed only by fragment reruns (Step) never meets keep() with the
    # widget's key set, so without this a page switch would lose it and reset the run
    st.session_state["_keep_" + key] = v
    return v


def slider(container, label: str, key: str, lo, hi, default, param: str | None = None, step=None, **kw):
    """A slider whose range is written once: its value from the URL or session state, checked against
    [lo, hi] first (bounded), then the widget."""
    if hi <= lo:  # one value only (e.g. early-exit layers on a 2-layer target): a slider cannot have min == max
        st.session_state[key] = st.session_state["_keep_" + key] = lo
        container.caption(f"{label}: {lo} (the only value this model allows)")
        return lo
    bounded(key, lo, hi, default, param, label)
    return container.slider(label, lo, hi, step=step, key=key, **kw)
