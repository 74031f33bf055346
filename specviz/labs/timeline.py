"""A cycle's timeline (issue 38, item 4): where the milliseconds of a few decoding cycles go, stage by stage,
for plain greedy, a speculative chain and an EAGLE-2 tree on the same prompt.

Each engine marks the end of every stage of a cycle (Decoding.lap): the draft's forwards, the ONE target
forward (verify), the acceptance rule, the rollback of both caches, and the overhead (the cycle's trace event,
committing its tokens, the counters). A drafter that reads the target's states first pays a prefill pass.
Plain greedy's cycle is one target forward and choosing the token. Spans are measured in the run itself,
after one untimed warm-up run of each method (oneDNN sets up every new shape on its first call).

`python -m specviz where --show timeline --prompt "..."` prints the same figures as the page.
"""
from __future__ import annotations

import statistics

from specviz.drafters import drafter_choices, make_drafter
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.engine.tree import tree_speculative_steps
from specviz.trace import STAGES, Lane, Span

def spans_of(laps: list) -> list[Span]:
    """Decoding.lap marks -> spans: each mark ends a stage begun at the mark before it; a "start" mark only
    begins one (what the caller did between cycles is nobody's stage)."""
    if not laps:
        return []
    t0 = laps[0][2]
    spans = []
    for (_, _, before), (cycle, stage, at) in zip(laps, laps[1:]):
        if stage != "start":
            spans.append(Span(cycle, stage, 1000 * (before - t0), 1000 * (at - t0)))
    return spans


def measure(models, ids: list[int], max_new: int = 24, k: int = 4, budget: int = 16, depth: int = 6,
            chain: str | None = None, warm: bool = True, rounds: int = 3) -> list[Lane]:
    """Plain greedy, a chain of K from `chain` (default: the best these models have, as the pages
    order them) and, when the feature draft is loaded, the EAGLE-2 tree of `budget` nodes and `depth`, each on `ids`
    for `max_new` tokens, greedy. Each runs once untimed first (warm), then `rounds` times interleaved (plain,
    chain, tree, plain, ...: a disturbance from whatever else shares the cores lands on all three alike); each
    lane is its round of median total time."""
    target, tok = models.target, models.tokenizer
    chain = chain or next(iter(drafter_choices(models).values()))  # the best chain drafter these models have
    runs = [("plain greedy", lambda laps: plain_steps(target, tok, ids, max_new, laps=laps)),
            (f"chain K = {k} ({chain})",
             lambda laps: speculative_steps(target, make_drafter(chain, models), tok, ids, max_new, k, laps=laps))]
    if models.feature_draft is not None:
        runs.append((f"EAGLE-2 tree, {budget} nodes, depth {depth}",
                     lambda laps: tree_speculative_steps(target, make_drafter("eagle2", models), tok, ids, max_new,
                                                         budget, depth, laps=laps)))
    if warm:
        for _, steps in runs:
            run_steps(steps(None))
    timed: dict[str, list[Lane]] = {name: [] for name, _ in runs}
    for _ in range(max(1, rounds)):
        for name, steps in runs:
            laps: list = []
            events, result = run_steps(steps(laps))
            # the verify forward's positions: 1 for plain greedy, K + 1 for a chain, every node (+ root) for a tree
            timed[name].append(Lane(name, spans_of(laps), [len(getattr(e, "emitted", (0,))) for e in events],
                                    [getattr(e, "verify_positions", 1) for e in events], list(result.token_ids)))
    return [sorted(lanes, key=lambda ln: ln.total_ms)[len(lanes) // 2] for lanes in timed.values()]


def summary(lanes: list[Lane]) -> dict:
    """Per lane: total ms, ms per stage, tokens, target forwards, median forward ms and its ratio to plain
    greedy's one-token forward ("verification is nearly free" when that ratio is near 1), and whether its
    tokens are plain greedy's."""
    plain = lanes[0]
    out = []
    for ln in lanes:
        forward = ln.forward_ms()
        out.append({"name": ln.name, "total_ms": ln.total_ms, "tokens": len(ln.tokens), "cycles": len(ln.emitted),
                    "stage_ms": {s: ln.stage_ms(s) for s in STAGES},
                    "forward_ms": forward, "forward_vs_plain": forward / plain.forward_ms(),
                    # v's spread, wide on purpose: this lane's quartiles over plain greedy's opposite quartiles
                    "forward_vs_plain_range": (ln.forward_quartiles()[0] / plain.forward_quartiles()[1],
                                               ln.forward_quartiles()[1] / plain.forward_quartiles()[0]),
                    "positions": statistics.median(ln.positions) if ln.positions else 0,
                    "ms_per_token": ln.total_ms / max(1, len(ln.tokens)),
                    "verify_share": ln.stage_ms("verify") / max(ln.total_ms, 1e-9),
                    "accept_rollback_ms": ln.stage_ms("accept") + ln.stage_ms("rollback"),
                    "identical": ln.tokens == plain.tokens})
    return {"lanes": out}
