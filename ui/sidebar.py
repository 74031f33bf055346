"""The sidebar every page draws (prompt, chat template, models, learner, chart format, device), the models it
loads (cached once per process) and the prompt encoded for a page."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.loading import MAX_MODEL_NAME, pick_device
from specviz.prompting import context_size, encode_prompt
from ui.registry import leave_pages_folder_mode
from ui.state import copy_to, history_visit, mirror, persist


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


def from_url() -> None:
    """A shared link can carry the prompt (?prompt=...&chat=0); read once, on a session's first run."""
    if st.session_state.get("s_url_read"):
        return
    st.session_state["s_url_read"] = True
    q = st.query_params
    if "prompt" in q:
        st.session_state["s_prompt"] = q["prompt"]
        st.session_state["s_choice"] = name_of(q["prompt"])
    if "chat" in q:
        st.session_state["s_chat"] = q["chat"] not in ("0", "false", "no")
    for role in ("target", "draft"):  # the pair (ui/models.py checks it like a typed name)
        if role in q:
            st.session_state["s_" + role] = q[role][:MAX_MODEL_NAME + 1]


def name_of(prompt: str) -> str:
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
    history_visit()
    from_url()
    sb = st.sidebar
    sb.markdown("### Prompt")
    names = list(CURATED) + [OWN]
    if persist("s_choice", names[0]) not in names:
        st.session_state["s_choice"] = OWN
    prompt = persist("s_prompt", CURATED[names[0]])
    if st.session_state["s_choice"] != OWN and CURATED[st.session_state["s_choice"]] != prompt:
        st.session_state["s_choice"] = name_of(prompt)  # the prompt was set in code or by a link
    mirror("w_choice", "s_choice")
    sb.selectbox("Curated prompts", names, key="w_choice", on_change=on_choice)
    mirror("w_prompt", "s_prompt")
    sb.text_area("Prompt text", key="w_prompt", height=120, on_change=on_prompt,
                 help="Edit freely; changing it resets the runs on every page.")
    chat = persist("s_chat", True)
    mirror("w_chat", "s_chat")
    sb.toggle("Chat template", key="w_chat", on_change=copy_to("w_chat", "s_chat"),
              help="Wrap the prompt in the model's chat template (system + user turn + assistant header).")
    device = str(pick_device())
    from ui.models import section
    target, draft = section(sb, device, loaded())
    st.session_state["s_pair_active"] = (target, draft)
    st.session_state["_run_serial"] = st.session_state.get("_run_serial", 0) + 1  # get_models notes once per run
    from ui.learner import name_box
    name_box(sb)
    persist("s_chart_format", "png")
    mirror("w_chart_format", "s_chart_format")
    sb.radio("Chart download format", CHART_FORMATS, key="w_chart_format", horizontal=True,
             format_func=str.upper, on_change=copy_to("w_chart_format", "s_chart_format"),
             help="What the camera icon in a chart's toolbar (top right of every chart, on hover) saves.")
    from specviz import packed
    layers = ""
    if device == "cpu" and packed.available():  # the process measured which is faster on this CPU
        n0 = packed.choice().packed_from
        layers = " · linear layers " + ("packed for oneDNN" if n0 == 1 else "plain (measured faster here)" if n0 is None
                                        else f"plain below {n0} rows, packed from {n0} (measured here)")
    sb.caption(f"Device: **{device}**{layers}")
    return Settings(prompt, chat, target, draft, device)


def on_choice():
    choice = st.session_state["w_choice"]
    st.session_state["s_choice"] = choice
    if choice in CURATED:
        st.session_state["s_prompt"] = CURATED[choice]
        st.session_state["w_prompt"] = CURATED[choice]


def on_prompt():
    """Edited text: the picker follows (the curated name when the text is one, else "Your own prompt")."""
    text = st.session_state["w_prompt"]
    st.session_state["s_prompt"] = text
    st.session_state["s_choice"] = st.session_state["w_choice"] = name_of(text)


@st.cache_resource(show_spinner=False, max_entries=3)
def load_pair(target, draft, device):
    from specviz.loading import load_models

    return load_models(target, draft, device)


@st.cache_resource(show_spinner=False)
def loaded() -> set:
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
        if key in loaded():
            models = load_pair(*key)
        else:
            with slot.status("Loading models… (the first start converts the embedded GGUF, ~20 s)",
                             expanded=False) as box:
                models = load_pair(*key)
                # every drafter the pages offer beside the draft model: the feature draft is the Speculative default
                heads = [name for name, m in (("feature draft", models.feature_draft), ("Medusa heads", models.medusa))
                         if m is not None]
                box.update(label="Models ready: target + " + ", ".join([models.draft_name] + heads), state="complete")
            loaded().add(key)
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
        return encode_prompt(models.tokenizer, settings.prompt, settings.chat, context_size(models.target),
                             max_new_tokens)
    except SpecVizError as e:
        st.warning(md_escape(str(e)))
        st.stop()
