"""Staged speculation: n-gram lookup drafts for the token draft, which drafts for the target. The target
gets exactly the token draft's tokens (greedy), for fewer draft forwards on text that repeats itself."""
from conftest import chat
from specviz.drafters import ModelDrafter, StagedDrafter
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps

REFACTOR = ("Add type hints to this function and return the whole function:\n\ndef average(values):\n"
            "    total = 0\n    for value in values:\n        total = total + value\n    return total / len(values)\n")


def test_staged_drafts_the_token_drafts_tokens_with_fewer_draft_passes(models, greedy):
    target, tok = models.target, models.tokenizer
    ids = chat(tok, REFACTOR)
    plain_ids = greedy(ids, 48)
    token_cycles, token = run_steps(speculative_steps(target, ModelDrafter(models.draft), tok, ids, 48, 6))
    staged_drafter = StagedDrafter(models.draft)
    staged_cycles, staged = run_steps(speculative_steps(target, staged_drafter, tok, ids, 48, 6))
    assert staged.token_ids == token.token_ids == plain_ids
    # the same draft tokens cycle by cycle: the first stage changes the cost, not the proposal (q agrees up to
    # the float differences of a multi-row forward)
    assert [[d.token for d in c.drafts] for c in staged_cycles] == [[d.token for d in c.drafts] for c in token_cycles]
    for a, b in zip(staged_cycles, token_cycles):
        assert all(abs(x.q - y.q) < 1e-3 for x, y in zip(a.drafts, b.drafts))
    assert staged_drafter.inner_accepted > 0
    assert staged.counters.draft_passes < token.counters.draft_passes
