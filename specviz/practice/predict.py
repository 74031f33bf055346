"""Predict, then reveal: the learner commits a prediction from what is on screen before the stage that
reveals it; these pure functions mark each prediction and explain a wrong one with the numbers on screen."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Marked:
    position: int  # 0-based draft position
    predicted: bool | None  # True: accept; None: no prediction given
    actual: bool | None  # None: never ruled on (after the cycle's first rejection)
    right: bool | None  # None: not graded (no prediction, or not reached)
    why: str


def _q(text: str) -> str:
    return "“" + text.replace("\n", "↵") + "”"


def mark_cycle(cycle, predicted: dict[int, bool]) -> list[Marked]:
    """Per drafted token of a speculative cycle: the prediction (accept = True) against the verdict. Greedy: a
    draft is accepted when it is the target's top choice (both on the verify chart). Sampling: accepted when
    u < min(1, p/q) (p and q on the verify chart; u is drawn at the verdict, so a prediction there is a bet on
    the odds, and the explanation says how likely each outcome was)."""
    out = []
    for i, d in enumerate(cycle.drafts):
        guess = predicted.get(i)
        if i >= len(cycle.verdicts):
            out.append(Marked(i, guess, None, None, "not reached: after the first rejection the target's work at "
                                                    "later positions is discarded, so these drafts are never judged"))
            continue
        v = cycle.verdicts[i]
        if cycle.verify_mode == "greedy":
            top = cycle.target_top[i].text if i < len(cycle.target_top) else "?"
            why = (f"the draft {_q(d.text)} is the target's top choice there" if v.accepted else
                   f"the draft {_q(d.text)} is not the target's top choice {_q(top)}")
        else:
            why = (f"min(1, p/q) = min(1, {v.p:.3g}/{v.q:.3g}) = {v.accept_prob:.3f}, and u = {v.u:.3f} is "
                   f"{'below' if v.accepted else 'not below'} it (accepted with probability {v.accept_prob:.0%})")
        out.append(Marked(i, guess, v.accepted, None if guess is None else guess == v.accepted, why))
    return out


def score(marked: list[Marked]) -> tuple[int, int]:
    """(right, graded) over the predictions that could be graded."""
    graded = [m for m in marked if m.right is not None]
    return sum(m.right for m in graded), len(graded)


def mark_beam(candidates, chosen: set[int], beams: int) -> tuple[int, list[str]]:
    """A beam step's prediction: which of the drawn candidates stay as running beams. Returns (right, lines): a
    candidate is right when the learner's in/out matches its fate; each line explains the fate with its rank."""
    ranked = sorted(range(len(candidates)), key=lambda i: -candidates[i].score)
    lines, right = [], 0
    for i, c in enumerate(candidates):
        kept = c.status == "kept"
        ok = (i in chosen) == kept
        right += ok
        fate = ("kept: among the top B = %d by cumulative log-prob" % beams if kept else
                "finished: it ends with end-of-sequence, so it leaves the beam for the finished list"
                if c.status == "finished" else f"pruned: below the B = {beams} best")
        lines.append(f"{'✓' if ok else '✗'} {_q(c.text)} ({c.score:.3f}, #{ranked.index(i) + 1}): {fate}")
    return right, lines


def mark_tree(cycle, predicted: int) -> tuple[bool, str]:
    """A tree cycle's prediction: how many drafted tokens the walk accepts. The explanation names the accepted
    path and where it stopped."""
    by_index = {n.index: n for n in cycle.nodes}
    path = " → ".join(_q(by_index[i].text) for i in cycle.path) or "nothing"
    deepest = max((n.depth for n in cycle.nodes), default=0)
    stop = ("every depth of the tree passed" if cycle.accepted == deepest else
            f"at depth {cycle.accepted + 1} no child passed")
    why = (f"the walk accepted {cycle.accepted} ({path}): {stop}; then the target's own {_q(cycle.new_text)} "
           f"({cycle.new_origin}).")
    return predicted == cycle.accepted, why
