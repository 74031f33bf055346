"""The committed benchmarks (docs/*.json) the pages quote: read with their date and file name, never typed in."""
from __future__ import annotations

import json

from specviz import ROOT

DOCS = ROOT / "docs"
PACKING_BENCH = "bench-2026-11-23b.json"  # the run with packed and unpacked forwards side by side (README)


def load_bench(name: str = PACKING_BENCH) -> dict | None:
    """A committed benchmark's JSON (docs/) with its file name under "file", or None when it is missing."""
    try:
        return dict(json.loads((DOCS / name).read_text()), file=name)
    except (OSError, ValueError):
        return None
