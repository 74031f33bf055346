"""The app's server runs PyTorch's OpenMP threads passive (ui/__init__.py): after each parallel region they
sleep instead of spinning, so on a shared 2-core classroom server they leave the CPU to the other sessions."""
import ast
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# CPU time per wall second while a thread runs small matrix products with 2 ms pauses between them: spinning
# threads keep burning the pauses (1.27 here, two cores), passive ones do not (0.4)
PROBE = """
import sys, time
if sys.argv[1] == "app":
    import ui.sidebar  # what app.py imports first
import torch
x = torch.randn(256, 256)
c0, w0 = time.process_time(), time.perf_counter()
for _ in range(200):
    x @ x
    time.sleep(0.002)
print((time.process_time() - c0) / (time.perf_counter() - w0))
"""


def cpu_per_wall(mode):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    return float(out.stdout.split()[-1])


def test_the_server_process_does_not_spin():
    plain = cpu_per_wall("plain")
    if plain < 0.8:
        pytest.skip(f"this machine's OpenMP does not spin between regions (cpu/wall {plain:.2f}): nothing to see")
    app = cpu_per_wall("app")
    assert app < 0.8 < plain, f"cpu/wall with the app's setting {app:.2f}, without {plain:.2f}"


@pytest.mark.fast  # model-free
def test_app_imports_ui_before_anything_that_loads_torch():
    """libgomp reads the policy once, when torch loads: app.py (the entry point every page runs after) must import
    the ui package before any module that imports torch."""
    tree = ast.parse((ROOT / "app.py").read_text())
    first = next(n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                 and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
                 and not (isinstance(n, ast.Import) and n.names[0].name == "streamlit"))
    assert isinstance(first, ast.ImportFrom) and first.module.split(".")[0] == "ui", ast.unparse(first)
