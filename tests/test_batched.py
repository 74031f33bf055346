"""Batched greedy and batched speculative greedy (specviz/engine/batched.py, specviz/labs/batched.py): every
sequence of a batch comes out token-identical to plain greedy of its prompt alone, to transformers' batched
generate() on the same padded batch, and speculation (ragged acceptance, holes in the caches) changes nothing."""
import pytest
import torch

from specviz.engine import batched as BT
from specviz.labs import batched as LB
from specviz.engine.plain import plain_steps
from specviz.tokens import eos_ids
from specviz.engine.loop import run_steps
from specviz.theory import acceptance_from_tokens_per_pass, expected_tokens

from conftest import chat

SHORT = ["What is 2+2?", "Say hello in French.", "What is the capital of Italy?", "Name one primary colour.",
         "Write a long poem about the sea, the wind and the stars."]


def plain(model, tok, prompt, n):
    return run_steps(plain_steps(model, tok, prompt, n))[1].token_ids


def tiny_draft(target):
    """Another tiny random Llama: a draft that agrees with the target less often (uneven acceptance)."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(1)
    return LlamaForCausalLM(target.config).eval()


@pytest.mark.fast
def test_prefix_mask_and_acceptance_inversion():
    assert BT.prefix_mask([0, 2, 3], 3).tolist() == [[False] * 3, [True, True, False], [True] * 3]
    for a in (0.0, 0.3, 0.55, 0.9):
        assert acceptance_from_tokens_per_pass(expected_tokens(a, 4), 4) == pytest.approx(a, abs=1e-6)
    assert acceptance_from_tokens_per_pass(5.0, 4) == pytest.approx(1.0, abs=1e-6)


def test_holes_in_the_cache_equal_a_fresh_prefill(tiny_llama):
    """Feed 4 tokens, keep 2 (the other 2 become holes), feed one more: its logits equal those of running the
    kept prefix plus that token from scratch, for each sequence of a left-padded batch."""
    model, _ = tiny_llama
    prompts = [[5, 6, 7, 8, 9], [11, 12]]
    batch = BT.Batch(model, 2)
    batch.prefill(prompts, pad=2)
    batch.forward(torch.tensor([[20, 21, 22, 23], [30, 31, 32, 33]]), 4)
    batch.settle(BT.prefix_mask([2, 1], 4))
    assert batch.lengths.tolist() == [7, 3]
    got = batch.forward(torch.tensor([[40], [41]]), 1)[:, 0]
    for i, seq in enumerate([[5, 6, 7, 8, 9, 20, 21, 40], [11, 12, 30, 41]]):
        with torch.inference_mode():
            ref = model(input_ids=torch.tensor([seq])).logits[0, -1]
        assert torch.allclose(got[i], ref, atol=1e-4), i


def test_tiny_models_batched_speculative_equals_batched_greedy_and_plain(tiny_llama):
    """Random tiny models (fast): with the target as its own draft every draft is accepted; with another
    random model fewer are, and differently per sequence. Both ways the output is batched greedy's,
    which is plain greedy's."""
    model, tok = tiny_llama
    prompts = [[1, 300, 301, 302, 303, 304], [1, 400, 401], [1, 500, 501, 502, 7, 8, 9, 10, 11], [1, 600, 601, 602]]
    g = BT.batched_greedy(model, tok, prompts, 12)
    assert g.outputs == [plain(model, tok, p, 12) for p in prompts]
    same = BT.batched_speculative(model, model, tok, prompts, 12, k=3)
    assert same.outputs == g.outputs
    assert same.accepted == [9, 9, 9, 9] and same.target_passes == 1 + 3  # 4 tokens per pass
    other = BT.batched_speculative(model, tiny_draft(model), tok, prompts, 12, k=2)
    assert other.outputs == g.outputs
    assert sum(other.accepted) < sum(same.accepted) and len(set(other.cycles)) > 1  # ragged


def test_batched_greedy_equals_plain_greedy_per_sequence(models):
    target, tok = models.target, models.tokenizer
    for b, n in ((1, 32), (4, 32), (16, 16)):
        prompts = LB.batch_prompts(tok, b)
        assert len({len(p) for p in prompts}) > 1 or b == 1  # left padding really happens
        got = BT.batched_greedy(target, tok, prompts, n)
        assert got.outputs == [plain(target, tok, p, n) for p in prompts], b
        assert got.target_passes == n  # prefill gives the first token, then one batched forward per token


def test_batched_greedy_equals_hf_generate_on_the_same_padded_batch(models):
    target, tok = models.target, models.tokenizer
    prompts = LB.batch_prompts(tok, 4)
    width = max(map(len, prompts))
    pad = BT.pad_id(tok)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.inference_mode():
        out = target.generate(input_ids=ids, attention_mask=mask, max_new_tokens=24, do_sample=False,
                              pad_token_id=pad, temperature=None, top_p=None, top_k=None)
    stop = eos_ids(target, tok)
    ref = []
    for row in out[:, width:].tolist():
        end = next((j + 1 for j, t in enumerate(row) if t in stop), len(row))
        ref.append(row[:end])
    assert BT.batched_greedy(target, tok, prompts, 24).outputs == ref


@pytest.mark.parametrize("b,k,n", [(1, 2, 32), (4, 3, 32), (16, 4, 20)])
def test_batched_speculative_equals_batched_greedy(models, b, k, n):
    target, tok = models.target, models.tokenizer
    prompts = LB.batch_prompts(tok, b)
    g = BT.batched_greedy(target, tok, prompts, n)
    s = BT.batched_speculative(target, models.draft, tok, prompts, n, k)
    assert s.outputs == g.outputs
    assert s.tokens == g.tokens
    assert all(1.0 <= t <= k + 1 for t in s.tokens_per_pass)
    assert s.target_passes == 1 + max(s.cycles)  # one prefill, then one verify per step until the slowest is done
    assert s.draft_passes == 1 + k * max(s.cycles)
    if b > 1:
        assert len(set(s.accepted)) > 1  # ragged: the sequences accept different numbers of drafts


def test_ragged_end_sequences_stop_at_eos_at_different_steps(models):
    target, tok = models.target, models.tokenizer
    prompts = [chat(tok, t) for t in SHORT]
    n = 48
    stop = eos_ids(target, tok)
    g = BT.batched_greedy(target, tok, prompts, n)
    s = BT.batched_speculative(target, models.draft, tok, prompts, n, k=4)
    assert g.outputs == [plain(target, tok, p, n) for p in prompts]
    assert s.outputs == g.outputs
    ended = [len(o) for o in g.outputs if o[-1] in stop]
    assert len(set(ended)) >= 2 and max(ended) < n  # several end on EOS, at different steps
    assert max(g.tokens) == n  # while the long one runs to its budget
    assert min(s.cycles) < max(s.cycles)  # a finished sequence stops counting passes; the batch goes on
