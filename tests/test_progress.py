"""Learner progress in SQLite: WAL mode, Leitner boxes, parallel writers lose nothing, a new process reads it."""
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.errors import SpecVizError
from specviz.practice.progress import INTERVAL_DAYS, Progress, clean_name

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.fast


def test_wal_mode_and_leitner_boxes(tmp_path):
    p = Progress(tmp_path / "p.sqlite")
    assert p.journal_mode() == "wal"
    me = p.learner("Ada")
    assert p.learner("  Ada ") == me and p.learner("Grace") != me
    assert p.record_card(me, "residual", 1.0, now=0) == 2
    assert p.record_card(me, "residual", 0.8, now=0) == 3
    assert p.record_card(me, "residual", 0.5, now=0) == 1  # missed: back to box 1
    assert p.cards(me)["residual"] == dict(box=1, due=INTERVAL_DAYS[1] * 86400, seen=3, right=2)
    p.record_card(me, "tree", 1.0, now=0)  # box 2: due a day later
    order = p.due_order(me, ["new", "tree", "residual"], now=10)
    assert order == ["residual", "new", "tree"]  # due first, then unseen, then not yet due
    assert p.missed(me) == {"residual"}
    assert p.cards(p.learner("Grace")) == {}  # each learner keeps their own


def test_names_are_bounded():
    for bad in ("", "   ", "x" * 41, "a\x00b"):
        with pytest.raises(SpecVizError):
            clean_name(bad)
    assert clean_name("  Ada   Lovelace ") == "Ada Lovelace"


def _writer(path, name, n):
    p = Progress(path)
    me = p.learner(name)
    for i in range(n):
        p.record_drill(me, "accept", i, i % 2 == 0, str(i))
        p.record_card(me, f"card{i % 7}", 1.0)


def test_parallel_writers_lose_nothing(tmp_path):
    path = tmp_path / "p.sqlite"
    Progress(path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"learner{i}", 60)) for i in range(4)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(120)
        assert pr.exitcode == 0
    p = Progress(path)
    for i in range(4):
        me = p.learner(f"learner{i}")
        assert p.drill_stats(me) == {"accept": (60, 30)}
        assert sum(c["seen"] for c in p.cards(me).values()) == 60


def test_progress_survives_a_new_process(tmp_path):
    path = tmp_path / "p.sqlite"
    p = Progress(path)
    p.record_prediction(p.learner("Ada"), "spec", 3, 4)
    out = subprocess.run([sys.executable, "-c", "from specviz.practice.progress import Progress; import sys; "
                          "p = Progress(sys.argv[1]); print(p.prediction_score(p.learner('Ada')))", str(path)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "(3, 4)"


def test_a_database_url_is_one_sentence_not_a_folder(tmp_path, monkeypatch):
    """Issue 49's bad input, for now: SPECVIZ_DB=postgresql://... used to create a folder named "postgresql:" with a
    SQLite file in it. It is refused in one sentence, and nothing is created."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPECVIZ_DB", "postgresql://teacher@db.example:5432/cohort")
    with pytest.raises(SpecVizError, match="postgresql:// URL") as e:
        Progress()
    assert "\n" not in str(e.value) and not any(tmp_path.iterdir())
