"""Distil the embedded target's drafts: `python -m specviz.distill [train|eval] ...` (specviz/training/cli.py)."""
from specviz.training.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
