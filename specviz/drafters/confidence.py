"""A token draft that stops drafting when it is unsure: llama.cpp's --draft-p-min and transformers'
assistant_confidence_threshold, the two dynamic-K rules that read the draft's own confidence (issue 38.3)."""
from __future__ import annotations

import torch

from specviz.drafters.model import ModelDrafter
from specviz.sampling import SamplingConfig, choose, distribution, warpers


def confidence_stop(top_q: float, threshold: float, keep_crossing: bool) -> tuple[bool, bool]:
    """(propose this draft?, stop drafting after it?) for a draft whose top probability is top_q. Under the
    threshold drafting stops; llama.cpp drops that token, transformers keeps it (keep_crossing)."""
    low = top_q < threshold
    return not low or keep_crossing, low


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
            keep, stop = confidence_stop(float(q.max()), self.threshold, self.keep_crossing)
            if keep:
                tokens.append(x)
                qs.append(q)
                ctx.append(x)
            if stop:
                break
        return tokens, (torch.stack(qs) if qs else None)
