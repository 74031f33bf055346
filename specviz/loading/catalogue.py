"""Which models a name can mean, found on this machine only: the local Hugging Face hub cache (its snapshots) and
local folders. Nothing is downloaded."""
from __future__ import annotations

import os
import pathlib
import re

from specviz.errors import SpecVizError
from specviz.loading.embedded import embedded_path
from specviz.loading.files import ModelFiles, inspect_folder, short_name

MAX_MODEL_NAME = 1024  # characters: Hub ids are ~100, a deep local path a few hundred
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?")


def hub_cache() -> pathlib.Path:
    """The local Hugging Face hub cache, found as huggingface_hub finds it (read at each call: tests move it)."""
    env = os.environ
    if env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return pathlib.Path(env.get("HF_HUB_CACHE") or env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface")
    return pathlib.Path(home).expanduser() / "hub"


def _snapshot(repo: pathlib.Path) -> pathlib.Path | None:
    """The snapshot `main` points to, else the newest one."""
    try:
        ref = (repo / "refs" / "main").read_text().strip()
        if ref and (repo / "snapshots" / ref).is_dir():
            return repo / "snapshots" / ref
    except OSError:
        pass
    try:
        snaps = [s for s in (repo / "snapshots").iterdir() if s.is_dir()]
    except OSError:
        return None
    return max(snaps, key=lambda s: s.stat().st_mtime, default=None)


MAX_CACHED = 200  # models listed from the cache


def cached_models() -> dict[str, pathlib.Path]:
    """Hub id -> snapshot folder, for every model in the local Hugging Face cache with a config.json and safetensors
    weights (nothing is downloaded: only what is already on this machine)."""
    root, found = hub_cache(), {}
    try:
        repos = sorted(root.glob("models--*"))[:MAX_CACHED]
    except OSError:
        return {}
    for repo in repos:
        snap = _snapshot(repo)
        if snap is not None and (snap / "config.json").is_file() and any(snap.glob("*.safetensors")):
            found[repo.name.removeprefix("models--").replace("--", "/")] = snap
    return found


def resolve_local(name: str) -> pathlib.Path:
    """A local folder, or a Hub id found in the local Hugging Face cache. Nothing is ever downloaded."""
    if len(name) > MAX_MODEL_NAME:  # a path that long cannot exist (the OS raises "File name too long")
        raise SpecVizError(f"The model name has {len(name):,} characters; the limit is {MAX_MODEL_NAME:,}.")
    p = pathlib.Path(name).expanduser()
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError) as e:  # a component longer than the file system allows, a NUL byte
        raise SpecVizError(f"No model folder at {short_name(name)} ({type(e).__name__}).") from None
    if is_dir:
        return p
    if p.suffix or name.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(name) or ".." in name:
        raise SpecVizError(f"No model folder at {short_name(name)}.")
    repo = hub_cache() / ("models--" + name.replace("/", "--"))
    snap = _snapshot(repo) if repo.is_dir() else None
    if snap is None:
        raise SpecVizError(
            f"Model {short_name(name)} is not available offline: give a local folder or a Hub id already in the "
            f"local Hugging Face cache ({short_name(str(hub_cache()), 60)}); SpecViz downloads nothing.")
    return snap


def inspect_model(name: str | None) -> ModelFiles:
    """The folder a model name means (the embedded target, a local folder or a Hub id in the local cache), read."""
    if name in (None, "", "embedded"):
        return inspect_folder(embedded_path(), "")
    return inspect_folder(resolve_local(name), name)
