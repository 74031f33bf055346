"""A draft model: a small causal LM over tokens (the shipped token draft, an early-exit slice of the
target, or the user's own draft). It samples each token from q, the processed distribution (the
sampling settings applied to its logits), and records q at each position: the verifier must use
exactly the q the token was drawn from."""
from __future__ import annotations

import torch

from specviz.sampling import SamplingConfig, choose, distribution, warpers
from specviz.stepper import Stepper


class ModelDrafter:
    reads_target_states = False
    read_layers: tuple[int, ...] = ()
    proposes_tree = False

    def __init__(self, model, name: str = "token draft"):
        self.model = model
        self.name = name
        self.stepper = Stepper(model)

    def reset(self) -> None:
        self.stepper = Stepper(self.model)

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        ctx = list(ids)
        tokens, qs = [], []
        procs = warpers(cfg)
        for _ in range(k):
            q = distribution(self.stepper.logits(ctx, 1), cfg, procs)[0].cpu()
            x = choose(q, cfg, gen)
            tokens.append(x)
            qs.append(q)
            ctx.append(x)
        return tokens, (torch.stack(qs) if qs else None)

    def observe(self, states: torch.Tensor, start: int) -> None:
        pass

    def rollback(self, n: int) -> None:
        # The last proposed token was never fed, so the cache may already be shorter than n.
        self.stepper.crop(n)

    @property
    def cached(self) -> int:
        return self.stepper.cached

    @property
    def passes(self) -> int:
        return self.stepper.passes
