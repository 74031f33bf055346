"""Shared by every page: the sidebar (prompt, chat template, models, device), the model cache and
the Step / Back / Play / Run to end / Reset controls over a Replay kept in st.session_state."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from specviz.errors import SpecVizError  # noqa: E402
from specviz.figures import md_escape  # noqa: E402
from specviz.models import pick_device  # noqa: E402
from specviz.prompting import context_size, encode_prompt  # noqa: E402
from ui.registry import leave_pages_folder_mode  # noqa: E402

CURATED = {
    "Explain beam search (chat)": "Explain beam search in two sentences.",
    "What is 2+2? (beam beats greedy)": "What is 2+2?",
    "Refactor this code (n-gram shines)": (
        "Add type hints to this function and return the whole function:\n\n"
        "def average(values):\n    total = 0\n    for value in values:\n        total = total + value\n"
        "    return total / len(values)\n"),
    "Surreal poem (low acceptance)": "Write a surreal poem about a violin made of fog and a clock that eats oranges.",
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
    """Widget values die with their page; these keys carry them from page to page."""
    if name not in st.session_state:
        st.session_state[name] = default
    st.session_state[name] = st.session_state[name]  # re-assert so Streamlit keeps it
    return st.session_state[name]


def _copy(src: str, dst: str):
    def cb():
        st.session_state[dst] = st.session_state[src]
    return cb


def _from_url() -> None:
    """A shared link can carry the prompt (?prompt=...&chat=0); read once, on a session's first run."""
    if st.session_state.get("s_url_read"):
        return
    st.session_state["s_url_read"] = True
    q = st.query_params
    if "prompt" in q:
        st.session_state["s_choice"] = OWN
        st.session_state["s_prompt"] = q["prompt"]
    if "chat" in q:
        st.session_state["s_chat"] = q["chat"] not in ("0", "false", "no")


def sidebar() -> Settings:
    leave_pages_folder_mode()
    _from_url()
    sb = st.sidebar
    sb.markdown("### Prompt")
    names = list(CURATED) + [OWN]
    choice = _persist("s_choice", names[0])
    sb.selectbox("Curated prompts", names, index=names.index(choice) if choice in names else 0,
                 key="w_choice", on_change=_on_choice)
    prompt = _persist("s_prompt", CURATED[names[0]])
    sb.text_area("Prompt text", value=prompt, key="w_prompt", height=120, on_change=_copy("w_prompt", "s_prompt"),
                 help="Edit freely; changing it resets the runs on every page.")
    chat = _persist("s_chat", True)
    sb.toggle("Chat template", value=chat, key="w_chat", on_change=_copy("w_chat", "s_chat"),
              help="Wrap the prompt in the model's chat template (system + user turn + assistant header).")
    with sb.expander("Models", expanded=False):
        st.caption("Default: SmolLM2-135M-Instruct (embedded, offline) with the project's two drafts, both distilled "
                   "from it: the feature draft (reads the target's hidden states, EAGLE-style) and the token draft.")
        target = _persist("s_target", "")
        draft = _persist("s_draft", "")
        st.text_input("Target (Hub id or local folder; empty = embedded)", value=target, key="w_target",
                      on_change=_copy("w_target", "s_target"))
        st.text_input("Draft (Hub id or local folder; empty = default)", value=draft, key="w_draft",
                      on_change=_copy("w_draft", "s_draft"))
    device = str(pick_device())
    from specviz import packed
    sb.caption(f"Device: **{device}**" + (" · linear layers packed for oneDNN" if device == "cpu" and packed.available()
                                          else ""))
    return Settings(prompt, chat, target.strip() or None, draft.strip() or None, device)


def _on_choice():
    choice = st.session_state["w_choice"]
    st.session_state["s_choice"] = choice
    if choice in CURATED:
        st.session_state["s_prompt"] = CURATED[choice]
        st.session_state["w_prompt"] = CURATED[choice]


@st.cache_resource(show_spinner=False, max_entries=3)
def _load_models(target, draft, device):
    from specviz.models import load_models

    return load_models(target, draft, device)


@st.cache_resource(show_spinner=False)
def _loaded() -> set:
    return set()


def get_models(settings: Settings):
    """The (read-only, shared) models; a status box the first time this process loads them."""
    key = (settings.target, settings.draft, settings.device)
    try:
        if key in _loaded():
            return _load_models(*key)
        with st.status("Loading models… (the first start converts the embedded GGUF, ~20 s)", expanded=False) as box:
            models = _load_models(*key)
            box.update(label=f"Models ready: target + {models.draft_name}", state="complete")
        _loaded().add(key)
        return models
    except SpecVizError as e:
        st.error(md_escape(str(e)))
        st.stop()


def encode(models, settings: Settings, max_new_tokens: int) -> list[int]:
    try:
        return encode_prompt(models.tokenizer, settings.prompt, settings.chat, context_size(models.target), max_new_tokens)
    except SpecVizError as e:
        st.warning(md_escape(str(e)))
        st.stop()


def get_replay(name: str, params: tuple, factory, phases: int = 1):
    """This session's Replay for `name`; a new one whenever the parameters change (slider, prompt,
    model), so a changed setting always starts a clean run."""
    from specviz.replay import Replay

    slot = st.session_state.get(name)
    if slot is None or slot[0] != params:
        slot = (params, Replay(factory(), phases))
        st.session_state[name] = slot
        st.session_state[name + "_playing"] = False
    return slot[1]


def reset(name: str):
    st.session_state.pop(name, None)
    st.session_state[name + "_playing"] = False


def _act(name: str, action):
    """Button callbacks run before the rerun draws anything, so every button's enabled state is drawn
    from the state after the click (a click handled mid-draw would leave a dead Step button)."""
    def cb():
        try:
            action()
        except SpecVizError as e:
            st.session_state[name + "_error"] = str(e)
    return cb


def controls(name: str, replay, whole_label: str | None = None) -> None:
    """Step / Back / Play / Run to end / Reset. Step computes only past the recorded trace."""
    cols = st.columns([1, 1, 1, 1.3, 1, 2.2] if whole_label else [1, 1, 1, 1.3, 1, 0.01])
    playing = st.session_state.get(name + "_playing", False)
    cols[0].button("Step ▶", key=f"{name}_step", type="primary", disabled=replay.at_end, help="One step forward",
                   on_click=_act(name, replay.forward))
    cols[1].button("◀ Back", key=f"{name}_back", disabled=replay.event < 0, help="Replays the recorded trace",
                   on_click=_act(name, replay.back))
    # Play and Reset need a full rerun (Play changes the fragment's timer; Reset makes a new run)
    if cols[2].button("Pause ❚❚" if playing else "Play ▶▶", key=f"{name}_play", disabled=replay.at_end and not playing):
        st.session_state[name + "_playing"] = not playing
        st.rerun()
    cols[3].button("Run to end ⏭", key=f"{name}_end", disabled=replay.at_end, on_click=_act(name, replay.to_end))
    if cols[4].button("Reset ↺", key=f"{name}_reset"):
        reset(name)
        st.rerun()
    if whole_label:
        cols[5].button(whole_label, key=f"{name}_whole", disabled=replay.at_end,
                       on_click=_act(name, lambda: replay.forward(whole_event=True)))
    error = st.session_state.pop(name + "_error", None)
    if error:
        st.error(md_escape(error))


def play_tick(name: str, replay) -> None:
    """Called at the top of a fragment that Streamlit re-runs every few hundred ms while playing."""
    if st.session_state.get(name + "_playing"):
        if not replay.forward():
            st.session_state[name + "_playing"] = False
            st.rerun()


def play_interval(name: str, default: float = 0.8):
    speed = st.session_state.get(name + "_speed", default)
    return speed if st.session_state.get(name + "_playing") else None


def bounded(key: str, lo, hi, default, param: str | None = None, name: str = ""):
    """A widget's value from the URL (?param=...) on first visit, or from session state, checked
    against [lo, hi] before the widget sees it: out-of-range or malformed values are clamped with a
    notice instead of crashing the widget."""
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
    st.session_state[key] = v
    return v


def slider(container, label: str, key: str, lo, hi, default, param: str | None = None, step=None, **kw):
    """A slider whose range is written once: its value from the URL or session state, checked against
    [lo, hi] first (bounded), then the widget."""
    bounded(key, lo, hi, default, param, label)
    return container.slider(label, lo, hi, step=step, key=key, **kw)
