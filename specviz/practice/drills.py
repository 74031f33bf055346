"""Drills: exercises with exact answers, generated deterministically from a seed and graded.

Two sources. Formula drills (formula_drills.py) draw their parameters from a seeded generator (the numbers an
interviewer throws at you: "a = 0.62, c = 0.08: what K?"). Live drills (live_drills.py) take their numbers from a
real cycle of the embedded model (p, q and u of an actual verify pass, the candidates of an actual beam step): the
learner practises on the model's own numbers, and the page that drew that cycle is one link away.

Every drill carries `given`: every input needed to recompute `answer` independently (the tests do, over many
seeds). Numeric answers are graded with a stated absolute tolerance (drill_grading.py). This module is the
registry, DRILLS and make, and the one import for the page and the CLI: Drill, grade and MAX_RESPONSE come with it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from specviz.errors import SpecVizError
from specviz.practice.drill_grading import MAX_RESPONSE, Drill, Grade, grade
from specviz.practice.formula_drills import (accept, acceptance_rate, beam_rank, best_k_drill, greedy_verify, kv_gib,
                                             residual, roofline_batch, tokens_per_pass, tree_walk, walltime)
from specviz.practice.live_drills import live_accept, live_beam_prune, live_greedy_verify, live_residual

__all__ = ["DRILLS", "MAX_RESPONSE", "Drill", "DrillKind", "Grade", "grade", "make"]


@dataclass(frozen=True)
class DrillKind:
    name: str
    title: str
    make: object  # (random.Random, seed) -> Drill, or (models, seed) -> Drill for live kinds
    live: bool = False
    page: str = ""
    blurb: str = field(default="")


DRILLS: dict[str, DrillKind] = {k.name: k for k in [
    DrillKind("accept", "Accept or reject (p, q, u)", accept, page="pages/2_Speculative_decoding.py"),
    DrillKind("residual", "The residual after a rejection", residual, page="pages/4_Lossless_lab.py"),
    DrillKind("tokens-per-pass", "Expected tokens per verify pass", tokens_per_pass, page="pages/3_Speedup_lab.py"),
    DrillKind("walltime", "Walltime improvement", walltime, page="pages/3_Speedup_lab.py"),
    DrillKind("best-k", "The best K (or don't speculate)", best_k_drill, page="pages/3_Speedup_lab.py"),
    DrillKind("acceptance-rate", "Acceptance rate from p and q", acceptance_rate, page="pages/4_Lossless_lab.py"),
    DrillKind("kv-gib", "KV-cache memory", kv_gib, page="pages/8_Serving_lab.py"),
    DrillKind("greedy-verify", "Greedy verification", greedy_verify, page="pages/2_Speculative_decoding.py"),
    DrillKind("roofline-batch", "Where the roofline turns compute-bound", roofline_batch,
              page="pages/8_Serving_lab.py"),
    DrillKind("beam-rank", "Length penalty: which hypothesis wins", beam_rank, page="pages/1_Beam_search.py"),
    DrillKind("tree-walk", "Greedy walk of a draft tree", tree_walk, page="pages/7_Tree_speculation.py"),
    DrillKind("live-accept", "Live: accept or reject a real draft token", live_accept, True,
         "pages/2_Speculative_decoding.py"),
    DrillKind("live-residual", "Live: the residual of a real rejection", live_residual, True,
         "pages/2_Speculative_decoding.py"),
    DrillKind("live-greedy-verify", "Live: greedy verification of a real cycle", live_greedy_verify, True,
         "pages/2_Speculative_decoding.py"),
    DrillKind("live-beam-prune", "Live: which real beam candidates survive", live_beam_prune, True,
         "pages/1_Beam_search.py"),
]}


def make(kind: str, seed: int, models=None) -> Drill:
    """The drill of `kind` for `seed` (the same drill every time); live kinds need the loaded models."""
    if kind not in DRILLS:
        raise SpecVizError(f"Unknown drill kind {kind[:40]!r}: use one of {', '.join(DRILLS)}.")
    if not 0 <= seed < 2 ** 31:
        raise SpecVizError(f"The seed must be in 0..2^31 - 1; got {seed}.")
    k = DRILLS[kind]
    if k.live:
        if models is None:
            raise SpecVizError(f"The {kind} drill reads a real run: it needs the embedded model loaded.")
        return k.make(models, seed)
    return k.make(random.Random(f"{kind}:{seed}"), seed)

