"""A step page's run: its trace recorded once per server for everyone who asks for the same settings
(recordings), this session's cursor over it and everything else the page keeps about it in ONE object
(StepState, at st.session_state[name]), the address bar kept in step (a link reopens the same screen), and the
Step / Back / Play / Run to end / Reset controls (keys → ← Space)."""
from __future__ import annotations

import dataclasses
import json
import os
import threading
import urllib.parse
import uuid

import streamlit as st

from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.replay import Ahead, Recording, Replay
from ui.cache import SharedLRU
from ui.state import keep, owned, page_hash


@dataclasses.dataclass
class StepState:
    """Everything this session keeps about one step page's run, in one place (st.session_state[name])."""
    params: tuple = ()  # the settings the recording was made for
    replay: Replay | None = None  # this session's cursor over the shared recording
    playing: bool = False
    step_read: bool = False  # the link's ?step= was applied (once per session and page)
    error: str | None = None  # an engine message, shown once by controls()
    link: tuple[str, dict] = ("", {})  # the page and its settings as URL parameters


def state_of(name: str) -> StepState:
    """This session's StepState for the page `name` (created empty on first use)."""
    run = st.session_state.get(name)
    if not isinstance(run, StepState):
        run = st.session_state[name] = StepState()
    return run


class Recordings(SharedLRU):
    """Recorded traces shared by every session of this server, keyed by page and settings: the same prompt and
    settings give the same trace (runs are deterministic given their settings and seed), so a classroom on
    one prompt computes each step once. Bounded (least recently used out); a session keeps its own reference
    to the recording it walks, so an evicted one lives on for the sessions still on it."""

    def __init__(self, size: int = 24):
        super().__init__(size)

    def get(self, key, factory):
        return super().get(key, lambda: Recording(factory()))


@st.cache_resource(show_spinner=False)
def recordings() -> Recordings:
    return Recordings()


@st.cache_resource(show_spinner=False)
def engine_lock() -> threading.Lock:
    return threading.Lock()


def one_at_a_time(steps):
    """The step generator with every step computed under one process-wide lock: PyTorch already uses both
    cores for one forward pass, so sessions computing at once only oversubscribe the cores (each waits as
    long as all together); taking turns, a step finishes in its own time and the queue drains sooner."""
    lock = engine_lock()
    while True:
        with lock:
            try:
                event = next(steps)
            except StopIteration as stop:
                return stop.value
        yield event


@st.cache_resource(show_spinner=False)
def recorder():
    """The process's background recorder; SPECVIZ_AHEAD=0 turns it off (to measure what it saves)."""
    return None if os.environ.get("SPECVIZ_AHEAD", "1") == "0" else Ahead()


def read_ahead(name: str, replay) -> None:
    """Record ahead in the background (specviz.replay.Ahead) while this screen is read: the next Step has its
    event already (Replay.forward computes one ahead), and the one after it is computed now, so a Step that
    starts a new cycle only draws. Before the first Step that is the first two events (with the prompt's
    prefill): the first Step, a learner's first impression, only draws too."""
    ahead = recorder()
    if ahead is not None:
        sid = st.session_state.setdefault("specviz_session", uuid.uuid4().hex)
        ahead.request((sid, name), replay.recording, replay.event + 3)


def get_replay(name: str, params: tuple, factory, phases: int = 1):
    """This session's Replay (its own cursor) for `name`, over the server's shared recording for these
    parameters; a new cursor whenever the parameters change (slider, prompt, model), so a changed setting
    always starts a clean run. On a session's first visit (and on Back or Forward to an earlier address, see
    ui.state.history_visit) a link's ?step= puts the cursor where the link was."""
    owned("replay", name)
    run = state_of(name)
    if run.replay is None or run.params != params:
        run.params, run.playing = params, False
        run.replay = Replay(recordings().get((name, params), lambda: one_at_a_time(factory())), phases)
        if not run.step_read:
            run.step_read = True
            where = Replay.parse_position(st.query_params.get("step", ""))
            if where is not None:
                try:
                    run.replay.seek(*where)
                except SpecVizError as e:
                    run.error = str(e)
    return run.replay


def reset(name: str):
    """A new cursor at the start (the recording stays: stepping again replays it)."""
    run = state_of(name)
    if run.replay is not None:
        run.replay = Replay(run.replay.recording, run.replay._phases)
    run.playing = False


def link(name: str, page: str, values: dict) -> None:
    """The page's settings as URL query parameters (the ones a first visit reads); controls() keeps the
    address bar in step with them and the cursor (?step=), and offers the link to copy."""
    state_of(name).link = (page, {k: str(int(v) if isinstance(v, bool) else v) for k, v in values.items()})


def url_params(name: str, replay) -> tuple[str, dict]:
    page, values = state_of(name).link
    params = dict(values)
    settings = st.session_state.get("s_prompt"), st.session_state.get("s_chat", True)
    params["prompt"], params["chat"] = settings[0] or "", str(int(bool(settings[1])))
    for role, name in zip(("target", "draft"), st.session_state.get("s_pair_active", (None, None))):
        if name:  # the pair in use, when it is not the embedded one
            params[role] = name
    if replay.position():
        params["step"] = replay.position()
    return page, params


def sync_url(name: str, replay) -> str:
    """Write the settings and cursor into the address bar (only when they changed); return the full link."""
    page, params = url_params(name, replay)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
    earlier = st.session_state.setdefault("_written", {}).setdefault(page_hash(), [])
    if not earlier or earlier[-1] != params:
        earlier.append(params)
        del earlier[:-500]  # the addresses Back and Forward can reach, bounded
    base = urllib.parse.urlsplit(st.context.url or "http://localhost:8501")
    return urllib.parse.urlunsplit((base.scheme, base.netloc, "/" + page, urllib.parse.urlencode(params), ""))


def trace_json(name: str, replay):
    """What the "Trace JSON" button downloads, made only when clicked (Streamlit calls it then, outside the
    script run: so everything read from the session is read now)."""
    page, params = url_params(name, replay)
    events, finished = replay.shown(), replay.at_end

    def make() -> str:
        return json.dumps({"page": page, "settings": params, "shown_events": len(events), "finished": finished,
                           "events": [dataclasses.asdict(e) for e in events]}, indent=1, default=str)
    return make


def act(name: str, action):
    """Button callbacks run before the rerun draws anything, so every button's enabled state is drawn
    from the state after the click (a click handled mid-draw would leave a dead Step button)."""
    def cb():
        try:
            action()
        except SpecVizError as e:
            state_of(name).error = str(e)
    return cb


def toggle_play(name: str):
    def cb():
        run = state_of(name)
        run.playing = not run.playing
    return cb


def controls(name: str, replay, whole_label: str | None = None) -> None:
    """Step / Back / Play / Run to end / Reset, with keys → ← Space (shown on the buttons); Step computes only
    past the recorded trace. Then "Copy link" (this screen: settings and step) and the trace as JSON."""
    run = state_of(name)
    if run.playing and replay.at_end:
        run.playing = False
    playing = run.playing
    # one container with a fixed key: a fragment rerun replaces this row instead of drawing a second one
    row = st.container(key=f"{name}_controls", horizontal=True, gap="small")
    row.button("Step ▶", key=f"{name}_step", type="primary", disabled=replay.at_end,
               help="One step forward (→)", shortcut="Right", on_click=act(name, replay.forward))
    row.button("◀ Back", key=f"{name}_back", disabled=replay.event < 0,
               help="Replays the recorded trace (←)", shortcut="Left", on_click=act(name, replay.back))
    # Play and Reset need a full rerun (Play changes the fragment's timer; Reset makes a new cursor)
    if row.button("Pause ❚❚" if playing else "Play ▶▶",
                  key=f"{name}_play", disabled=replay.at_end and not playing, help="Play / pause (Space)",
                  shortcut="Space", on_click=toggle_play(name)):
        st.rerun()
    row.button("Run to end ⏭", key=f"{name}_end", disabled=replay.at_end,
               on_click=act(name, replay.to_end))
    if row.button("Reset ↺", key=f"{name}_reset"):
        reset(name)
        st.rerun()
    if whole_label:
        row.button(whole_label, key=f"{name}_whole", disabled=replay.at_end,
                   on_click=act(name, lambda: replay.forward(whole_event=True)))
    url = sync_url(name, replay)
    with row.popover("Copy link", icon=":material/link:", help="A link to this screen: same settings, same step"):
        st.caption("Opening this link in any browser shows this screen: the same prompt, settings and step "
                   "(copy it with the icon at the right).")
        st.code(url, language=None, wrap_lines=True)
    row.download_button("Trace JSON", data=trace_json(name, replay), file_name=f"specviz_{name}_trace.json",
                        mime="application/json", icon=":material/download:", key=f"{name}_json", on_click="ignore",
                        help="The recorded trace events shown so far, with the settings, as JSON")
    error, run.error = run.error, None
    if error:
        st.error(md_escape(error))
    read_ahead(name, replay)


def play_tick(name: str, replay) -> None:
    """Called at the top of a fragment that Streamlit re-runs every few hundred ms while playing."""
    run = state_of(name)
    if run.playing:
        try:
            moved = replay.forward()
        except SpecVizError as e:  # shown once by controls(); Play stops instead of failing on every tick
            run.error = str(e)
            moved = False
        if not moved:
            run.playing = False
            st.rerun()


def play_interval(name: str, default: float = 0.8):
    speed = st.session_state.get(name + "_speed", default)
    return speed if state_of(name).playing else None


SPEEDS = [0.3, 0.5, 0.8, 1.2, 2.0]


def play_speed(name: str, default: float = 0.8) -> None:
    """The play-speed control (seconds per step); kept across page switches like every setting."""
    key = name + "_speed"
    keep(key)
    if st.session_state.get(key) not in SPEEDS:
        st.session_state[key] = default
    st.select_slider("Play speed (seconds per step)", SPEEDS, key=key)
