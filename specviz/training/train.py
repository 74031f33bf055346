"""Which of a draft's weights train, and the training loop (AdamW, cosine-decayed rate)."""
from __future__ import annotations

import math
import random
import time

import torch

from specviz.drafters.build import SubsetHead
from specviz.drafters.feature import FeatureDraft


def input_layers(draft) -> list[torch.nn.Parameter]:
    """A feature draft's fc and fuse (the layers that take in the target's states); none for a token draft."""
    if not isinstance(draft, FeatureDraft):
        return []
    return list(draft.fc.parameters()) + (list(draft.fuse.parameters()) if draft.fuse is not None else [])


def trainable(draft) -> list[torch.nn.Parameter]:
    """Everything but the modules borrowed from the target (embedding, rotary, a shared head)."""
    lm = draft.lm if isinstance(draft, FeatureDraft) else draft  # a feature draft wraps a small Llama
    own = list(lm.model.layers.parameters()) + list(lm.model.norm.parameters())
    if isinstance(draft, FeatureDraft):
        own += input_layers(draft)  # its head (the token draft's) stays frozen: its states live in that space
    elif isinstance(lm.lm_head, SubsetHead):
        own += [lm.lm_head.weight]  # a token draft trains its reduced head
    return own


def train(draft, n_records: int, loss_fn, steps: int, minutes: float, lr: float, batch: int, seed: int,
          log=print, log_every: int = 25) -> int:
    """`steps` AdamW steps over the records 0..n_records-1 in seeded shuffled batches, the learning rate
    decaying on a cosine to lr/10 (a constant rate left the loss noisy at the end); `minutes` > 0 caps the
    time as well. loss_fn(indices) -> (loss summed over the records' positions, their number). Returns the
    steps taken."""
    params = trainable(draft)
    for p in draft.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    # a feature draft's input layers learn at 0.3x the rate: Adam moves every weight by ~lr per step
    # whatever its gradient, and fc's state half starts at zero beside a trained token path
    slow = input_layers(draft)
    fast = [p for p in params if all(p is not q for q in slow)]
    groups = [{"params": fast, "mult": 1.0}] + ([{"params": slow, "mult": 0.3}] if slow else [])
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    deadline = time.time() + minutes * 60 if minutes > 0 else float("inf")
    step, order = 0, []
    draft.train()
    while step < steps and time.time() < deadline:
        for group in opt.param_groups:
            group["lr"] = group["mult"] * lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        if not order:
            order = list(range(n_records))
            rng.shuffle(order)
        chunk = [order.pop() for _ in range(min(batch, len(order)))]
        opt.zero_grad()
        loss, n_tok = loss_fn(chunk)
        loss.backward()
        loss_sum = float(loss.detach())
        for p in params:
            if p.grad is not None:
                p.grad /= max(n_tok, 1)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step % log_every == 0:
            log(f"  step {step} loss/token {loss_sum / max(n_tok, 1):.3f}")
    draft.eval()
    return step
