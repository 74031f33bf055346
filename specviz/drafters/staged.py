"""Staged speculation: a draft for the draft (Spector & Re 2023). n-gram prompt lookup proposes tokens to
the token draft, which verifies them in one forward pass of its own — exactly as the target verifies the
token draft — and hands the target the resulting K tokens. The target sees the same tokens and the same
q as from the token draft alone (the inner rule is the same lossless verify), so the outer verification
is unchanged; what changes is how many draft forwards the K tokens cost."""
from __future__ import annotations

import torch

from ..sampling import SamplingConfig, distribution, warpers
from ..step import Stepper
from ..verify import verify
from .ngram import NgramDrafter


class StagedDrafter:
    reads_target_states = False
    read_layers: tuple[int, ...] = ()
    proposes_tree = False

    def __init__(self, model, name: str = "staged: n-gram → token draft", inner_k: int = 4):
        self.model, self.name, self.inner_k = model, name, inner_k
        self.lookup = NgramDrafter()
        self.reset()

    def reset(self) -> None:
        self.stepper = Stepper(self.model)
        self.inner_proposed = self.inner_accepted = 0  # the first stage's record, for the page and bench

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        ctx, out, qs = list(ids), [], []
        procs = warpers(cfg)
        while len(out) < k:
            guesses, _ = self.lookup.propose(ctx, min(self.inner_k, k - len(out) - 1), cfg, gen)
            # ONE draft forward over the guesses: the draft's q at every guessed position and one beyond
            q = distribution(self.stepper.logits(ctx + guesses, len(guesses) + 1), cfg, procs).cpu()
            v = verify(guesses, None, q, cfg.greedy, gen)
            new = guesses[:v.accepted] + [v.token]
            self.inner_proposed += len(guesses)
            self.inner_accepted += v.accepted
            qs += [q[i] for i in range(len(new))]  # each token's q: the draft distribution at its position
            out += new
            ctx += new
            self.stepper.crop(len(ctx) - 1)  # drop the draft's cache entries of rejected guesses
        return out[:k], torch.stack(qs[:k])

    def observe(self, states: torch.Tensor, start: int) -> None:
        pass

    def rollback(self, n: int) -> None:
        self.stepper.crop(n)

    @property
    def cached(self) -> int:
        return self.stepper.cached

    @property
    def passes(self) -> int:
        return self.stepper.passes
