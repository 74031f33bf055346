"""The sidebar's Models section: the embedded pair (default), or any target and draft from a local folder or the
local Hugging Face cache, listed with their sizes and whether a draft's tokenizer matches the target's; a pair that
cannot be used gets one line saying why while the app goes on with the pair it had. And, keyed on the page
registry, what each page can do with the pair in use. Loading and every check is specviz.loading (plan_pair,
load_models): the same code path as the CLI's and the benchmark's --target / --draft."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.loading import (EMBEDDED_NAME, MAX_MODEL_NAME, ModelFiles, available_memory, cached_models, inspect_folder,
                            inspect_model, pick_dtype, plan_pair, tokenizer_signature)

ROOT = Path(__file__).resolve().parent.parent
EMBEDDED, DEFAULT, OTHER = "", "", "\x00other"  # option values: the embedded target / the default draft / a typed one
SHORT_EMBEDDED = "SmolLM2-135M-Instruct (embedded)"


@dataclass(frozen=True)
class Support:
    """What a page does with a pair. any_pair: works with any target (and draft); needs_draft: needs a draft model
    (the shipped token draft or the user's own); embedded_only: trained for the embedded target only (offered only
    with it); whole_page: the page has nothing to show without the embedded target."""
    any_pair: str
    needs_draft: str = ""
    embedded_only: str = ""
    whole_page: bool = False


FEATURE = "the feature draft (it reads the embedded target's hidden states)"
SUPPORT = {  # every page of ui/registry.py, and Home (""): a test holds that none is missing
    "": Support("greedy, beam search and speculative decoding with the best drafter the pair has"),
    "pages/1_Beam_search.py": Support("beam search and greedy"),
    "pages/2_Speculative_decoding.py": Support("a draft model, n-gram lookup and early exit", embedded_only=FEATURE),
    "pages/3_Speedup_lab.py": Support("the formulas, and timed runs with a draft model, n-gram lookup or early exit",
                                      embedded_only=FEATURE),
    "pages/11_Where_speedup_goes.py": Support("one run with a draft model, n-gram lookup or early exit, in serving "
                                              "systems' units, fp32 vs bf16", needs_draft="the dynamic-K policies "
                                              "and the acceptance rules (they read a draft model's q)",
                                              embedded_only=FEATURE),
    "pages/4_Lossless_lab.py": Support("the toy p and q, and the real-model test "
                                       "(with the draft model, else early exit)"),
    "pages/5_Drafter_comparison.py": Support("a draft model, n-gram lookup, early exit, suffix decoding and the "
                                             "target quantized",
                                             needs_draft="staged speculation", embedded_only=FEATURE),
    "pages/7_Tree_speculation.py": Support("", embedded_only="the EAGLE-2 tree, the Medusa heads and the feature "
                                           "draft's chain (trained for the embedded target)", whole_page=True),
    "pages/9_Lookahead_decoding.py": Support("lookahead decoding: it needs no draft model"),
    "pages/8_Serving_lab.py": Support("the memory and roofline arithmetic and the measured verify cost",
                                      needs_draft="the batched speculative run"),
    "pages/10_Practice.py": Support("the formula drills",
                                    needs_draft="the live drills (they replay a draft model's cycles)"),
    "pages/6_Interview_QA.py": Support("it runs no model"),
}


def current_page() -> str:
    """This run's page as ui/registry.py names it ("" for Home)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return ""
    script = ctx.pages_manager.get_pages().get(ctx.page_script_hash, {}).get("script_path") or ""
    if not script:  # Home is a function in app.py
        return ""
    try:
        rel = Path(script).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return ""
    return "" if rel == "app.py" else rel


def is_embedded(target: str | None) -> bool:
    return target in (None, "", "embedded")


def support_line(page: str, target: str | None, has_draft: bool) -> str:
    """One line (plain text) saying what this page does with this pair."""
    s = SUPPORT.get(page)
    if s is None:
        return ""
    if is_embedded(target):
        if s.whole_page:
            return f"This page needs the embedded target: {s.embedded_only}."
        if s.embedded_only:
            return (f"With another target this page offers {s.any_pair}; "
                    f"{s.embedded_only} comes with the embedded one only.")
        return f"This page works with any pair: {s.any_pair}."
    parts = ([f"works: {s.any_pair}"] if s.any_pair else []) + (
        [f"needs a draft model: {s.needs_draft}" + ("" if has_draft else " (none given)")] if s.needs_draft else []) + (
        [f"embedded target only: {s.embedded_only}"] if s.embedded_only else [])
    return "With this pair, " + "; ".join(parts) + "."


def page_note(models, target: str | None) -> None:
    """Under the page's title (called by get_models): with a pair that lacks what this page offers, say so; a page
    that has nothing without the embedded target stops here with the reason."""
    page = current_page()
    s = SUPPORT.get(page)
    if s is None or is_embedded(target):
        return
    name = md_escape(short(target))
    if s.whole_page:
        st.warning(f"This page needs the embedded target: {md_escape(s.embedded_only)}. The target in use is {name}: "
                   "pick the embedded pair in the sidebar's **Models** section to use this page.")
        st.stop()
    missing = ([s.embedded_only + " is trained for the embedded target only"] if s.embedded_only else []) + (
        [s.needs_draft + " needs a draft model: give one in the sidebar"] if s.needs_draft and models.draft is None
        else [])
    if missing:
        st.info(f"Target {name}: this page offers {md_escape(s.any_pair)}; " + md_escape("; ".join(missing))
                + ", so it is not offered here.")


# ---------------------------------------------------------------- the list
def _size(m: ModelFiles) -> str:
    if m.params:
        n = m.params
        return f"{n / 1e9:.1f}B params" if n >= 1e9 else f"{n / 1e6:.0f}M params" if n >= 1e6 else f"{n:,} params"
    return f"{m.bytes / 1e9:.1f} GB" if m.bytes >= 1e9 else f"{m.bytes / 1e6:.0f} MB"


def short(name: str | None, n: int = 48) -> str:
    if is_embedded(name):
        return SHORT_EMBEDDED
    return name if len(name) <= n else "…" + name[-(n - 1):]


def catalog(device: str) -> list[tuple[str, ModelFiles, tuple | None, bool]]:
    return _catalog(device, str(_hub()))


@st.cache_data(ttl=20, show_spinner=False, max_entries=4)
def _catalog(device: str, hub: str) -> list[tuple[str, ModelFiles, tuple | None, bool]]:
    """Every model in the local Hugging Face cache: (Hub id, its files, its tokenizer's signature or None, fits in
    memory). Read again every 20 s (a model downloaded meanwhile with the hub's own tools shows up)."""
    import torch

    dev = torch.device(device)
    free = available_memory(dev)
    try:
        dtype = pick_dtype(dev)
    except SpecVizError:  # a bad SPECVIZ_DTYPE: the page says so where it loads the models; the list still fits fp32
        dtype = torch.float32
    out = []
    for hub_id, path in cached_models().items():
        files = inspect_folder(path, hub_id)
        try:
            sig = tokenizer_signature(path)
        except SpecVizError:
            sig = None
        out.append((hub_id, files, sig, files.needed(dtype) <= 0.8 * free))
    return out


@st.cache_data(ttl=20, show_spinner=False, max_entries=16)
def _target_info(target: str | None) -> tuple[str, tuple | None]:
    """(size, tokenizer signature) of the target in use: what the draft list is matched against."""
    try:
        files = inspect_model(target)
        return _size(files), tokenizer_signature(files.path)
    except SpecVizError:
        return "", None


def _norm(value) -> str | None:
    return (value or "").strip() or None


# ---------------------------------------------------------------- the sidebar section
def _on_pick(role: str):
    def cb():
        pick = st.session_state[f"w_{role}_pick"]
        st.session_state[f"s_{role}_other"] = pick == OTHER
        if pick != OTHER:
            st.session_state[f"s_{role}"] = pick
    return cb


def _on_text(role: str):
    def cb():
        st.session_state[f"s_{role}"] = st.session_state[f"w_{role}"]
    return cb


def _picker(role: str, label: str, options: dict[str, str], help: str) -> None:
    """A selectbox over the listed models, and a text box for a folder or Hub id when "Other" is picked (or the name
    in use is not listed: a link, a typed path)."""
    value = st.session_state.setdefault(f"s_{role}", "")
    other = st.session_state.get(f"s_{role}_other", False) or value.strip() not in options
    st.session_state[f"w_{role}_pick"] = OTHER if other else value.strip()
    st.selectbox(label, list(options) + [OTHER], key=f"w_{role}_pick", on_change=_on_pick(role), help=help,
                 format_func=lambda v: options.get(v, "Other: a local folder or Hub id…"))
    if other:
        st.session_state[f"w_{role}"] = value
        st.text_input(f"{label}: a local folder or a Hub id in the local cache", key=f"w_{role}",
                      max_chars=MAX_MODEL_NAME, on_change=_on_text(role), placeholder="/path/to/model or org/name",
                      help="A folder with config.json, *.safetensors and the tokenizer files; or the id of a model "
                           "already in the local Hugging Face cache. Nothing is downloaded. Press Enter to use it.")


def chosen_pair(device: str, loaded) -> tuple[str | None, str | None, str | None]:
    """(target, draft, error): the pair asked for when it passes plan_pair's checks (or is loaded already), else the
    last pair that worked in this session (the embedded one at first) and the one-line reason."""
    asked = (_norm(st.session_state.get("s_target")), _norm(st.session_state.get("s_draft")))
    failed = st.session_state.setdefault("_pair_failed", {})
    if asked == (None, None) or (*asked, device) in loaded:
        return (*asked, None)
    error = failed.get(asked)
    if error is None:
        try:
            plan_pair(*asked, device)
        except SpecVizError as e:
            error = failed[asked] = str(e)
            while len(failed) > 32:
                failed.pop(next(iter(failed)))
    if error is None:
        return (*asked, None)
    ok = st.session_state.get("s_pair_ok", (None, None))
    return (*(ok if ok != asked else (None, None)), error)


def failed_load(target: str | None, draft: str | None, message: str) -> None:
    """The pair passed the checks but transformers could not load it: remember why, so the next run falls back."""
    st.session_state.setdefault("_pair_failed", {})[(target, draft)] = message


def section(sb, device: str, loaded) -> tuple[str | None, str | None]:
    """Draw the Models section; the pair to use (the one asked for, or the one before it when that cannot be used)."""
    target, draft, error = chosen_pair(device, loaded)
    listed = catalog(device)
    asked = _norm(st.session_state.get("s_target"))
    draft_label = draft or ("the shipped token and feature drafts" if is_embedded(target) else "none")
    with sb.expander("Models", expanded=bool(error)):
        if error:  # first, where the learner looks after typing
            now = "the embedded pair" if (target, draft) == (None, None) else f"{short(target)} + {short(draft_label)}"
            st.error(f"{md_escape(error)} Still using {md_escape(now)}.")
        size, sig = _target_info(target)
        st.caption(f"In use: target **{md_escape(short(target))}**" + (f" ({size})" if size else "")
                   + f", draft: {md_escape(short(draft_label))}. Nothing is downloaded; safetensors only.")
        targets = {EMBEDDED: f"{SHORT_EMBEDDED} · default"}
        for hub_id, files, _, fits in listed:
            targets[hub_id] = f"{hub_id} · {_size(files)}" + (" · corrupt or incomplete" if files.problem else "") + (
                "" if fits else " · too big for this machine")
        _picker("target", "Target", targets, "The model whose output you see: the embedded SmolLM2-135M-Instruct, a "
                "model in the local Hugging Face cache, or a folder.")
        # drafts: only those whose tokenizer is the target's (speculation compares token ids)
        _, asked_sig = _target_info(asked)
        if asked_sig is None:  # the target asked for cannot be read: offer the drafts of the one in use
            asked, asked_sig = target, sig
        drafts = {DEFAULT: ("Default: the shipped token + feature drafts" if is_embedded(asked)
                            else "None: n-gram, early exit, suffix, lookahead")}
        refused = []
        for hub_id, files, dsig, fits in listed:
            if asked_sig is not None and dsig == asked_sig:
                drafts[hub_id] = f"{hub_id} · {_size(files)} · same tokenizer" + (
                    " · corrupt or incomplete" if files.problem else "") + ("" if fits else " · too big")
            else:
                refused.append(hub_id)
        _picker("draft", "Draft model", drafts, "A smaller model with the target's tokenizer. The feature draft and "
                "the Medusa heads are trained for the embedded target and come with it only.")
        if refused:
            st.caption("Not offered as a draft for this target (a different tokenizer, or none): "
                       + md_escape(", ".join(refused[:12]))
                       + (f" and {len(refused) - 12} more" if len(refused) > 12 else ""))
        if not listed:
            st.caption(f"No model in the local Hugging Face cache ({md_escape(str(_hub()))}): give a folder with "
                       "*Other*.")
    line = support_line(current_page(), target, draft is not None or is_embedded(target))
    if line:
        sb.caption(md_escape(line))
    return target, draft


def _hub():
    from specviz.loading import hub_cache

    return hub_cache()


__all__ = ["EMBEDDED_NAME", "SUPPORT", "Support", "chosen_pair", "current_page", "failed_load", "page_note", "section",
           "support_line"]
