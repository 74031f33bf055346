"""The README is a front door: small, naming every page, its commands real, its links alive, and its performance
table the committed benchmark's own numbers (a rerun that changes them fails here until the README follows)."""
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.practice.drills import DRILLS
from ui.registry import PAGES

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
MAX_BYTES = 12_000  # issue 36: at most 12 KB; the history lives in docs/performance.md


def test_readme_is_at_most_12_kb():
    size = len(README.encode())
    assert size <= MAX_BYTES, f"README.md is {size} bytes: move detail to docs/ (performance.md) instead"


def test_readme_names_every_registered_page():
    for title in ["Home"] + [p.title for p in PAGES]:
        assert f"**{title}**" in README, f"README's page table lacks {title!r}"


def test_readme_gives_the_two_commands_and_links_the_performance_history():
    assert "make app" in README and "make test" in README
    assert "(docs/performance.md)" in README
    assert (ROOT / "docs" / "performance.md").is_file()


def test_every_linked_or_quoted_file_exists():
    links = re.findall(r"\]\(([^)\s#]+)", README)  # markdown links and images
    quoted = re.findall(r"(?<![\w/.])((?:docs|models|specviz|tests|ui|pages)/[\w./-]*[\w/])", README)
    assert "docs/screenshot.png" in links and "docs/performance.md" in links
    for path in links + quoted:
        if "://" in path:
            continue
        assert (ROOT / path).exists(), f"README refers to {path}, which does not exist"


def test_quoted_drill_kinds_are_real():
    kinds = re.findall(r"specviz drill\b[^\n`]*--kind ([\w-]+)", README)
    assert kinds, "README shows no `python -m specviz drill --kind ...` example"
    for kind in kinds:
        assert kind in DRILLS, f"README quotes drill kind {kind!r}; kinds: {sorted(DRILLS)}"


def _help(*args) -> str:
    return subprocess.run([sys.executable, "-m", "specviz", *args, "--help"], cwd=ROOT, capture_output=True,
                          text=True, check=True, timeout=60).stdout


def test_quoted_cli_flags_and_choices_exist():
    lines = re.findall(r"^python -m specviz (decode|drill|export|where|grade) (.*)$", README, flags=re.M)
    assert {"decode", "drill", "where"} <= {cmd for cmd, _ in lines}
    helps = {cmd: _help(cmd) for cmd in {cmd for cmd, _ in lines}}
    for cmd, rest in lines:
        rest = rest.split("  #")[0]
        for flag, value in re.findall(r"(--[\w-]+)(?:\s+([\w.,-]+))?", rest):
            assert flag in helps[cmd], f"README: `python -m specviz {cmd} ... {flag}`, not an option"
            if flag in ("--method", "--drafter", "--tree"):
                assert re.search(r"\{[^}]*\b" + re.escape(value) + r"\b[^}]*\}", helps[cmd]), (flag, value)
    for module in ("specviz.bench", "specviz.distill"):
        if f"python -m {module}" in README:
            assert importlib.util.find_spec(module) is not None, module


def test_performance_table_is_the_committed_benchmark():
    rows = re.findall(r"^\|[^|\n]*\| `([^`]+)` \| ([^|]+) \| ([^|]+) \| `(docs/bench-[\w-]+\.json)` \|$", README,
                      flags=re.M)
    assert 5 <= len(rows) <= 8, "the README's performance table: a few rows, each naming its bench row and run"
    runs = set()
    for name, tau, speedup, path in rows:
        run = json.loads((ROOT / path).read_text())
        runs.add(path)
        assert name in run["rows"], f"{path} has no row {name!r}"
        row = run["rows"][name]
        assert speedup.strip() == f"{row['vs_ours_greedy']:.2f}", (path, name, speedup, row["vs_ours_greedy"])
        mal = row.get("mean_acceptance_length")
        assert tau.strip() == ("–" if mal is None else f"{mal:.2f}"), (path, name, tau, mal)
        assert run["identical"], f"{path}: not every greedy output was token-identical"
    # the date and machine stated above the table are the runs' own
    text = " ".join(README.split())  # as rendered: line breaks are spaces
    for path in runs:
        run = json.loads((ROOT / path).read_text())
        assert f"Measured {run['date']}" in text
        assert f"torch {run['torch']}, {run['threads']} threads" in text
        assert f"{len(run['prompts'])} prompts × {run['max_new_tokens']} new tokens" in text
        assert ("AVX2, no AVX-512" in text) == ("avx2" in run["cpu_flags"] and "avx512f" not in run["cpu_flags"])
