"""Staged speculation: a draft for the draft (Spector & Re 2023). n-gram prompt lookup proposes tokens to
the token draft, which verifies them in one forward pass of its own — exactly as the target verifies the
token draft — and hands the target the resulting K tokens, each with the token draft's q at its position.
The inner rule is the same lossless verify, so:
- under greedy, the target sees exactly the tokens the token draft alone would have drafted (each is the
  draft's argmax, whatever the guesses were);
- under sampling, each token is distributed as the token draft's own sample would be (q at its position),
  but it is not the same value a run of the token draft alone would draw: the random numbers are spent
  differently. The same distribution, not the same tokens.
Either way the q handed on is the distribution the token was really drawn from, so the outer verification
is unchanged and stays lossless; what changes is how many draft forwards the K tokens cost."""
from __future__ import annotations

import torch

from specviz.sampling import SamplingConfig, distribution, warpers
from specviz.verify import verify
from specviz.drafters.model import ModelDrafter
from specviz.drafters.ngram import NgramDrafter


class StagedDrafter(ModelDrafter):
    """A ModelDrafter whose proposals are themselves speculated: its cache, rollback and pass count are the
    token draft's."""

    def __init__(self, model, name: str = "staged: n-gram → token draft", inner_k: int = 4):
        super().__init__(model, name)
        self.inner_k = inner_k
        self.lookup = NgramDrafter()
        self.reset()

    def reset(self) -> None:
        super().reset()
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
        return out[:k], (torch.stack(qs[:k]) if k > 0 else None)  # k = 0 near max_new_tokens: nothing drafted
