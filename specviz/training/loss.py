"""The one distillation loss both drafts train on."""
from __future__ import annotations

import torch


def topk_cross_entropy(logits: torch.Tensor, top_logp: torch.Tensor, top_ids: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the draft's q = softmax(logits) (T, vocab) against the target's top-k distribution
    (top_logp, top_ids: (T, k), as stored with the data), summed over the T positions. A reduced head
    cannot say tokens outside its subset (their logits are -inf), so the target's top-k is renormalised
    over the tokens q covers."""
    logq = torch.log_softmax(logits.float(), -1)
    t_logp = top_logp.float().to(logq.device)
    picked = logq.gather(-1, top_ids.long().to(logq.device))
    inside = torch.isfinite(picked)
    t_p = torch.nan_to_num(torch.softmax(t_logp.masked_fill(~inside, float("-inf")), -1))
    return -(t_p * picked.masked_fill(~inside, 0.0)).sum()
