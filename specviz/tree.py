"""Tree speculation (SpecInfer, Medusa, EAGLE-2): verify a TREE of drafted candidates in ONE target pass.

A chain drafter proposes one guess per position; a tree drafter proposes several, branching where it is
unsure. The target scores every node at once:

  flatten   the nodes go after the context in topological order (parents first), one row each;
  positions node i gets position id = context length + depth(i) - 1: siblings share a position, since
            each of them would sit at the same place in the output (depth 1 = the first drafted token);
  mask      node i attends to the whole context and to its own ancestors (and itself) only, never to a
            sibling or a cousin: each root-to-node path is scored exactly as if it had been a chain;
  walk      the rule in verify.py (verify_tree) walks from the root, accepting one child per level;
  gather    the cache keeps the context and the accepted path's entries only (Stepper.keep_slots).
"""
from __future__ import annotations

import torch

from .step import Stepper
from .verify import TokenTree


def tree_inputs(tree: TokenTree, ids: list[int], cached: int) -> tuple[list[int], list[int], torch.Tensor]:
    """The verify forward's inputs on top of a cache holding ids[:cached]: the tokens (the pending context,
    at least its last token, the root, then the nodes), their position ids, and the (queries, keys) bool
    attention pattern: the pending context causal, each node the context plus its ancestors and itself."""
    pending, n, length = ids[cached:], len(tree), len(ids)
    assert pending, "the context's last token (the root) must be fed with the tree"
    m = len(pending)
    positions = list(range(cached, length)) + [length - 1 + d for d in tree.depths]
    allowed = torch.zeros(m + n, cached + m + n, dtype=torch.bool)
    allowed[:, :cached] = True
    allowed[:m, cached:cached + m] = torch.tril(torch.ones(m, m, dtype=torch.bool))
    allowed[m:, cached:cached + m] = True
    allowed[m:, cached + m:] = tree.ancestry()
    return pending + list(tree.tokens), positions, allowed


def tree_logits(stepper: Stepper, tree: TokenTree, ids: list[int]) -> torch.Tensor:
    """ONE target forward over the tree: (n + 1, vocab) logits, row 0 the root's (what follows the
    context), row 1 + i node i's (what follows its root-to-node path)."""
    new, positions, allowed = tree_inputs(tree, ids, stepper.cached)
    return stepper.masked_logits(new, positions, allowed, len(tree) + 1)


def keep_path(stepper: Stepper, context_len: int, path: list[int]) -> list[int]:
    """After the verify pass the cache holds the context then every node; keep the context and the
    accepted path's slots, drop the rest. Returns the kept slots."""
    slots = list(range(context_len)) + [context_len + i for i in path]
    stepper.keep_slots(slots)
    return slots
