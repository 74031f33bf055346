"""ruff (configured in pyproject.toml) finds nothing; pyproject's dependencies match requirements.txt."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.fast


def test_ruff_is_clean():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_pyproject_pins_what_requirements_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    pins = [p for p in pins if p]
    assert sorted(project["dependencies"]) == sorted(pins)
    assert project["scripts"]["specviz"] == "specviz.__main__:main"
    dev = [line.strip() for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
           if line.strip() and not line.startswith(("-r", "#"))]
    assert sorted(project["optional-dependencies"]["dev"]) == sorted(dev)
    assert all(re.match(r"^[A-Za-z0-9_.-]+(\[[a-z,]+\])?(==|>=)", p) for p in pins)  # an extra: psycopg[binary]
