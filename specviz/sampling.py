"""logits -> the processed distribution a token is drawn from. One helper for every algorithm.

The target's p must be processed exactly as plain sampling would process it (that is the distribution
the output follows). The draft may sample from any q, as long as the verifier divides by the q the
draft token was actually drawn from; SpecViz passes q through the same temperature / top-k / top-p
because a q closer to p is accepted more often, not because exactness requires it.

Temperature 0 means greedy: the distribution is shown as the plain softmax, but the token is the
argmax. The warpers are transformers' own, in the order generate() applies them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from specviz.errors import SpecVizError


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 0.0  # 0: greedy
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1: off
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def validate(self) -> "SamplingConfig":
        if not (self.temperature >= 0.0) or self.temperature > 100:
            raise SpecVizError(f"Temperature must be between 0 (greedy) and 100; got {self.temperature}.")
        if not (0.0 < self.top_p <= 1.0):
            raise SpecVizError(f"top-p must be in (0, 1]; got {self.top_p}.")
        if self.top_k < 0:
            raise SpecVizError(f"top-k must be 0 (off) or positive; got {self.top_k}.")
        return self


def warpers(cfg: SamplingConfig) -> LogitsProcessorList:
    procs = LogitsProcessorList()
    if cfg.greedy:
        return procs
    if cfg.temperature != 1.0:
        procs.append(TemperatureLogitsWarper(cfg.temperature))
    if cfg.top_k:
        procs.append(TopKLogitsWarper(cfg.top_k))
    if cfg.top_p < 1.0:
        procs.append(TopPLogitsWarper(cfg.top_p))
    return procs


def distribution(logits: torch.Tensor, cfg: SamplingConfig, procs: LogitsProcessorList | None = None) -> torch.Tensor:
    """(n, vocab) logits -> (n, vocab) float32 probabilities, the distribution tokens are drawn from."""
    scores = logits.float()
    procs = warpers(cfg) if procs is None else procs
    if procs:
        # warpers take input_ids only for API symmetry; none of ours reads them
        scores = procs(None, scores)
    return torch.softmax(scores, dim=-1)


def choose(probs: torch.Tensor, cfg: SamplingConfig, generator: torch.Generator) -> int:
    """Greedy: argmax. Sampling: one draw with the run's own generator (never the global RNG, so two
    sessions stepping at once cannot disturb each other's draws)."""
    return draw(probs, cfg.greedy, generator)


def draw(probs: torch.Tensor, greedy: bool, generator: torch.Generator) -> int:
    """argmax when greedy, else one multinomial draw from the run's generator."""
    return int(torch.argmax(probs)) if greedy else int(torch.multinomial(probs, 1, generator=generator))


def new_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g
