"""SpecViz: LLM decoding step by step. This module only says where the shipped files are.

ROOT holds app.py, pages/, ui/, models/ (the drafts, the Medusa heads, the grader's head, their card) and docs/ (the
committed measurements the pages quote): in a checkout (or an editable install) it is the repository itself; in an
installed wheel it is site-packages/specviz_app, which pyproject.toml maps onto the repository root, so the installed
tree is the checkout's. It is found from this file, never from the working directory: `specviz` runs from any
folder."""
from __future__ import annotations

import pathlib

_ABOVE = pathlib.Path(__file__).resolve().parent.parent  # the repository, or site-packages
ROOT = _ABOVE / "specviz_app" if (_ABOVE / "specviz_app").is_dir() else _ABOVE


def missing_file(path: pathlib.Path) -> str:
    """The sentence for a shipped file that is not there: which file, where it was looked for, how to get it."""
    try:
        name = path.relative_to(ROOT).as_posix()
    except ValueError:
        name = str(path)
    return (f"{name} is missing (looked for it in {ROOT}): reinstall specviz (`pip install .` in its repository) "
            "or run it from a checkout of the repository.")
