"""Prompt lookup (n-gram) drafting: find the latest earlier occurrence of the last n tokens and propose
what followed it. No model and no cost; q is one-hot on each proposal, so a sampling verifier accepts
with probability p(x)."""
from __future__ import annotations

import torch

from specviz.drafters.base import ModelFree
from specviz.sampling import SamplingConfig


class NgramDrafter(ModelFree):
    name = "n-gram lookup"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        if k < 1:
            return [], None
        # Longest suffix first: a 3-token match predicts better than a 1-token one.
        for n in range(min(self.max_ngram, len(ids) - 1), self.min_ngram - 1, -1):
            pattern = ids[-n:]
            for start in range(len(ids) - n - 1, -1, -1):  # latest earlier occurrence first
                if ids[start:start + n] == pattern:
                    follow = ids[start + n:start + n + k]
                    if follow:
                        return list(follow), None  # None: q is one-hot on each proposed token
        return [], None
