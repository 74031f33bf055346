"""The Speculative decoding page's view of one cycle, stage by stage: draft 1..K, verify, decide, resolve, cache."""
from __future__ import annotations

import functools

from specviz.tokens import output_pieces, token_text
from specviz.figures import spec_cycle as F
from specviz.trace import Counters
from specviz.views import Event


@functools.lru_cache(maxsize=64)
def pieces(tokenizer, ids: tuple[int, ...]) -> list[str]:
    """output_pieces, kept: a Step redraws the output before and after the cycle's tokens, and the "before" is the
    previous Step's "after" (decoding every prefix of the output is the costly part)."""
    return output_pieces(tokenizer, list(ids))


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


def speculative_event(cycles: list, n: int, tokenizer, prompt_ids: list[int], kind: str, last: bool,
                      predict: bool = False) -> Event:
    """Cycle n of the run (cycles: the run's cycles so far, at least n + 1), at each of its stages. last: the run's
    final cycle. predict: the learner predicts the verdicts from the verify pass (the page's slot "predictions")."""
    c = cycles[n]
    stages = spec_stages(c)
    at = stages.index
    e = Event([F.heading(c, stages[: p + 1], kind, last and p == len(stages) - 1) for p in range(len(stages))])
    if c.k:
        e.add("markdown", f"**{F.DRAFT_TITLE}** ({F.DRAFT_CAPTION})")
        rows = F.draft_rows(c.k)
        for r, row in enumerate(rows):  # every row as wide as the first: same-size charts
            for i in row:
                e.chart(F.draft_proposal, c, i, at=i, key=f"draft_fig_{i}", row=(f"draft{r}", i - row.start,
                                                                                 len(rows[0])))
    else:  # the stages keep their numbers: 1 and 3 say there was nothing to do
        e.add("markdown", F.NOTHING_DRAFTED)
    if predict and c.k:  # the chart gives no verdict away until the verdicts are drawn
        e.chart(F.verify_pass, c, False, at=at("verify"), until=at("decide"), key="verify_fig")
        e.chart(F.verify_pass, c, True, at=at("decide"), key="verify_fig")
        e.add("slot", "predictions", at=at("verify"))
    else:
        e.chart(F.verify_pass, c, True, at=at("verify"), key="verify_fig")
    if c.k:
        e.chart(F.verdicts, c, at=at("decide"), key="verdict_fig")
        if F.is_block(c):  # what the joint rule kept beside what the token-wise one would have
            e.chart(F.block_decision, c, at=at("decide"), key="block_fig")
            e.add("caption", F.BLOCK_CAPTION, at=at("decide"))
    else:
        e.add("markdown", F.NOTHING_JUDGED, at=at("resolve"))
    if c.new_origin == "resampled":  # F.resolution draws a residual; one token is said in a line
        e.chart(F.resolution, c, at=at("resolve"), key="resolve_fig")
    else:
        e.add("markdown", F.resolution_text(c), at=at("resolve"))
    if F.rare_draw_note(c):
        e.add("info", F.rare_draw_note(c), at=at("resolve"))
    context = list(prompt_ids) + [t for d in cycles[:n] for t in d.emitted]
    e.chart(F.cache_strip, c, [token_text(tokenizer, t) for t in context[-24:]], at=at("cache"), key="cache_fig",
            shared=False)
    if kind == "feature":
        e.add("caption", F.FEATURE_CACHE, at=at("cache"))
        if c.prefill:
            e.add("caption", F.FEATURE_PREFILL)
    e.add("html", "<b>Output so far</b> " + F.chip_legend())
    # the counters add a cycle when its tokens are decided: before that the cycle on screen is not counted
    for done, since, until in ((cycles[:n], 0, at("resolve")), (cycles[: n + 1], at("resolve"), None)):
        out = [(t, o) for d in done for t, o in zip(d.emitted, d.origins)]
        # decoded as a whole: an emoji's byte tokens decoded one by one would read "��"
        chips = [(p, o, t) for p, (t, o) in zip(pieces(tokenizer, tuple(t for t, _ in out)), out)]
        s = spec_summary(done)
        e.add("html", F.token_chips(chips) if chips else "<i>nothing yet</i>", since, until)
        e.add("caption", F.totals_caption(len(done), n + 1, c), since, until)
        e.add("metrics", F.summary_metrics(s), since, until)
        if F.positions_caption(s):
            e.add("caption", F.positions_caption(s), since, until)
    return e
