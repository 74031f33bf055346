"""The token draft before training, and its loss on training sequences."""
from __future__ import annotations

import copy

import torch

from specviz.drafters.build import SubsetHead, assemble
from specviz.training.loss import topk_cross_entropy


def build(target, layers: int, init: list[int], head_ids: torch.Tensor | None = None):
    """The target's config with `layers` decoder layers copied from target layers `init`, a copy of its
    final norm, and a reduced head of the target's rows `head_ids` (None: the target's own head, shared).
    The embedding and rotary table are the target's own modules and stay frozen."""
    own = torch.nn.ModuleList(copy.deepcopy(target.model.layers[i]) for i in init[:layers])
    head = None
    if head_ids is not None:
        head = SubsetHead(target.lm_head.weight.detach()[head_ids].clone(), head_ids, target.config.vocab_size)
    return assemble(target, own, copy.deepcopy(target.model.norm), head)


def batch_loss(draft, records: list[dict]) -> tuple[torch.Tensor, int]:
    """(loss summed over the answers' positions, their number) for training sequences, one pass each."""
    total, positions = 0.0, 0
    for record in records:
        ids = torch.tensor([record["ids"]], device=draft.device)
        n = len(record["ids"]) - record["start"]
        logits = draft(input_ids=ids, logits_to_keep=n + 1).logits[0, :-1]
        total = total + topk_cross_entropy(logits, record["top_logp"], record["top_ids"])
        positions += n
    return total, positions
