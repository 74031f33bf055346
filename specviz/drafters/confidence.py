"""A token draft that stops drafting when it is unsure: llama.cpp's --draft-p-min and transformers'
assistant_confidence_threshold, the two dynamic-K rules that read the draft's own confidence (issue 38.3)."""
from __future__ import annotations

import torch

from specviz.drafters.model import ModelDrafter
from specviz.sampling import SamplingConfig, choose, distribution, warpers


class ConfidenceStopDrafter(ModelDrafter):
    """A token draft that stops drafting when its top probability falls below `threshold` (greedy drafting: the top
    probability is the drafted token's). keep_crossing=False: that token is not proposed (llama.cpp); True: it is
    proposed, then drafting stops (transformers' ConfidenceCriteria, checked after the token is generated)."""

    def __init__(self, model, threshold: float, keep_crossing: bool = False,
                 name: str = "token draft, confidence stop"):
        super().__init__(model, name)
        self.threshold, self.keep_crossing = threshold, keep_crossing

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        ctx, tokens, qs = list(ids), [], []
        procs = warpers(cfg)
        for _ in range(k):
            q = distribution(self.stepper.logits(ctx, 1), cfg, procs)[0].cpu()
            x = choose(q, cfg, gen)
            low = float(q.max()) < self.threshold
            if low and not self.keep_crossing:
                break
            tokens.append(x)
            qs.append(q)
            ctx.append(x)
            if low:
                break
        return tokens, (torch.stack(qs) if qs else None)
