"""What every drafter is: whatever proposes the K tokens the target then verifies.

The engine (specviz/engine/speculative.py) talks to a drafter only through this Protocol, and asks what it can
do only through the capabilities it declares (as transformers' CandidateGenerator does), never by
probing attributes.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from specviz.sampling import SamplingConfig
from specviz.verify import TokenTree  # noqa: F401  (the TreeDrafter's return type)


@runtime_checkable
class Drafter(Protocol):
    name: str
    # Capabilities, declared as class attributes:
    reads_target_states: bool  # the engine hands it the target's hidden states after every pass (observe)
    read_layers: tuple[int, ...]  # which of the target's hidden states it reads (empty unless reads_target_states)
    proposes_tree: bool  # proposes a tree of candidates rather than one chain

    def reset(self) -> None:
        """Forget everything: a new run starts."""

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig,
                gen: torch.Generator) -> tuple[list[int], torch.Tensor | None]:
        """Up to k tokens to follow ids, and q: the (k, vocab) distributions they were drawn from, or None
        when each proposal is deterministic (q one-hot on the proposed token)."""

    def observe(self, states: torch.Tensor, start: int) -> None:
        """The target's hidden states (read_layers, concatenated) for positions start.. of its last pass."""

    def rollback(self, n: int) -> None:
        """Keep only what the first n tokens of the context justify (the accepted prefix)."""

    @property
    def passes(self) -> int:
        """Forward passes run so far (0 for a drafter without a model)."""

    @property
    def cached(self) -> int | None:
        """Entries in its KV cache, or None for a drafter without one."""


@runtime_checkable
class TreeDrafter(Drafter, Protocol):
    """A drafter that proposes a tree of candidates (proposes_tree = True: EAGLE-2, Medusa), verified in one
    pass by specviz.engine.tree."""

    def propose_tree(self, ids: list[int], budget: int, depth: int, cfg: SamplingConfig,
                     gen: torch.Generator) -> "TokenTree":
        """At most `budget` nodes, no path deeper than `depth`, each node's q what it was drawn from."""


class ModelFree:
    """What a drafter without a model declares (n-gram lookup, suffix decoding): no states read, no tree, no
    forward passes, no KV cache, so nothing to observe or roll back."""
    reads_target_states = False
    read_layers: tuple[int, ...] = ()
    proposes_tree = False
    passes = 0
    cached = None

    def reset(self) -> None:
        pass

    def observe(self, states: torch.Tensor, start: int) -> None:
        pass

    def rollback(self, n: int) -> None:
        pass
