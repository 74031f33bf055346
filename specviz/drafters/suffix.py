"""Suffix decoding (Oliaro et al. 2024, SuffixDecoding), as a chain: propose what followed the current
context's longest suffix in everything seen so far — this request's prompt and output AND earlier
requests' — walking on by the most frequent continuation.

n-gram prompt lookup searches only the current request, matches at most a few tokens and takes the
latest occurrence. Agents ask the same kind of request again and again (the same tool call, the same
JSON, the same code with one change), so a memory across requests finds long matches that prompt lookup
cannot see. No model, no cost; q is one-hot on each proposal.

The index maps every token window of length 1..max_match to the positions that followed it; a window of
the current context is looked up longest first, and the proposal walks forward while enough of the
matching occurrences agree on the next token (min_share): frequency, not recency, picks the branch.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import torch

from specviz.drafters.base import ModelFree
from specviz.sampling import SamplingConfig


class SuffixIndex:
    """Token windows (length 1..max_match) of a corpus of sequences -> where each occurrence ends."""

    def __init__(self, max_match: int = 16):
        self.max_match = max_match
        self.seqs: list[list[int]] = []
        self.ends: dict[tuple[int, ...], list[tuple[int, int]]] = defaultdict(list)

    def extend(self, s: int, tokens: list[int]) -> None:
        """Append tokens to sequence s (s == number of sequences starts a new one) and index the windows
        that now have a token after them."""
        if s == len(self.seqs):
            self.seqs.append([])
        seq = self.seqs[s]
        start = max(1, len(seq))
        seq.extend(tokens)
        for end in range(start, len(seq)):  # a window ending before `end` is followed by seq[end]
            for m in range(1, min(self.max_match, end) + 1):
                self.ends[tuple(seq[end - m:end])].append((s, end))

    def continuations(self, context: list[int], k: int, min_share: float) -> list[int]:
        """Up to k tokens following the longest suffix of context found in the index, each the most frequent
        next token among the occurrences still matching (stop when it holds less than min_share of them)."""
        for m in range(min(self.max_match, len(context)), 0, -1):
            hits = self.ends.get(tuple(context[-m:]))
            if hits:
                break
        else:
            return []
        out: list[int] = []
        while len(out) < k and hits:
            nexts = Counter(self.seqs[s][e] for s, e in hits if e < len(self.seqs[s]))
            if not nexts:
                break
            token, count = nexts.most_common(1)[0]
            if count < min_share * sum(nexts.values()):
                break
            out.append(token)
            hits = [(s, e + 1) for s, e in hits if e < len(self.seqs[s]) and self.seqs[s][e] == token]
        return out


class SuffixDrafter(ModelFree):
    name = "suffix decoding"

    def __init__(self, history: list[list[int]] | None = None, max_match: int = 16, min_share: float = 0.3):
        """history: earlier requests (prompt + output token ids) this drafter remembers."""
        self.history = [list(h) for h in history or []]
        self.max_match, self.min_share = max_match, min_share
        self.reset()

    def reset(self) -> None:
        self.index = SuffixIndex(self.max_match)
        for h in self.history:
            self.index.extend(len(self.index.seqs), h)
        self.current = len(self.index.seqs)  # the running request is the index's last sequence, grown in place

    def remember(self, tokens: list[int]) -> None:
        """Add a finished request (prompt + output) to the memory the next requests draft from."""
        self.history.append(list(tokens))

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        if k < 1:
            return [], None
        # the current request is searched too (prompt lookup's whole corpus); the engine only ever extends the
        # accepted context, so only its new tokens are indexed
        seen = self.index.seqs[self.current] if self.current < len(self.index.seqs) else []
        if ids[:len(seen)] != seen:
            self.reset()
            seen = []
        self.index.extend(self.current, ids[len(seen):])
        return self.index.continuations(ids, k, self.min_share), None
