"""A learner's progress in SQLite (the standard library's sqlite3, WAL mode): quiz card boxes (Leitner),
quiz answers, drill history, predict-then-reveal scores, mock-interview results.

Why SQLite and not a file per learner: a classroom of learners on one server write at the same time; WAL lets
readers and one writer proceed together and the busy timeout queues the writers, so nothing is lost. Every
call opens its own short connection: Streamlit runs each session in its own thread, and a connection must
not cross threads.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import sqlite3
import time

from specviz.errors import SpecVizError

MAX_NAME = 40
# Leitner boxes 1..5: a card answered right moves up one box and comes back after the box's interval (days); a
# card missed goes back to box 1 and comes back in the same session
INTERVAL_DAYS = {1: 0.0, 2: 1.0, 3: 3.0, 4: 7.0, 5: 16.0}
RIGHT = 0.8  # a quiz answer scoring at least this (rubric points ticked / points) counts as right

SCHEMA = """
CREATE TABLE IF NOT EXISTS learners (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cards (learner INTEGER NOT NULL, card TEXT NOT NULL, box INTEGER NOT NULL,
    due REAL NOT NULL, seen INTEGER NOT NULL, right INTEGER NOT NULL, PRIMARY KEY (learner, card));
CREATE TABLE IF NOT EXISTS answers (id INTEGER PRIMARY KEY, learner INTEGER NOT NULL, card TEXT NOT NULL,
    score REAL NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS drills (id INTEGER PRIMARY KEY, learner INTEGER NOT NULL, kind TEXT NOT NULL,
    seed INTEGER NOT NULL, correct INTEGER NOT NULL, response TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (id INTEGER PRIMARY KEY, learner INTEGER NOT NULL, page TEXT NOT NULL,
    right INTEGER NOT NULL, total INTEGER NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS mocks (id INTEGER PRIMARY KEY, learner INTEGER NOT NULL, mock TEXT NOT NULL,
    level TEXT NOT NULL, score REAL NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS points (id INTEGER PRIMARY KEY, learner INTEGER NOT NULL, card TEXT NOT NULL,
    point INTEGER NOT NULL, text TEXT NOT NULL, graded INTEGER NOT NULL, made INTEGER NOT NULL,
    overruled INTEGER NOT NULL, at REAL NOT NULL);
"""


def default_path() -> pathlib.Path:
    """SPECVIZ_DB if set, else the user's cache folder (where the converted model lives too)."""
    env = os.environ.get("SPECVIZ_DB")
    if env:
        if "://" in env:  # a database URL is never quietly taken for a file path (it made a folder "postgresql:")
            scheme = env.split("://", 1)[0][:20]
            raise SpecVizError(f"SPECVIZ_DB is a {scheme}:// URL, and this version keeps progress in SQLite only: "
                               "set SPECVIZ_DB to a file path, or unset it for ~/.cache/specviz/progress.sqlite.")
        return pathlib.Path(env).expanduser()
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    return base / "specviz" / "progress.sqlite"


def clean_name(name: str) -> str:
    """A learner's name: trimmed, 1 to MAX_NAME characters, no control characters."""
    name = " ".join(str(name).split())
    if not name:
        raise SpecVizError("Type a name (any name: it only keeps your progress apart from others').")
    if len(name) > MAX_NAME or any(ord(ch) < 32 for ch in name):
        raise SpecVizError(f"A name is at most {MAX_NAME} characters of text.")
    return name


class Progress:
    def __init__(self, path: str | os.PathLike | None = None):
        self.path = pathlib.Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")  # persistent: set once, kept in the file
            db.executescript(SCHEMA)

    @contextlib.contextmanager
    def _db(self):
        db = sqlite3.connect(self.path, timeout=30)  # a busy writer is waited for, not failed on
        try:
            db.execute("PRAGMA busy_timeout = 30000")
            with db:  # one transaction: committed on success, rolled back on an exception
                yield db
        finally:
            db.close()

    def journal_mode(self) -> str:
        with self._db() as db:
            return db.execute("PRAGMA journal_mode").fetchone()[0]

    # ------------------------------------------------------------------ learners
    def learner(self, name: str) -> int:
        """The learner's id, created on first use."""
        name = clean_name(name)
        with self._db() as db:
            db.execute("INSERT OR IGNORE INTO learners (name, created) VALUES (?, ?)", (name, time.time()))
            return db.execute("SELECT id FROM learners WHERE name = ?", (name,)).fetchone()[0]

    # ------------------------------------------------------------------ quiz cards (Leitner boxes)
    def record_card(self, learner: int, card: str, score: float, now: float | None = None) -> int:
        """Record one answer (score in [0, 1]); returns the card's new box."""
        now = time.time() if now is None else now
        score = min(max(float(score), 0.0), 1.0)
        with self._db() as db:
            row = db.execute("SELECT box, seen, right FROM cards WHERE learner = ? AND card = ?",
                             (learner, card)).fetchone()
            box, seen, right = row if row else (1, 0, 0)
            ok = score >= RIGHT
            box = min(box + 1, max(INTERVAL_DAYS)) if ok else 1
            db.execute("INSERT OR REPLACE INTO cards VALUES (?, ?, ?, ?, ?, ?)",
                       (learner, card, box, now + INTERVAL_DAYS[box] * 86400, seen + 1, right + ok))
            db.execute("INSERT INTO answers (learner, card, score, at) VALUES (?, ?, ?, ?)",
                       (learner, card, score, now))
        return box

    def cards(self, learner: int) -> dict[str, dict]:
        with self._db() as db:
            rows = db.execute("SELECT card, box, due, seen, right FROM cards WHERE learner = ?", (learner,)).fetchall()
        return {c: dict(box=b, due=d, seen=s, right=r) for c, b, d, s, r in rows}

    def due_order(self, learner: int, card_ids, now: float | None = None) -> list[str]:
        """Cards in study order: due seen cards first (lowest box, most overdue), then unseen ones (in the order
        given), then cards not yet due (soonest first)."""
        now = time.time() if now is None else now
        known = self.cards(learner)
        due = sorted((c for c in card_ids if c in known and known[c]["due"] <= now),
                     key=lambda c: (known[c]["box"], known[c]["due"]))
        unseen = [c for c in card_ids if c not in known]
        later = sorted((c for c in card_ids if c in known and known[c]["due"] > now), key=lambda c: known[c]["due"])
        return due + unseen + later

    def missed(self, learner: int) -> set[str]:
        """Cards whose latest answer scored below RIGHT."""
        with self._db() as db:
            rows = db.execute("SELECT card, score FROM answers WHERE learner = ? ORDER BY at, id",
                              (learner,)).fetchall()
        last = {}
        for card, score in rows:
            last[card] = score
        return {c for c, s in last.items() if s < RIGHT}

    # ------------------------------------------------------------------ drills, predictions, mocks
    def record_drill(self, learner: int, kind: str, seed: int, correct: bool, response: str) -> None:
        with self._db() as db:
            db.execute("INSERT INTO drills (learner, kind, seed, correct, response, at) VALUES (?, ?, ?, ?, ?, ?)",
                       (learner, kind, int(seed), int(bool(correct)), str(response)[:200], time.time()))

    def drill_stats(self, learner: int) -> dict[str, tuple[int, int]]:
        """Per drill kind: (tried, right)."""
        with self._db() as db:
            rows = db.execute("SELECT kind, COUNT(*), SUM(correct) FROM drills WHERE learner = ? GROUP BY kind",
                              (learner,)).fetchall()
        return {k: (n, r or 0) for k, n, r in rows}

    def record_prediction(self, learner: int, page: str, right: int, total: int) -> None:
        with self._db() as db:
            db.execute("INSERT INTO predictions (learner, page, right, total, at) VALUES (?, ?, ?, ?, ?)",
                       (learner, page, int(right), int(total), time.time()))

    def prediction_score(self, learner: int) -> tuple[int, int]:
        with self._db() as db:
            right, total = db.execute("SELECT SUM(right), SUM(total) FROM predictions WHERE learner = ?",
                                      (learner,)).fetchone()
        return right or 0, total or 0

    def predictions_by_page(self, learner: int) -> dict[str, int]:
        """Predictions made per step page (each drafted token, beam candidate or tree walk is one)."""
        with self._db() as db:
            rows = db.execute("SELECT page, SUM(total) FROM predictions WHERE learner = ? GROUP BY page",
                              (learner,)).fetchall()
        return {page: n for page, n in rows}

    def record_mock(self, learner: int, mock: str, level: str, score: float) -> None:
        with self._db() as db:
            db.execute("INSERT INTO mocks (learner, mock, level, score, at) VALUES (?, ?, ?, ?, ?)",
                       (learner, mock, level, float(score), time.time()))

    def mocks(self, learner: int) -> list[tuple[str, str, float]]:
        with self._db() as db:
            return db.execute("SELECT mock, level, score FROM mocks WHERE learner = ? ORDER BY at, id",
                              (learner,)).fetchall()

    # ------------------------------------------------------------------ rubric points, graded (issue 47)
    def record_points(self, learner: int, card: str, points, now: float | None = None) -> None:
        """One graded answer's points: (index, text, what the grader said, what counts). A point where the two
        differ was overruled by the learner: stored as such, so the project can measure where they disagree."""
        now = time.time() if now is None else now
        with self._db() as db:
            db.executemany("INSERT INTO points (learner, card, point, text, graded, made, overruled, at) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           [(learner, card, int(i), str(text)[:300], int(bool(graded)), int(bool(made)),
                             int(bool(graded) != bool(made)), now) for i, text, graded, made in points])

    def weak_points(self, learner: int, limit: int = 5) -> list[dict]:
        """The rubric points this learner missed most often (counting what stood after any overrule), with how
        often each was asked; ties: the most recently missed first."""
        with self._db() as db:
            rows = db.execute("SELECT card, point, MAX(text), SUM(1 - made), COUNT(*), MAX(at) FROM points "
                              "WHERE learner = ? GROUP BY card, point HAVING SUM(1 - made) > 0 "
                              "ORDER BY SUM(1 - made) DESC, MAX(at) DESC LIMIT ?", (learner, int(limit))).fetchall()
        return [dict(card=c, point=p, text=t, missed=m, asked=n) for c, p, t, m, n, _ in rows]

    def overrules(self, learner: int | None = None) -> tuple[int, int]:
        """(points overruled, points graded), for one learner or everyone: where learners and grader disagree."""
        where, args = ("WHERE learner = ?", (learner,)) if learner is not None else ("", ())
        with self._db() as db:
            over, total = db.execute(f"SELECT SUM(overruled), COUNT(*) FROM points {where}", args).fetchone()
        return over or 0, total

