"""Shared by every page: the sidebar (prompt, chat template, models, device), the model cache, settings that
survive page switches, the address bar kept in step with a page's settings (a link reopens the same screen),
and the Step / Back / Play / Run to end / Reset controls (keys → ← Space) over a Replay kept in
st.session_state, whose trace is recorded once per server for everyone who asks for the same run."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import urllib.parse
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from specviz.errors import SpecVizError  # noqa: E402
from specviz.figures import for_browser, md_escape  # noqa: E402
import plotly.io as pio  # noqa: E402

pio.templates.default = "specviz"  # over Streamlit's, set when streamlit was imported (specviz.figures.TEMPLATE)
from specviz.models import MAX_MODEL_NAME, pick_device  # noqa: E402
from specviz.prompting import context_size, encode_prompt  # noqa: E402
from ui.registry import leave_pages_folder_mode  # noqa: E402

CURATED = {  # the first is the default: cycle 1 of the default Speculative page accepts all 4 drafts (a test holds it)
    "Sum a list in Python (chat)": "Write a Python function that returns the sum of a list.",
    "Explain a hash table (chat)": "Explain how a hash table works.",
    "Explain beam search (chat)": "Explain beam search in two sentences.",
    "What is 2+2? (beam beats greedy)": "What is 2+2?",
    "Refactor code (n-gram)": (
        "Add type hints to this function and return the whole function:\n\n"
        "def average(values):\n    total = 0\n    for value in values:\n        total = total + value\n"
        "    return total / len(values)\n"),
    "Surreal poem (drafts miss)": "Write a surreal poem about a violin made of fog and a clock that eats oranges.",
}
OWN = "Your own prompt"


@dataclass(frozen=True)
class Settings:
    prompt: str
    chat: bool
    target: str | None
    draft: str | None
    device: str


def _persist(name: str, default):
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


def _widget(key: str, canonical: str) -> None:
    """Sidebar widgets mirror a canonical key (s_*), which code, tests and links may set: put its value in
    the widget's key before the widget is drawn, on every run (never value=, see keep). Every run, because
    the sidebar's widgets are new widgets on each page (Streamlit's widget ids include the page), so on a
    page switch the key still holds the old page's value while the new widget would start from its default."""
    st.session_state[key] = st.session_state[canonical]


def _copy(src: str, dst: str):
    def cb():
        st.session_state[dst] = st.session_state[src]
    return cb


def _page() -> str:
    """The page this run draws (Streamlit's page script hash)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx else ""


def _owned(kind: str, key: str) -> None:
    """Note that `key` (a setting or a replay) belongs to this page: a Back/Forward to it re-reads them from the URL."""
    st.session_state.setdefault("_owned", {}).setdefault((_page(), kind), set()).add(key)


def _history_visit() -> None:
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
    owned = st.session_state.get("_owned", {})
    for key in owned.get((page, "setting"), ()):
        st.session_state.pop(key, None)
        st.session_state.pop("_keep_" + key, None)
    for name in owned.get((page, "replay"), ()):
        for suffix in ("", "_step_read", "_playing"):
            st.session_state.pop(name + suffix, None)
    st.session_state.pop("s_url_read", None)  # the prompt and chat too


def _from_url() -> None:
    """A shared link can carry the prompt (?prompt=...&chat=0); read once, on a session's first run."""
    if st.session_state.get("s_url_read"):
        return
    st.session_state["s_url_read"] = True
    q = st.query_params
    if "prompt" in q:
        st.session_state["s_prompt"] = q["prompt"]
        st.session_state["s_choice"] = _name_of(q["prompt"])
    if "chat" in q:
        st.session_state["s_chat"] = q["chat"] not in ("0", "false", "no")
    for role in ("target", "draft"):  # the pair (ui/models.py checks it like a typed name)
        if role in q:
            st.session_state["s_" + role] = q[role][:MAX_MODEL_NAME + 1]


def _name_of(prompt: str) -> str:
    """The curated prompt's name for this text, or "Your own prompt"."""
    return next((name for name, text in CURATED.items() if text == prompt), OWN)


CHART_FORMATS = ["png", "svg"]


# While a rerun is under way Streamlit fades the elements it has not redrawn yet (opacity to 0.33, after 0.5 s, over
# 1 s). Faded in 1 s that is an animation: ~60 frames for the browser to composite per wait, and in a classroom the
# waits are long and the browsers many. Same cue, same 0.5 s grace before it, in one step: one frame.
STALE_CSS = ("<style>[data-stale=true] { transition: opacity 0s linear 0.5s !important; }"
             # A step page's control row stays at the top of the window while the learner scrolls down to the
             # Step's result (on a 1280×720 laptop every result is below the fold): sticky, just under the
             # app's header, on the page's own background
             "div:has(> div[class*='st-key-'][class*='_controls']) {"
             " position: sticky; top: 3.75rem; z-index: 50; background: var(--st-background-color, #fff);"
             " padding: 0.35rem 0; }"
             # compact buttons in that row: at 1280 px it wrapped to two rows and, sticky, covered the metrics
             "div[class*='st-key-'][class*='_controls'] { gap: 0.4rem !important; }"
             "div[class*='st-key-'][class*='_controls'] button { padding: 0.2rem 0.55rem; min-height: 2.2rem; }"
             "</style>")


def sidebar() -> Settings:
    st.html(STALE_CSS)  # style only: Streamlit puts it in the page's event container, taking no room
    leave_pages_folder_mode()
    _history_visit()
    _from_url()
    sb = st.sidebar
    sb.markdown("### Prompt")
    names = list(CURATED) + [OWN]
    if _persist("s_choice", names[0]) not in names:
        st.session_state["s_choice"] = OWN
    prompt = _persist("s_prompt", CURATED[names[0]])
    if st.session_state["s_choice"] != OWN and CURATED[st.session_state["s_choice"]] != prompt:
        st.session_state["s_choice"] = _name_of(prompt)  # the prompt was set in code or by a link
    _widget("w_choice", "s_choice")
    sb.selectbox("Curated prompts", names, key="w_choice", on_change=_on_choice)
    _widget("w_prompt", "s_prompt")
    sb.text_area("Prompt text", key="w_prompt", height=120, on_change=_on_prompt,
                 help="Edit freely; changing it resets the runs on every page.")
    chat = _persist("s_chat", True)
    _widget("w_chat", "s_chat")
    sb.toggle("Chat template", key="w_chat", on_change=_copy("w_chat", "s_chat"),
              help="Wrap the prompt in the model's chat template (system + user turn + assistant header).")
    device = str(pick_device())
    from ui.models import section
    target, draft = section(sb, device, _loaded())
    st.session_state["s_pair_active"] = (target, draft)
    st.session_state["_run_serial"] = st.session_state.get("_run_serial", 0) + 1  # get_models notes once per run
    from ui.learner import name_box
    name_box(sb)
    _persist("s_chart_format", "png")
    _widget("w_chart_format", "s_chart_format")
    sb.radio("Chart download format", CHART_FORMATS, key="w_chart_format", horizontal=True,
             format_func=str.upper, on_change=_copy("w_chart_format", "s_chart_format"),
             help="What the camera icon in a chart's toolbar (top right of every chart, on hover) saves.")
    from specviz import packed
    sb.caption(f"Device: **{device}**" + (" · linear layers packed for oneDNN" if device == "cpu" and packed.available()
                                          else ""))
    return Settings(prompt, chat, target, draft, device)


def _on_choice():
    choice = st.session_state["w_choice"]
    st.session_state["s_choice"] = choice
    if choice in CURATED:
        st.session_state["s_prompt"] = CURATED[choice]
        st.session_state["w_prompt"] = CURATED[choice]


def _on_prompt():
    """Edited text: the picker follows (the curated name when the text is one, else "Your own prompt")."""
    text = st.session_state["w_prompt"]
    st.session_state["s_prompt"] = text
    st.session_state["s_choice"] = st.session_state["w_choice"] = _name_of(text)


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


@st.cache_resource(show_spinner=False, max_entries=3)
def _load_models(target, draft, device):
    from specviz.models import load_models

    return load_models(target, draft, device)


@st.cache_resource(show_spinner=False)
def _loaded() -> set:
    return set()


def get_models(settings: Settings):
    """The (read-only, shared) models; a status box the first time this process loads them. A pair that passed the
    sidebar's checks but that transformers cannot load is remembered as failed, and the page runs again on the pair
    before it (ui/models.py); with the default pair failing there is nothing to fall back to: the message, and stop."""
    from ui.models import failed_load, page_note

    key = (settings.target, settings.draft, settings.device)
    # One element on every run, drawn or not: the status box only on the first load would shift every later
    # element's position between runs, and Streamlit then shows the old and the new controls together while
    # a fragment plays (the "control row twice" bug)
    slot = st.empty()
    try:
        if key in _loaded():
            models = _load_models(*key)
        else:
            with slot.status("Loading models… (the first start converts the embedded GGUF, ~20 s)", expanded=False) as box:
                models = _load_models(*key)
                # every drafter the pages offer beside the draft model: the feature draft is the Speculative default
                heads = [name for name, m in (("feature draft", models.feature_draft), ("Medusa heads", models.medusa))
                         if m is not None]
                box.update(label="Models ready: target + " + ", ".join([models.draft_name] + heads), state="complete")
            _loaded().add(key)
    except SpecVizError as e:
        if (settings.target, settings.draft) != (None, None):
            failed_load(settings.target, settings.draft, str(e))
            st.rerun()
        st.error(md_escape(str(e)))
        st.stop()
    st.session_state["s_pair_ok"] = (settings.target, settings.draft)
    serial = st.session_state.get("_run_serial", 0)
    if st.session_state.get("_noted") != serial:  # once per run (a page may ask for the models twice)
        st.session_state["_noted"] = serial
        page_note(models, settings.target)
    return models


def encode(models, settings: Settings, max_new_tokens: int) -> list[int]:
    try:
        return encode_prompt(models.tokenizer, settings.prompt, settings.chat, context_size(models.target), max_new_tokens)
    except SpecVizError as e:
        st.warning(md_escape(str(e)))
        st.stop()


class _Recordings:
    """Recorded traces shared by every session of this server, keyed by page and settings: the same prompt and
    settings give the same trace (runs are deterministic given their settings and seed), so a classroom on
    one prompt computes each step once. Bounded (least recently used out); a session keeps its own reference
    to the recording it walks, so an evicted one lives on for the sessions still on it."""

    def __init__(self, size: int = 24):
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key, factory):
        from specviz.replay import Recording

        with self.lock:
            rec = self.items.get(key)
            if rec is not None:
                self.items.move_to_end(key)
                return rec
        rec = Recording(factory())  # outside the lock: building a drafter may take a moment
        with self.lock:
            rec = self.items.setdefault(key, rec)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return rec


@st.cache_resource(show_spinner=False)
def recordings() -> _Recordings:
    return _Recordings()


@st.cache_resource(show_spinner=False)
def _engine_lock() -> threading.Lock:
    return threading.Lock()


def _one_at_a_time(steps):
    """The step generator with every step computed under one process-wide lock: PyTorch already uses both
    cores for one forward pass, so sessions computing at once only oversubscribe the cores (each waits as
    long as all together); taking turns, a step finishes in its own time and the queue drains sooner."""
    lock = _engine_lock()
    while True:
        with lock:
            try:
                event = next(steps)
            except StopIteration as stop:
                return stop.value
        yield event


class _Figures:
    """Figures already built, shared by every session: a figure is a pure function of trace events, which
    are immutable and shared (the recordings), so a figure for the same events is built once per server and
    a Step rebuilds only the charts that changed. Keyed by the builder and its arguments' identities (the
    arguments are kept with the figure, so an identity is never reused while its entry lives)."""

    def __init__(self, size: int = 256):
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def _key(builder, args, kwargs):
        ident = lambda v: v if isinstance(v, (int, float, str, bool, type(None))) else ("id", id(v))
        return (builder.__module__, builder.__qualname__, tuple(ident(a) for a in args),
                tuple(sorted((k, ident(v)) for k, v in kwargs.items())))

    def get(self, builder, args, kwargs):
        key = self._key(builder, args, kwargs)
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
                return hit[0]
        fig = builder(*args, **kwargs)
        with self.lock:
            self.items[key] = (fig, args, kwargs)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return fig


@st.cache_resource(show_spinner=False)
def _figures() -> _Figures:
    return _Figures()


def figure(builder, *args, **kwargs):
    """builder(*args, **kwargs), built once per server for the same (immutable, shared) trace events: pass
    the events themselves (a Cycle, replay.events), not copies or slices, so the identities match."""
    return _figures().get(builder, args, kwargs)


@st.cache_resource(show_spinner=False)
def _ahead():
    """The process's background recorder; SPECVIZ_AHEAD=0 turns it off (to measure what it saves)."""
    from specviz.replay import Ahead

    return None if os.environ.get("SPECVIZ_AHEAD", "1") == "0" else Ahead()


def read_ahead(name: str, replay) -> None:
    """Record ahead in the background (specviz.replay.Ahead) while this screen is read: the next Step has its
    event already (Replay.forward computes one ahead), and the one after it is computed now, so a Step that
    starts a new cycle only draws. Before the first Step that is the first two events (with the prompt's
    prefill): the first Step, a learner's first impression, only draws too."""
    ahead = _ahead()
    if ahead is not None:
        sid = st.session_state.setdefault("specviz_session", uuid.uuid4().hex)
        ahead.request((sid, name), replay.recording, replay.event + 3)


def get_replay(name: str, params: tuple, factory, phases: int = 1):
    """This session's Replay (its own cursor) for `name`, over the server's shared recording for these
    parameters; a new cursor whenever the parameters change (slider, prompt, model), so a changed setting
    always starts a clean run. On a session's first visit (and on Back or Forward to an earlier address, see
    _history_visit) a link's ?step= puts the cursor where the link was."""
    from specviz.replay import Replay

    _owned("replay", name)
    slot = st.session_state.get(name)
    if slot is None or slot[0] != params:
        slot = (params, Replay(recordings().get((name, params), lambda: _one_at_a_time(factory())), phases))
        st.session_state[name] = slot
        st.session_state[name + "_playing"] = False
        if not st.session_state.get(name + "_step_read"):
            st.session_state[name + "_step_read"] = True
            where = Replay.parse_position(st.query_params.get("step", ""))
            if where is not None:
                try:
                    slot[1].seek(*where)
                except SpecVizError as e:
                    st.session_state[name + "_error"] = str(e)
    return slot[1]


def reset(name: str):
    """A new cursor at the start (the recording stays: stepping again replays it)."""
    slot = st.session_state.get(name)
    if slot is not None:
        from specviz.replay import Replay

        old = slot[1]
        st.session_state[name] = (slot[0], Replay(old.recording, old._phases))
    st.session_state[name + "_playing"] = False


def link(name: str, page: str, values: dict) -> None:
    """The page's settings as URL query parameters (the ones a first visit reads); controls() keeps the
    address bar in step with them and the cursor (?step=), and offers the link to copy."""
    st.session_state[name + "_link"] = (page, {k: str(int(v) if isinstance(v, bool) else v) for k, v in values.items()})


def _url_params(name: str, replay) -> tuple[str, dict]:
    page, values = st.session_state.get(name + "_link", ("", {}))
    params = dict(values)
    settings = st.session_state.get("s_prompt"), st.session_state.get("s_chat", True)
    params["prompt"], params["chat"] = settings[0] or "", str(int(bool(settings[1])))
    for role, name in zip(("target", "draft"), st.session_state.get("s_pair_active", (None, None))):
        if name:  # the pair in use, when it is not the embedded one
            params[role] = name
    if replay.position():
        params["step"] = replay.position()
    return page, params


def _sync_url(name: str, replay) -> str:
    """Write the settings and cursor into the address bar (only when they changed); return the full link."""
    page, params = _url_params(name, replay)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
    earlier = st.session_state.setdefault("_written", {}).setdefault(_page(), [])
    if not earlier or earlier[-1] != params:
        earlier.append(params)
        del earlier[:-500]  # the addresses Back and Forward can reach, bounded
    base = urllib.parse.urlsplit(st.context.url or "http://localhost:8501")
    return urllib.parse.urlunsplit((base.scheme, base.netloc, "/" + page, urllib.parse.urlencode(params), ""))


def _trace_json(name: str, replay):
    """What the "Trace JSON" button downloads, made only when clicked (Streamlit calls it then, outside the
    script run: so everything read from the session is read now)."""
    page, params = _url_params(name, replay)
    events, finished = replay.shown(), replay.at_end

    def make() -> str:
        return json.dumps({"page": page, "settings": params, "shown_events": len(events), "finished": finished,
                           "events": [dataclasses.asdict(e) for e in events]}, indent=1, default=str)
    return make


def _act(name: str, action):
    """Button callbacks run before the rerun draws anything, so every button's enabled state is drawn
    from the state after the click (a click handled mid-draw would leave a dead Step button)."""
    def cb():
        try:
            action()
        except SpecVizError as e:
            st.session_state[name + "_error"] = str(e)
    return cb


def _toggle_play(name: str):
    def cb():
        st.session_state[name + "_playing"] = not st.session_state.get(name + "_playing", False)
    return cb


def controls(name: str, replay, whole_label: str | None = None) -> None:
    """Step / Back / Play / Run to end / Reset, with keys → ← Space (shown on the buttons); Step computes only
    past the recorded trace. Then "Copy link" (this screen: settings and step) and the trace as JSON."""
    playing = st.session_state.get(name + "_playing", False)
    if playing and replay.at_end:
        playing = st.session_state[name + "_playing"] = False
    # one container with a fixed key: a fragment rerun replaces this row instead of drawing a second one
    row = st.container(key=f"{name}_controls", horizontal=True, gap="small")
    row.button("Step ▶", key=f"{name}_step", type="primary", disabled=replay.at_end,
               help="One step forward (→)", shortcut="Right", on_click=_act(name, replay.forward))
    row.button("◀ Back", key=f"{name}_back", disabled=replay.event < 0,
               help="Replays the recorded trace (←)", shortcut="Left", on_click=_act(name, replay.back))
    # Play and Reset need a full rerun (Play changes the fragment's timer; Reset makes a new cursor)
    if row.button("Pause ❚❚" if playing else "Play ▶▶",
                  key=f"{name}_play", disabled=replay.at_end and not playing, help="Play / pause (Space)",
                  shortcut="Space", on_click=_toggle_play(name)):
        st.rerun()
    row.button("Run to end ⏭", key=f"{name}_end", disabled=replay.at_end,
               on_click=_act(name, replay.to_end))
    if row.button("Reset ↺", key=f"{name}_reset"):
        reset(name)
        st.rerun()
    if whole_label:
        row.button(whole_label, key=f"{name}_whole", disabled=replay.at_end,
                   on_click=_act(name, lambda: replay.forward(whole_event=True)))
    url = _sync_url(name, replay)
    with row.popover("Copy link", icon=":material/link:", help="A link to this screen: same settings, same step"):
        st.caption("Opening this link in any browser shows this screen: the same prompt, settings and step "
                   "(copy it with the icon at the right).")
        st.code(url, language=None, wrap_lines=True)
    row.download_button("Trace JSON", data=_trace_json(name, replay), file_name=f"specviz_{name}_trace.json",
                        mime="application/json", icon=":material/download:", key=f"{name}_json", on_click="ignore",
                        help="The recorded trace events shown so far, with the settings, as JSON")
    error = st.session_state.pop(name + "_error", None)
    if error:
        st.error(md_escape(error))
    read_ahead(name, replay)


def play_tick(name: str, replay) -> None:
    """Called at the top of a fragment that Streamlit re-runs every few hundred ms while playing."""
    if st.session_state.get(name + "_playing"):
        try:
            moved = replay.forward()
        except SpecVizError as e:  # shown once by controls(); Play stops instead of failing on every tick
            st.session_state[name + "_error"] = str(e)
            moved = False
        if not moved:
            st.session_state[name + "_playing"] = False
            st.rerun()


def play_interval(name: str, default: float = 0.8):
    speed = st.session_state.get(name + "_speed", default)
    return speed if st.session_state.get(name + "_playing") else None


SPEEDS = [0.3, 0.5, 0.8, 1.2, 2.0]


def play_speed(name: str, default: float = 0.8) -> None:
    """The play-speed control (seconds per step); kept across page switches like every setting."""
    key = name + "_speed"
    keep(key)
    if st.session_state.get(key) not in SPEEDS:
        st.session_state[key] = default
    st.select_slider("Play speed (seconds per step)", SPEEDS, key=key)


ON_OFF = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def linked(key: str, param: str, options: dict | None = None) -> None:
    """Call just before creating a setting's widget: on a first visit its value comes from the URL (?param=...)
    when the link names one of `options` (URL value -> widget value; no options: a text widget, given the text as
    it is, which the page checks like typed text); then it is kept across page switches like every setting.
    keep() comes after the link's value is written: the Steps that follow are fragment reruns, which never run
    keep() again, so a value kept only later would be lost on a page switch."""
    _owned("setting", key)
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
        _owned("setting", key)
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
