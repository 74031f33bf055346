"""Running figures over a speculative trace, for the page's counters (the page holds no math)."""
from __future__ import annotations


def spec_summary(cycles) -> dict:
    cycles = list(cycles)
    tokens = sum(len(c.emitted) for c in cycles)
    passes = len(cycles)
    drafted = sum(c.k for c in cycles)
    decided = sum(len(c.verdicts) for c in cycles)
    accepted = sum(c.accepted for c in cycles)
    depth = max((c.k for c in cycles), default=0)
    reached = [sum(1 for c in cycles if len(c.verdicts) > i) for i in range(depth)]
    acc_at = [sum(1 for c in cycles if len(c.verdicts) > i and c.verdicts[i].accepted) for i in range(depth)]
    return {
        "tokens": tokens,
        "target_passes": passes,
        "draft_tokens": drafted,
        "acceptance_rate": accepted / decided if decided else 0.0,
        "mean_acceptance_length": tokens / passes if passes else 0.0,
        "plain_target_passes": tokens,  # plain decoding needs one target pass per token
        "per_position": [a / r if r else 0.0 for a, r in zip(acc_at, reached)],
        "reached": reached,
    }


def spec_phases(cycle) -> int:
    """The speculative page shows a cycle in phases: one per draft token, then verify, decide,
    resolve (residual / bonus / correction), cache rollback."""
    return max(cycle.k, 1) + 4
