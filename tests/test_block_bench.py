"""The benchmark's block-verification rows (issue 48, item 1): beside the token-wise sampling row at T = 1, the same
drafter, K and seeds judged by block verification, compared per verify pass and per second; sampling rows decode
each prompt once per seed (--seeds)."""
import pytest

from specviz.bench import BlockCounters, Config, aggregate, block_twin, configs, runner
from specviz.trace import Counters


def test_the_sampling_rows_pair_token_wise_with_block(models):
    cfgs = {c.name: c for c in configs(models, [4], False, False, True, False, trees=False)}
    token, block = cfgs["spec sample T=1 K=4"], cfgs["spec sample T=1 K=4 block"]
    assert block.acceptance == "block" and token.acceptance == "token"
    assert (block.drafter, block.k, block.sampling) == (token.drafter, token.k, token.sampling)
    assert block_twin(block) == token.name and block_twin(token) is None
    assert all(c.acceptance == "token" for c in cfgs.values() if not c.sampling)  # greedy rows as they were


def test_a_sampling_row_runs_every_seed(models):
    from conftest import chat

    ids = chat(models.tokenizer, "Explain beam search")
    cfg = Config("spec sample T=1 K=4 block", "speculative", "token", 4, sampling=True, acceptance="block")
    one_tokens, one = runner(cfg, models)(ids, 8)
    tokens, counters = runner(cfg, models, seeds=2)(ids, 8)
    assert tokens[:8] == one_tokens and len(tokens) == 16  # seed 0 first, then seed 1
    assert counters.tokens == 16 and counters.verify_passes > one.verify_passes
    # the block row also carries what each rule keeps in expectation on its own drafts, added up over the seeds
    assert isinstance(counters, BlockCounters) and counters.kept_block > one.kept_block > 0
    assert 0 < counters.kept_token and counters.kept_block <= counters.drafted
    again, _ = runner(cfg, models, seeds=2)(ids, 8)
    assert again == tokens  # seeded: the same draws every time


@pytest.mark.fast
def test_block_rows_are_compared_with_their_token_wise_twin():
    cfgs = [Config("hf greedy", "hf"), Config("ours greedy", "plain"),
            Config("ours sample T=1", "plain", sampling=True),
            Config("spec sample T=1 K=4", "speculative", "feature", 4, sampling=True),
            Config("spec sample T=1 K=4 block", "speculative", "feature", 4, sampling=True, acceptance="block")]

    def counters(tokens, passes):
        return Counters(target_passes=passes, tokens=tokens)
    outputs = {("hf greedy", "a"): ([1] * 10, None), ("ours greedy", "a"): ([1] * 10, None),
               ("ours sample T=1", "a"): ([1] * 10, counters(10, 10)),
               ("spec sample T=1 K=4", "a"): ([1] * 10, counters(10, 5)),
               ("spec sample T=1 K=4 block", "a"): ([1] * 12, BlockCounters(target_passes=5, tokens=12, kept_block=7.5,
                                                                            kept_token=6.0))}
    seconds = {("hf greedy", "a"): [1.0], ("ours greedy", "a"): [1.0], ("ours sample T=1", "a"): [1.0],
               ("spec sample T=1 K=4", "a"): [0.5], ("spec sample T=1 K=4 block", "a"): [0.5]}
    rows = aggregate(cfgs, seconds, outputs, [{"name": "a"}], {})
    b = rows["spec sample T=1 K=4 block"]["block_vs_token"]
    assert b["tokens_per_pass"] == 12 / 5 and b["token_wise_tokens_per_pass"] == 10 / 5
    assert b["tokens_per_pass_ratio"] == pytest.approx(1.2) and b["speed_ratio"] == pytest.approx(1.2)
    assert b["expected_tokens_per_pass"] == 1 + 7.5 / 5 and b["token_wise_expected_tokens_per_pass"] == 1 + 6 / 5
    assert "block_vs_token" not in rows["spec sample T=1 K=4"]
    assert rows["spec sample T=1 K=4 block"]["vs_ours_sample"] == pytest.approx(2.4)
