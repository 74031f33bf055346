"""Learner progress on both backends, SQLite and a real PostgreSQL the tests start (tests/postgres.py): Leitner boxes,
parallel writers from several processes lose nothing (also on one card), a new process reads it, one migration path;
a bad database URL is one sentence."""
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.errors import SpecVizError
from specviz.practice.progress import INTERVAL_DAYS, Progress, clean_name

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.fast


@pytest.fixture
def opened():
    """Progress(target), closed after the test (a PostgreSQL store holds a pool of connections and its threads)."""
    made = []

    def open_store(target):
        made.append(Progress(target))
        return made[-1]
    yield open_store
    for p in made:
        p.close()


def test_wal_mode_and_leitner_boxes(store_target, opened):
    p = opened(store_target)
    assert p.journal_mode() == ("wal" if p.backend.dialect == "sqlite" else "postgresql")
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


def test_every_record_reads_back_the_same_on_both_backends(store_target, opened):
    """Drills, predictions, mocks and graded points, written and read through the same functions on each backend."""
    p = opened(store_target)
    me, other = p.learner("Ada"), p.learner("Grace")
    p.record_drill(me, "accept", 2 ** 40, True, "x" * 500)  # a 64-bit seed; a response cut to 200 characters
    p.record_drill(me, "accept", 1, False, "0.3")
    p.record_drill(me, "kv-gib", 3, True, "1.5")
    assert p.drill_stats(me) == {"accept": (2, 1), "kv-gib": (1, 1)} and p.drill_stats(other) == {}
    p.record_prediction(me, "spec", 3, 4)
    p.record_prediction(me, "beam", 1, 2)
    assert p.prediction_score(me) == (4, 6) and p.predictions_by_page(me) == {"spec": 4, "beam": 2}
    assert p.prediction_score(other) == (0, 0)
    p.record_mock(me, "mock-a", "strong", 0.9)
    p.record_mock(me, "mock-a", "weak", 0.25)
    assert p.mocks(me) == [("mock-a", "strong", 0.9), ("mock-a", "weak", 0.25)]
    p.record_points(me, "residual", [(0, "p - q clipped", True, True), (1, "normalised", False, False)], now=1.0)
    p.record_points(me, "residual", [(0, "p - q clipped", True, False), (1, "normalised", False, False)], now=2.0)
    p.record_points(other, "residual", [(0, "p - q clipped", False, True)], now=3.0)
    assert p.weak_points(me) == [dict(card="residual", point=1, text="normalised", missed=2, asked=2),
                                 dict(card="residual", point=0, text="p - q clipped", missed=1, asked=2)]
    assert p.overrules(me) == (1, 4) and p.overrules() == (2, 5) and p.overrules(p.learner("Lin")) == (0, 0)
    # one answer that missed every point does not fill the list: at most two rows per card, then the next card;
    # among points missed as often, the head of a rubric (its heart) before a later answer's side remarks
    kay = p.learner("Kay")
    p.record_points(kay, "residual", [(0, "p - q clipped", False, False)], now=3.0)
    p.record_points(kay, "beam", [(k, f"b{k}", False, False) for k in range(5)], now=4.0)
    weak = [(w["card"], w["point"]) for w in p.weak_points(kay)]
    assert weak == [("beam", 0), ("residual", 0), ("beam", 1)]
    p.record_points(kay, "beam", [(k, f"b{k}", k < 3, k < 3) for k in range(5)], now=5.0)  # 0-2 made this time
    weak = [(w["card"], w["point"]) for w in p.weak_points(kay)]
    assert weak == [("beam", 3), ("beam", 4), ("residual", 0)]  # missed twice; then 1 of 1 before 1 of 2
    assert p.version() == 2


def test_a_mock_steps_overrule_restates_its_points_and_the_verdict(store_target, opened):
    """A graded interview's step is overruled after its points (and maybe the verdict) were recorded: the rows are
    restated in place, stored as overruled, and the verdict follows; other answers are untouched."""
    p = opened(store_target)
    me = p.learner("Ada")
    at = p.record_points(me, "m:1", [(0, "exact", False, False), (1, "one pass", True, True)], now=5.5)
    p.record_points(me, "m:1", [(0, "exact", False, False)], now=7.25)  # another answer to the same step
    when = p.record_mock(me, "m", "L4", 0.5, now=9.125)
    assert (at, when) == (5.5, 9.125)
    p.restate_points(me, "m:1", at, [(0, "exact", False, True), (1, "one pass", True, True)])
    p.restate_mock(me, "m", when, "L6", 1.0)
    assert p.overrules(me) == (1, 3) and p.mocks(me) == [("m", "L6", 1.0)]
    assert [(w["point"], w["missed"], w["asked"]) for w in p.weak_points(me)] == [(0, 1, 2)]


def test_where_learners_and_the_grader_disagree_by_direction_and_point(store_target, opened):
    """The overrules, counted apart: by direction (the grader said missed and the learner made it count, or the
    other way) and per point, most overruled first, for one learner or everyone; a report creates no learner."""
    p = opened(store_target)
    me, other = p.learner("Ada"), p.learner("Grace")
    p.record_points(me, "residual", [(0, "clipped", False, True), (1, "normalised", True, False),
                                     (2, "resampled", True, True)], now=1.0)
    p.record_points(other, "residual", [(0, "clipped", False, True), (1, "normalised", True, True)], now=2.0)
    p.record_points(other, "beam", [(0, "B kept", False, False)], now=3.0)
    d = p.disagreements()
    assert (d["learners"], d["graded"], d["overruled"], d["to_made"], d["to_missed"]) == (2, 6, 3, 2, 1)
    assert [(x["card"], x["point"], x["overruled"], x["graded"], x["to_made"], x["to_missed"]) for x in d["points"]] \
        == [("residual", 0, 2, 2, 2, 0), ("residual", 1, 1, 2, 0, 1)]
    mine = p.disagreements(me)
    assert (mine["learners"], mine["graded"], mine["overruled"], mine["to_made"]) == (1, 3, 2, 1)
    assert p.disagreements(other, limit=0)["points"] == [] and p.overrules(other) == (1, 3)
    assert p.known("Ada") == me and p.known("Nobody") is None and p.known("Nobody") is None


def test_an_interview_under_way_is_kept_per_learner_and_chain(store_target, opened):
    p = opened(store_target)
    me, other = p.learner("Ada"), p.learner("Grace")
    assert p.interview(me, "m") is None
    p.save_interview(me, "m", '{"id": "m", "step": 1}')
    p.save_interview(me, "m", '{"id": "m", "step": 2}')  # replaces, never a second row
    p.save_interview(me, "n", '{"id": "n"}')
    assert p.interview(me, "m") == '{"id": "m", "step": 2}' and p.interview(other, "m") is None
    p.drop_interview(me, "m")
    assert p.interview(me, "m") is None and p.interview(me, "n") == '{"id": "n"}'


def test_names_are_bounded():
    for bad in ("", "   ", "x" * 41, "a\x00b"):
        with pytest.raises(SpecVizError):
            clean_name(bad)
    assert clean_name("  Ada   Lovelace ") == "Ada Lovelace"


def in_processes(target, args_list):
    """Run target(*args) in one new process per args, all at once; each must exit cleanly."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for args in args_list]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(120)
        assert pr.exitcode == 0


def _writer(path, name, n):
    p = Progress(path)
    me = p.learner(name)
    for i in range(n):
        p.record_drill(me, "accept", i, i % 2 == 0, str(i))
        p.record_card(me, f"card{i % 7}", 1.0)
        p.record_card(me, "shared", 1.0 if i % 3 else 0.0)  # every process answers this one: same learner, same card
        p.learner("everyone")  # and creates this learner at the same time as the others
    p.close()


def test_parallel_writers_lose_nothing(store_target, opened):
    path = store_target
    Progress(path).close()
    in_processes(_writer, [(path, f"learner{i}", 60) for i in range(4)])
    p = opened(path)
    for i in range(4):
        me = p.learner(f"learner{i}")
        assert p.drill_stats(me) == {"accept": (60, 30)}
        assert sum(c["seen"] for c in p.cards(me).values()) == 2 * 60
        assert p.cards(me)["shared"]["seen"] == 60 and p.cards(me)["shared"]["right"] == 40


def test_progress_survives_a_new_process(store_target, opened):
    path = store_target
    p = opened(path)
    p.record_prediction(p.learner("Ada"), "spec", 3, 4)
    out = subprocess.run([sys.executable, "-c", "from specviz.practice.progress import Progress; import sys; "
                          "p = Progress(sys.argv[1]); print(p.prediction_score(p.learner('Ada'))); p.close()",
                          str(path)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "(3, 4)"


def test_a_file_from_before_versioning_opens_as_version_1_then_migrates(tmp_path):
    """The one migration path: a SQLite file made before the store had versions (its tables, no schema_version)
    opens as version 1 with its data and migrates to 2 (interviews); opening again applies nothing twice."""
    import sqlite3

    from specviz.practice.progress import DIALECT, SCHEMA

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA.format(**DIALECT["sqlite"]))
        db.execute("INSERT INTO learners (name, created) VALUES ('Ada', 0)")
        db.execute("INSERT INTO predictions (learner, page, \"right\", total, at) VALUES (1, 'spec', 2, 3, 0)")
    for _ in range(2):
        p = Progress(path)
        assert p.version() == 2 and p.prediction_score(p.learner("Ada")) == (2, 3)
        assert p.interview(p.learner("Ada"), "m") is None  # version 2's table is there
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == [(1,), (2,)]


def _open(target):
    Progress(target).close()


def test_servers_starting_together_migrate_once(store_target, opened):
    """Several processes open a new store at the same moment (servers starting together): each migration runs once."""
    in_processes(_open, [(store_target,)] * 4)
    p = opened(store_target)
    with p._db() as db:
        assert db.execute("SELECT COUNT(*), MAX(version) FROM schema_version").fetchone() == (2, 2)


def test_a_restarted_database_loses_nothing_and_the_pool_recovers(postgres_cluster, opened):
    """PostgreSQL restarted mid-round: what was written is there, and the server's pool replaces its broken
    connections instead of handing one to a page."""
    from postgres import fresh_database, restart

    p = opened(fresh_database(postgres_cluster, "restart"))
    me = p.learner("Ada")
    p.record_card(me, "residual", 1.0)
    restart(postgres_cluster)
    p.record_card(me, "residual", 1.0)
    assert p.cards(me)["residual"]["seen"] == 2 and p.cards(me)["residual"]["box"] == 3


def test_a_database_url_is_one_sentence_not_a_folder(tmp_path, monkeypatch):
    """Issue 49's bad input: SPECVIZ_DB=postgresql://... used to create a folder named "postgresql:" with a SQLite file
    in it. A URL nobody answers, a wrong database, another scheme: one sentence each (the password never shown), and
    nothing is created in the working folder."""
    from postgres import free_port

    monkeypatch.chdir(tmp_path)
    for url, says in ((f"postgresql://teacher:s3cret@127.0.0.1:{free_port()}/cohort", "Cannot open the progress"),
                      ("mysql://teacher@db.example/cohort", "mysql:// URL")):
        monkeypatch.setenv("SPECVIZ_DB", url)
        with pytest.raises(SpecVizError, match=says) as e:
            Progress()
        assert "\n" not in str(e.value) and "s3cret" not in str(e.value) and not any(tmp_path.iterdir())


def test_a_database_that_does_not_exist_is_one_sentence(postgres_cluster):
    url = postgres_cluster.rsplit("/", 1)[0] + "/no_such_cohort"
    with pytest.raises(SpecVizError, match="Cannot open the progress database .*no_such_cohort") as e:
        Progress(url)
    assert "\n" not in str(e.value)
