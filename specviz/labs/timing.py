"""THE way a forward pass is timed here (every lab, the benchmark, the training report): one forward of n new
tokens per sequence on top of a cached context, after one untimed round (oneDNN sets up each new shape on its
first call), sizes interleaved round by round (a disturbance from whatever else shares the cores lands on all
sizes alike), reported as the MEDIAN with the min-max spread beside it. So the Speedup lab's v(K), the Tree
page's v(n), the Serving lab's grid and the benchmark's c all agree on one machine.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch
from specviz.drafters.feature import FeatureDraft


@dataclass(frozen=True)
class Timing:
    """Milliseconds of one forward: the median of `rounds` runs and their spread."""
    median: float
    lo: float
    hi: float
    rounds: int

    def as_dict(self) -> dict:
        return {"median": self.median, "lo": self.lo, "hi": self.hi}


def context_ids(context: int | list[int], batch: int) -> torch.Tensor:
    """(batch, len) context ids: the given ids repeated per row, or `context` fixed pseudo-random tokens."""
    if isinstance(context, int):
        return torch.randint(100, 1000, (batch, context), generator=torch.Generator().manual_seed(0))
    return torch.tensor([list(context)] * batch)


def settled(x: torch.Tensor) -> float:
    """perf_counter() once the device holding x has finished its queued work: a CUDA (or MPS) forward returns when its
    kernels are queued, not when they have run, so an unsynchronised timer would read launch time only."""
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    elif x.device.type == "mps":
        torch.mps.synchronize()
    return time.perf_counter()


class Forward:
    """One model with its context cached once; run(n) times a forward of n new tokens on it and crops the
    cache back, so every size is measured on the same cached context."""

    def __init__(self, model, context: int | list[int], batch: int = 1):
        self.model, self.ids = model, context_ids(context, batch).to(model.device)
        self.feature = isinstance(model, FeatureDraft)
        if not self.feature:
            self.cache = model(input_ids=self.ids, use_cache=True, logits_to_keep=1).past_key_values  # a DynamicCache

    def run(self, n: int, before=None) -> float:
        """before: called untimed right before the timed forward (after any untimed set-up of this one)."""
        new = self.ids[:, -1:].expand(-1, n)
        if self.feature:  # a feature draft steps on states: its step reads its own h, as drafting does
            m, cache = self.model, self.model.new_cache()
            states = torch.ones((*self.ids.shape, m.config.hidden_size * len(m.read_layers)),
                                dtype=m.dtype, device=m.device)
            h, _ = m(self.ids, states, cache)
            if before is not None:
                before()
            t0 = settled(self.ids)
            m.head(m(new, h[:, -1:].expand(-1, n, -1), cache)[0])
            return 1000 * (settled(self.ids) - t0)
        if before is not None:
            before()
        t0 = settled(self.ids)
        self.model(input_ids=new, past_key_values=self.cache, use_cache=True, logits_to_keep=n)
        ms = 1000 * (settled(self.ids) - t0)
        self.cache.crop(-n)  # transformers 5: crop(-m) drops the last m tokens
        return ms


@torch.inference_mode()
def time_forwards(model, context: int | list[int], sizes, repeats: int = 5, batch: int = 1,
                  after=None) -> dict[int, Timing]:
    """{n: Timing} for each n in sizes: one untimed round, then `repeats` rounds interleaved over the sizes.
    after: a model (the target) run untimed, one decode step, before each timed forward. Why: a draft step in
    the speculative loop runs right after a target pass has streamed the target's weights through the CPU's
    caches, so the draft's own weights come from memory again; timed back to back they stay cached and the step
    looks up to 1.7x cheaper than the loop ever sees it (2026-11-26, docs/performance.md)."""
    fwd, sizes = Forward(model, context, batch), list(dict.fromkeys(sizes))
    evict = Forward(after, context, batch) if after is not None else None
    step = (lambda: evict.run(1)) if evict is not None else None
    times: dict[int, list[float]] = {n: [] for n in sizes}
    for r in range(repeats + 1):
        for n in sizes:
            ms = fwd.run(n, before=step)
            if r:
                times[n].append(ms)
    return {n: Timing(statistics.median(t), min(t), max(t), len(t)) for n, t in times.items()}


def forward_ms(model, context: int | list[int], n: int, repeats: int = 15, batch: int = 1, after=None) -> float:
    """Median ms of one forward of n new tokens (per sequence) on a cached context: n = 1 is a decode step (the
    c numerator for a draft), n = K + 1 a verify pass. after: see time_forwards."""
    return time_forwards(model, context, [n], repeats, batch, after)[n].median


def draft_step_ms(draft, target, context: int | list[int], repeats: int = 15, batch: int = 1) -> float:
    """THE numerator of c: one draft step timed as the speculative loop meets it, right after a target step."""
    return forward_ms(draft, context, 1, repeats, batch, after=target)
