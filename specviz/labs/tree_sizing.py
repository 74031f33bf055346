"""A draft tree sized for the hardware (Sequoia's question, Chen et al. 2024, asked of an EAGLE-2 tree): how many
nodes, how deep, so that the tokens a cycle commits per millisecond are highest on THIS machine.

EAGLE-2 ranks its candidates by value (the draft's log-probability of the root-to-node path) and keeps the best
`budget` within `depth` levels. Its expansion at each depth does not depend on the budget or on deeper levels,
so one run with a large tree says what every smaller tree would have kept: the top `budget` nodes by value among
those at depth <= `depth`. Under greedy the accepted path is the target's own continuation, so a smaller tree
accepts exactly the nodes of the big tree's accepted path that it keeps (a path's nodes rank above their
children: a child's value adds a log-probability <= 0, and ties go to the shallower node).

  tokens(budget, depth)  = 1 + mean over recorded cycles of |accepted path  ∩  top-budget nodes at depth <= depth|
  ms(budget, depth)      = depth draft passes + one target pass over budget + 1 positions   (measured, v(n))
  choose                 = argmax tokens / ms

Sequoia builds its tree from acceptance by rank and position; here the ranking is EAGLE-2's own and the table is
measured on the embedded model, so the only modelling is the cost: v(n) and the draft's pass, both timed.

The lab: size the EAGLE-2 tree for this machine: record greedy cycles of a large tree
on a few prompts, time the target's verify pass v(n) and the draft's pass with the one timer, choose the
(budget, depth) with the most tokens per millisecond, then decode with it, timed beside plain greedy and the
default tree, so the choice is shown next to what it measured."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from specviz.drafters import make_drafter
from specviz.engine.plain import plain_steps
from specviz.engine.tree import tree_speculative_steps
from specviz.labs.measure import timed_rounds
from specviz.labs.tree_compare import interpolate, verify_cost_curve
from specviz.labs.batched import PROMPTS as PROMPT_FILE
from specviz.prompting import encode_prompt
from specviz.engine.loop import run_steps


@dataclass(frozen=True)
class RecordedNode:
    value: float  # the draft's log-probability of the root-to-node path: EAGLE-2's ranking
    depth: int  # 1 = the first drafted position
    accepted: bool  # on the accepted path of the recorded (large) tree


@dataclass(frozen=True)
class Choice:
    budget: int
    depth: int
    tokens: float  # expected tokens per cycle (the bonus or correction included)
    ms: float  # expected milliseconds per cycle
    curve: tuple  # (budget, best depth there, tokens, ms, tokens per second) for every budget tried

    @property
    def tokens_per_s(self) -> float:
        return 1000 * self.tokens / self.ms


def kept(nodes: Sequence[RecordedNode], budget: int, depth: int) -> list[RecordedNode]:
    """What an EAGLE-2 tree of `budget` nodes and `depth` levels keeps of a larger recorded one (best_subtree's
    order: value, then shallower first)."""
    within = [n for n in nodes if n.depth <= depth]
    return sorted(within, key=lambda n: (-n.value, n.depth))[:budget]


def expected_tokens(cycles: Sequence[Sequence[RecordedNode]], budget: int, depth: int) -> float:
    """Tokens per cycle a (budget, depth) tree would commit on these recorded cycles, under greedy."""
    return 1 + sum(sum(n.accepted for n in kept(c, budget, depth)) for c in cycles) / len(cycles)


def feasible(cycles: Sequence[Sequence[RecordedNode]], budget: int, depth: int) -> bool:
    """The record answers for (budget, depth) only where every cycle recorded at least `budget` nodes within
    `depth` (else a node the small tree would keep may have been cut from the large one)."""
    return all(sum(n.depth <= depth for n in c) >= budget for c in cycles)


def choose(cycles: Sequence[Sequence[RecordedNode]], verify_ms: Callable[[int], float], draft_pass_ms: float,
           budgets: Sequence[int], depths: Sequence[int]) -> Choice:
    """The (budget, depth) with the most tokens per millisecond; verify_ms(n): one target pass over n positions,
    draft_pass_ms: one draft forward (a tree of depth d costs d of them: the context, then d - 1 expansions)."""
    if not cycles:
        raise ValueError("no recorded cycles to size a tree from")
    best, curve = None, []
    for b in budgets:
        at_b = None
        for d in depths:
            if d > b or not feasible(cycles, b, d):  # depth d needs at least d nodes
                continue
            tokens, ms = expected_tokens(cycles, b, d), d * draft_pass_ms + verify_ms(b + 1)
            if at_b is None or tokens / ms > at_b[2] / at_b[3]:
                at_b = (b, d, tokens, ms)
        if at_b is None:
            continue
        curve.append((*at_b, 1000 * at_b[2] / at_b[3]))
        if best is None or at_b[2] / at_b[3] > best[2] / best[3]:
            best = at_b
    if best is None:
        raise ValueError("no (budget, depth) the record can answer for")
    return Choice(best[0], best[1], best[2], best[3], tuple(curve))


# ---------------------------------------------------------------- measured on this machine
RECORD_BUDGET, RECORD_DEPTH = 64, 8  # the large tree every smaller one is read from
V_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 65)
DEFAULT = (16, 6)  # the Tree page's and the benchmark's EAGLE-2 tree


def sizing_prompts(tokenizer, n: int = 3, max_new: int = 32) -> list[list[int]]:
    """The first n benchmark prompts (chat questions, code, a story: not the drafts' training templates)."""
    prompts = json.loads(PROMPT_FILE.read_text())["prompts"][:n]
    return [encode_prompt(tokenizer, p["text"], True, 8192, max_new) for p in prompts]


def recorded_nodes(cycle) -> list[RecordedNode]:
    """A traced tree cycle's nodes with EAGLE-2's value (the sum of log q along the root-to-node path)."""
    value = []
    for node in cycle.nodes:  # parents come first
        value.append((value[node.parent] if node.parent >= 0 else 0.0) + math.log(max(node.q, 1e-30)))
    return [RecordedNode(v, node.depth, node.verdict == "accepted") for v, node in zip(value, cycle.nodes)]


def record(models, prompts: list[list[int]], max_new: int) -> tuple[list[list[RecordedNode]], float]:
    """Greedy cycles of the large tree on each prompt, and one draft pass's milliseconds (each cycle's draft
    stage over its draft passes, the prompt's first cycle left out: it also reads the prompt)."""
    cycles, draft_s, passes = [], 0.0, 0
    for ids in prompts:
        laps = []
        traced, _ = run_steps(tree_speculative_steps(models.target, make_drafter("eagle2", models), models.tokenizer,
                                                     ids, max_new, budget=RECORD_BUDGET, depth=RECORD_DEPTH, laps=laps))
        # the last cycles' trees are cut short by the token budget (no node past max_new): not a full record
        cycles += [recorded_nodes(c) for c in traced if c.context_len - len(ids) + RECORD_DEPTH < max_new]
        ends = {}  # (cycle, stage) -> time the stage ended
        for c, stage, t in laps:
            ends[(c, stage)] = t
        for c in traced[1:]:
            prev = max(t for (k, _), t in ends.items() if k == c.cycle - 1)
            draft_s += ends[(c.cycle, "draft")] - prev
            passes += c.draft_passes
    return cycles, 1000 * draft_s / max(passes, 1)


def size(models, prompts: list[list[int]] | None = None, max_new: int = 32, progress=lambda f, m: None) -> dict:
    """The choice for this machine: the recorded acceptance, the timed costs, the chosen (budget, depth) and the
    expected tokens per second against budget."""
    prompts = prompts or sizing_prompts(models.tokenizer, max_new=max_new)
    progress(0.0, "recording greedy cycles of a 64-node, 8-deep EAGLE-2 tree…")
    cycles, draft_ms = record(models, prompts, max_new)
    progress(0.5, "timing the target's verify pass at 1…65 positions…")
    curve = verify_cost_curve(models.target, prompts[0], V_SIZES)
    choice = choose(cycles, lambda n: interpolate(curve, n), draft_ms, range(1, RECORD_BUDGET + 1),
                    range(1, RECORD_DEPTH + 1))
    progress(1.0, "chosen")
    return {"choice": choice, "cycles": len(cycles), "draft_pass_ms": draft_ms, "verify_ms": curve}


def measure(models, chosen: Choice, prompts: list[list[int]], max_new: int, rounds: int = 2,
            progress=lambda f, m: None) -> list[dict]:
    """The chosen tree, the default tree and plain greedy decoding the same prompts, timed in interleaved rounds:
    tokens per target pass and tokens per second, measured."""
    t, tok = models.target, models.tokenizer

    def tree(budget, depth):
        return lambda: [run_steps(tree_speculative_steps(t, make_drafter("eagle2", models), tok, ids, max_new,
                                                         budget=budget, depth=depth))[1] for ids in prompts]

    shapes = {"plain greedy": (None, None), f"sized N={chosen.budget} D={chosen.depth}": (chosen.budget, chosen.depth),
              f"default N={DEFAULT[0]} D={DEFAULT[1]}": DEFAULT}
    runs = {name: (tree(*shape) if shape[0] else
                   lambda: [run_steps(plain_steps(t, tok, ids, max_new))[1] for ids in prompts])
            for name, shape in shapes.items()}
    seconds, results = timed_rounds(runs, rounds, progress)
    plain = sorted(seconds["plain greedy"])[len(seconds["plain greedy"]) // 2]
    greedy = [r.token_ids for r in results["plain greedy"]]
    rows = []
    for name, res in results.items():
        s = sorted(seconds[name])[len(seconds[name]) // 2]
        tokens = sum(len(r.token_ids) for r in res)
        passes = sum(r.counters.verify_passes for r in res) or 1
        rows.append({"run": name, "budget": shapes[name][0], "depth": shapes[name][1], "tokens": tokens,
                     "tokens_per_pass": tokens / passes,
                     "tokens_per_s": tokens / s, "speedup": plain / s,
                     "identical": [r.token_ids for r in res] == greedy})  # greedy: every tree is plain greedy
    return rows


def size_and_measure(models, max_new: int = 32, rounds: int = 2, progress=lambda f, m: None) -> dict:
    """size(), then the chosen tree measured beside the default one and plain greedy on the same prompts."""
    prompts = sizing_prompts(models.tokenizer, max_new=max_new)
    sized = size(models, prompts, max_new, lambda f, m: progress(0.6 * f, m))
    sized["measured"] = measure(models, sized["choice"], prompts, max_new, rounds,
                                progress=lambda f, m: progress(0.6 + 0.4 * f, m))
    return sized
