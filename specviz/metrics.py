"""Running figures over a speculative trace, for the page's counters (the page holds no math)."""
from __future__ import annotations

from specviz.trace import Counters


def spec_summary(cycles) -> dict:
    """The counters of the cycles so far (Counters.record is the one place they are counted)."""
    c = Counters.of(cycles)
    return {
        "tokens": c.tokens,
        "target_passes": c.target_passes,
        "verify_passes": c.verify_passes,
        "prefill_passes": c.prefill_passes,
        "draft_tokens": c.drafted,
        "draft_passes": c.draft_passes,
        "decided": c.decided,
        "acceptance_rate": c.acceptance_rate if c.decided else None,  # None: nothing was ruled on yet
        "draft_acceptance_rate": c.draft_acceptance_rate if c.drafted else None,  # per proposed token (vLLM's)
        "mean_acceptance_length": c.mean_acceptance_length,  # tokens per verify pass
        "plain_target_passes": c.tokens,  # plain decoding needs one target pass per token
        # only positions the verifier actually reached
        "per_position": [a for a in c.per_position() if a is not None],
        "reached": [r for r in c.reached_at if r],
    }


def spec_stages(cycle) -> list[str]:
    """The speculative page shows a cycle in stages: one per draft token, then verify, decide,
    resolve (residual / bonus / correction), cache rollback. Nothing drafted: nothing to decide."""
    return ["draft"] * cycle.k + ["verify"] + (["decide"] if cycle.k else []) + ["resolve", "cache"]


def spec_phases(cycle) -> int:
    return len(spec_stages(cycle))
