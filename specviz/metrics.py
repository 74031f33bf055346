"""Running figures over a speculative trace, for the page's counters (the page holds no math)."""
from __future__ import annotations


def spec_summary(cycles) -> dict:
    cycles = list(cycles)
    tokens = sum(len(c.emitted) for c in cycles)
    passes = len(cycles) + sum(c.prefill for c in cycles)  # a feature drafter's prefill pass counts too
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
        # a model drafter runs one forward per proposed token; n-gram lookup (no cache) runs none
        "draft_passes": sum(c.k for c in cycles if c.draft_cache is not None),
        "acceptance_rate": accepted / decided if decided else 0.0,
        "mean_acceptance_length": tokens / passes if passes else 0.0,
        "plain_target_passes": tokens,  # plain decoding needs one target pass per token
        # only positions the verifier actually reached
        "per_position": [a / r for a, r in zip(acc_at, reached) if r],
        "reached": [r for r in reached if r],
    }


def spec_stages(cycle) -> list[str]:
    """The speculative page shows a cycle in stages: one per draft token, then verify, decide,
    resolve (residual / bonus / correction), cache rollback. Nothing drafted: nothing to decide."""
    return ["draft"] * cycle.k + ["verify"] + (["decide"] if cycle.k else []) + ["resolve", "cache"]


def spec_phases(cycle) -> int:
    return len(spec_stages(cycle))
