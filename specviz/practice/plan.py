"""The one-week study path on the home page: each day a page to watch and what to practise there, and what
counts as done (from the learner's progress in the database). Data plus one pure function."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Day:
    title: str
    pages: tuple[str, ...]  # what to watch (registered page paths)
    practise: str  # what to do, in a sentence
    drills: tuple[str, ...] = ()  # drill kinds that count for the day
    goal: int = 3  # drills right (of those kinds) for the day to be done
    quiz_cards: int = 0  # or: quiz cards answered
    predictions: int = 0  # or: predictions made on the step pages
    mocks: int = 0  # or: mock interviews finished


WEEK = (
    Day("Greedy vs beam: a search", ("pages/1_Beam_search.py",),
        "Step a beam search at B = 1, 3 and 8 and watch where it leaves greedy; then rank hypotheses under a length "
        "penalty.", ("beam-rank", "live-beam-prune")),
    Day("Speculative decoding, one cycle at a time", ("pages/2_Speculative_decoding.py",),
        "Turn on **Predict first** and call each draft's verdict before it is drawn, in greedy and in rejection "
        "sampling.", (), 0, predictions=10),
    Day("Why it is exact", ("pages/4_Lossless_lab.py",),
        "Shape p and q until the residual makes sense; then accept/reject, residual and acceptance-rate drills.",
        ("accept", "residual", "acceptance-rate", "live-accept", "live-residual")),
    Day("How fast: choosing K", ("pages/3_Speedup_lab.py", "pages/5_Drafter_comparison.py"),
        "Move a, c and K until best K and 'don't speculate' are predictable; drills on tokens per pass, walltime and "
        "the best K.", ("tokens-per-pass", "walltime", "best-k", "greedy-verify", "live-greedy-verify")),
    Day("Trees and no-draft speculation", ("pages/7_Tree_speculation.py", "pages/9_Lookahead_decoding.py"),
        "Compare a chain and a tree at the same verify budget; read the tree mask and the position ids.",
        (), 0, quiz_cards=8),
    Day("Serving: memory and the roofline", ("pages/8_Serving_lab.py",),
        "KV-cache GiB for a 70B model at 32k, and the batch where the roofline turns: drills until they are quick.",
        ("kv-gib", "roofline-batch")),
    Day("Interview day", ("pages/6_Interview_QA.py",),
        "A quiz round on your missed cards, then one mock interview end to end with the timer on.", (), 0,
        quiz_cards=10, mocks=1),
)


def status(drill_stats: dict[str, tuple[int, int]], cards_answered: int, predictions: int, mocks: int) -> list[tuple[Day, int, int]]:
    """Per day: (day, done, goal) from the learner's progress; the day is complete when done >= goal."""
    out = []
    for d in WEEK:
        parts = []
        if d.drills:
            parts.append((min(sum(drill_stats.get(k, (0, 0))[1] for k in d.drills), d.goal), d.goal))
        if d.predictions:
            parts.append((min(predictions, d.predictions), d.predictions))
        if d.quiz_cards:
            parts.append((min(cards_answered, d.quiz_cards), d.quiz_cards))
        if d.mocks:
            parts.append((min(mocks, d.mocks), d.mocks))
        out.append((d, sum(p[0] for p in parts), sum(p[1] for p in parts)))
    return out
