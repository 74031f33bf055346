"""Tree verification on the real target: position ids and the mask of a known tree, logits per node equal
to running that node's root-to-node path as a chain, and the KV cache after the gather equal to a fresh
prefill of the accepted prefix."""
import pytest
import torch

from conftest import chat
from specviz.stepper import Stepper
from specviz.engine.tree import keep_path, tree_inputs, tree_logits
from specviz.verify import TokenTree

# root ─┬─ a(0) ─┬─ c(2) ── e(4)
#       │        └─ d(3)
#       └─ b(1) ──── f(5)
PARENTS = (-1, -1, 0, 0, 2, 1)


@pytest.mark.fast  # model-free
def test_mask_and_position_ids_of_a_known_tree():
    tree = TokenTree((10, 11, 12, 13, 14, 15), PARENTS)
    assert tree.depths == [1, 1, 2, 2, 3, 2]
    ids = list(range(100, 107))  # 7 context tokens, 5 of them cached
    new, pos, allowed = tree_inputs(tree, ids, cached=5)
    assert new == [105, 106, 10, 11, 12, 13, 14, 15]
    # the pending context at its own positions; a node at depth d at context length + d - 1
    assert pos == [5, 6, 7, 7, 8, 8, 9, 8]
    assert allowed.shape == (8, 13)
    assert allowed[:, :5].all()  # everyone sees the cached context
    assert allowed[0, 5] and not allowed[0, 6] and allowed[1, 5:7].all()  # pending tokens: causal
    nodes = allowed[2:, 7:].int().tolist()
    assert nodes == [[1, 0, 0, 0, 0, 0],   # a: itself
                     [0, 1, 0, 0, 0, 0],   # b: itself, not its sibling a
                     [1, 0, 1, 0, 0, 0],   # c: a, c
                     [1, 0, 0, 1, 0, 0],   # d: a, d (not its sibling c)
                     [1, 0, 1, 0, 1, 0],   # e: a, c, e
                     [0, 1, 0, 0, 0, 1]]   # f: b, f
    assert allowed[2:, 5:7].all()  # every node sees the whole context


@pytest.mark.fast  # model-free
def test_bad_trees_are_refused():
    with pytest.raises(ValueError):
        TokenTree((1, 2), (1, -1))  # a parent after its child
    with pytest.raises(ValueError):
        TokenTree((1, 2), (-1,))


@pytest.fixture(scope="module")
def prompt(embedded):
    return chat(embedded[1], "Name three primary colors.")[:20]


def chain_logits(model, ids):
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids])).logits[0].float()


def test_tree_logits_per_node_equal_each_path_run_as_a_chain(embedded, prompt):
    model, _ = embedded
    tree = TokenTree((330, 314, 253, 29, 28, 1201), PARENTS)
    step = Stepper(model)
    step.logits(prompt[:-3], 1)  # a cache, and pending context tokens on top of it
    logits = tree_logits(step, tree, prompt)
    full = chain_logits(model, prompt)
    torch.testing.assert_close(logits[0], full[-1], atol=2e-3, rtol=1e-3)
    for i in range(len(tree)):
        path = [tree.tokens[j] for j in tree.path_to(i)]
        ref = chain_logits(model, prompt + path)[-1]
        torch.testing.assert_close(logits[i + 1], ref, atol=2e-3, rtol=1e-3)
        assert int(logits[i + 1].argmax()) == int(ref.argmax())


@pytest.mark.parametrize("leaf", [4, 3, 5, None])
def test_the_cache_after_the_gather_equals_a_fresh_prefill_of_the_accepted_prefix(embedded, prompt, leaf):
    model, _ = embedded
    tree = TokenTree((330, 314, 253, 29, 28, 1201), PARENTS)
    step = Stepper(model)
    step.logits(prompt[:-1], 1)
    tree_logits(step, tree, prompt)
    assert step.cached == len(prompt) + len(tree)
    path = tree.path_to(leaf) if leaf is not None else []
    keep_path(step, len(prompt), path)
    accepted = prompt + [tree.tokens[j] for j in path]
    assert step.cached == len(accepted)
    fresh = Stepper(model)
    fresh.logits(accepted, 1)
    for got, ref in zip(step.cache.layers, fresh.cache.layers):
        torch.testing.assert_close(got.keys, ref.keys, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(got.values, ref.values, atol=1e-4, rtol=1e-4)
    # and decoding goes on from it as from the fresh prefill
    nxt = step.logits(accepted + [42], 1)
    torch.testing.assert_close(nxt, fresh.logits(accepted + [42], 1), atol=2e-3, rtol=1e-3)


def test_keeping_a_path_refuses_a_sliding_window_cache_in_one_sentence():
    """A sliding-window layer keeps its own length and drops old slots, so slot indices would point at the wrong
    entries: a user's model with such layers gets a sentence in a tree or lookahead run, not a wrong cache."""
    from transformers.cache_utils import DynamicCache, DynamicSlidingWindowLayer

    from specviz.errors import SpecVizError

    stepper = Stepper(model=None)
    stepper.cache = DynamicCache()
    stepper.cache.layers = [DynamicSlidingWindowLayer(sliding_window=4)]
    with pytest.raises(SpecVizError, match="whole context"):
        stepper.keep_slots([0, 1, 3])
