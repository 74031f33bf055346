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
    goal: int = 3  # drills right (of those kinds)
    predict_on: str = ""  # a step page's Predict first ("speculative", "beam", "tree") that counts for the day
    predictions: int = 0  # predictions made there
    quiz_cards: int = 0  # quiz cards answered
    mocks: int = 0  # mock interviews finished


WEEK = (
    Day("Greedy vs beam: a search", ("pages/1_Beam_search.py",),
        "Step a beam search with **Predict first** on: pick the survivors before each prune; then rank hypotheses "
        "under a length penalty.", ("beam-rank", "live-beam-prune"), 2, "beam", 12),
    Day("Speculative decoding, one cycle at a time", ("pages/2_Speculative_decoding.py",),
        "Turn on **Predict first** and call each draft's verdict before it is drawn, in greedy and in rejection "
        "sampling.", (), 0, "speculative", 10),
    Day("Why it is exact", ("pages/4_Lossless_lab.py",),
        "Shape p and q until the residual makes sense; then accept/reject, residual and acceptance-rate drills.",
        ("accept", "residual", "acceptance-rate", "live-accept", "live-residual")),
    Day("How fast: choosing K", ("pages/3_Speedup_lab.py", "pages/5_Drafter_comparison.py"),
        "Move a, c and K until best K and 'don't speculate' are predictable; drills on tokens per pass, walltime and "
        "the best K.", ("tokens-per-pass", "walltime", "best-k", "greedy-verify", "live-greedy-verify")),
    Day("Trees and no-draft speculation", ("pages/7_Tree_speculation.py", "pages/9_Lookahead_decoding.py"),
        "Predict how far each tree walk goes (**Predict first** on the Tree page), read the tree mask and the "
        "position ids; then tree-walk drills.", ("tree-walk",), 2, "tree", 3),
    Day("Serving: memory and the roofline", ("pages/8_Serving_lab.py",),
        "KV-cache GiB for a 70B model at 32k, and the batch where the roofline turns: drills until they are quick.",
        ("kv-gib", "roofline-batch")),
    Day("Interview day", ("pages/6_Interview_QA.py",),
        "A quiz round on your missed cards, then one mock interview end to end with the timer on.", (), 0,
        quiz_cards=10, mocks=1),
)


def status(drill_stats: dict[str, tuple[int, int]], cards_answered: int, predictions: dict[str, int],
           mocks: int) -> list[tuple[Day, list[tuple[str, int, int]]]]:
    """Per day: (day, [(what, done, goal), ...]) from the learner's progress; a day is complete when every part is.
    predictions: predictions made per step page."""
    out = []
    for d in WEEK:
        parts = []
        if d.drills:
            parts.append(("drills right", min(sum(drill_stats.get(k, (0, 0))[1] for k in d.drills), d.goal), d.goal))
        if d.predictions:
            parts.append(("predictions", min(predictions.get(d.predict_on, 0), d.predictions), d.predictions))
        if d.quiz_cards:
            parts.append(("quiz cards", min(cards_answered, d.quiz_cards), d.quiz_cards))
        if d.mocks:
            parts.append(("mock interview", min(mocks, d.mocks), d.mocks))
        out.append((d, parts))
    return out


def complete(parts) -> bool:
    return all(got >= goal for _, got, goal in parts)
