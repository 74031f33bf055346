"""Batched greedy and batched speculative greedy: B requests in one forward per step, as a server runs them.

One KV cache per model (a DynamicCache with a batch axis) and, beside it, a per-slot attention mask and a
per-sequence length. Why one shared cache and not one Stepper per sequence: the point of batching is ONE
forward over every sequence's tokens, which is what makes a decode step cost about what a single
sequence's step costs while decoding is memory-bound (serving.py). B separate caches would be B forwards.

Ragged sequences are handled by the mask alone, never by moving keys around:
- Prompts of different lengths are left-padded; pad slots are 0 in the mask. Position ids are given
  explicitly (a sequence's n-th real token is at position n-1 whatever its padding), so RoPE sees each
  sequence exactly as it would see it alone.
- Speculation accepts a different number of drafts in each sequence (ragged acceptance). Every verify pass
  feeds K+1 tokens for EVERY sequence; afterwards each sequence keeps the accepted prefix of its K+1 slots
  and the rejected slots become holes (mask 0): an attention mask with holes, per-sequence valid lengths.
  The alternative, cropping every cache to the shortest sequence and re-feeding the longer ones, needs a
  second, ragged forward per step (or re-computes accepted tokens); holes cost only memory and attention
  over dead slots (≤ K per sequence per step), which is small beside the linear layers at this context.
  A masked slot gets weight exactly 0 after the softmax, so the holes change nothing but float summation
  order. (A paged server frees those slots instead; here they stay until the run ends.)
- A finished sequence (EOS or its token budget) stays in the batch, fed a dummy token whose slots are
  holes: padding waste. The step count is set by the slowest sequence.

This is a STATIC batch: the B requests start together and the batch runs until its slowest sequence is
done. A server with continuous batching (vLLM, SGLang) does not wait: each sequence advances by its own
accepted count at every step, a finished request leaves the batch and a waiting one takes its slot, and the
KV slots of rejected drafts are freed. What it cannot avoid is the verify's cost: every running sequence's
K+1 rows are computed whether its drafts are accepted or not.

Exactness: greedy output per sequence equals plain greedy (plain.py) for each prompt alone, and batched
speculative greedy equals batched greedy, as far as float arithmetic allows: a batch of B rows or K+1
tokens runs the matmuls with other blockings than one row, so logits differ in the last bits and a
near-tie could flip. tests/test_batched.py checks identity on the embedded model against per-sequence plain
greedy and against transformers' batched generate() on the same padded batch.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from specviz.errors import SpecVizError
from specviz.sampling import SamplingConfig, distribution, new_generator
from specviz.tokens import eos_ids
from specviz.verify import verify

GREEDY = SamplingConfig()


class Batch:
    """One model's KV cache for B sequences of different lengths: mask (B, slots) is 1 where a slot holds
    a token of its sequence; a sequence's length (its next position id) is its row's sum."""

    def __init__(self, model, batch: int):
        self.model = model
        self.cache = None
        self.mask = torch.zeros(batch, 0, dtype=torch.long)
        self.passes = 0

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(1)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, keep: int, fed: torch.Tensor | None = None) -> torch.Tensor:
        """ONE forward over tokens (B, T) on top of the cache; fed (B, T) marks real tokens (default all).
        Returns (B, keep, vocab) float32 logits of the last `keep` positions. Every fed slot is kept until
        settle() says otherwise."""
        fed = torch.ones_like(tokens) if fed is None else fed.long()
        # a sequence's i-th new real token sits at its length + i; pad slots get a harmless 0
        positions = (self.lengths[:, None] + fed.cumsum(1) - 1).clamp(min=0)
        mask = torch.cat([self.mask, fed], 1)
        dev = self.model.device
        out = self.model(input_ids=tokens.to(dev), attention_mask=mask.to(dev), position_ids=positions.to(dev),
                         past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        self.cache, self.mask = out.past_key_values, mask
        self.passes += 1
        return out.logits[:, -keep:].float().cpu()

    def settle(self, kept: torch.Tensor) -> None:
        """kept (B, span) bool: which of the last `span` slots each sequence keeps; the rest become holes."""
        span = kept.shape[1]
        self.mask = torch.cat([self.mask[:, :self.mask.shape[1] - span], kept.long()], 1)

    def prefill(self, prompts: list[list[int]], pad: int, keep: int = 1) -> torch.Tensor:
        """Left-pad the prompts to one length and run them in one forward; logits of the last `keep`."""
        width = max(len(p) for p in prompts)
        tokens = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts])
        fed = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        return self.forward(tokens, keep, fed)


def prefix_mask(counts: list[int], span: int) -> torch.Tensor:
    """(B, span) bool: the first counts[i] of sequence i's span slots."""
    return torch.arange(span)[None, :] < torch.tensor(counts)[:, None]


def argmax_rows(logits: torch.Tensor) -> list[int]:
    """Greedy choice per row, through the same softmax plain.py takes its argmax of (a tie broken alike)."""
    return distribution(logits, GREEDY).argmax(-1).tolist()


def pad_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


@dataclass
class BatchRun:
    """What one batched run did. cycles[i]: target passes while sequence i was still running (prefill
    counted for greedy, where it yields the first token; the prefill of all but the last prompt token is
    not, for speculation, where it yields none)."""
    method: str
    outputs: list[list[int]]
    target_passes: int  # batched forwards of the target, prefill included
    draft_passes: int
    seconds: float
    cycles: list[int]
    accepted: list[int] = field(default_factory=list)  # drafts accepted per sequence (speculative)
    k: int = 0

    @property
    def tokens(self) -> list[int]:
        return [len(o) for o in self.outputs]

    @property
    def tokens_per_pass(self) -> list[float]:
        """Per sequence: tokens emitted per target pass it took part in (mean acceptance length)."""
        return [n / max(1, c) for n, c in zip(self.tokens, self.cycles)]


def check_prompts(prompts: list[list[int]], least: int = 1) -> None:
    if not prompts or any(len(p) < least for p in prompts):
        raise SpecVizError(f"Every prompt needs at least {least} tokens for a batched run.")


def batched_greedy(model, tokenizer, prompts: list[list[int]], max_new_tokens: int) -> BatchRun:
    """Greedy decoding of B prompts, one batched forward per token."""
    check_prompts(prompts)
    t0 = time.perf_counter()
    stop, b = eos_ids(model, tokenizer), len(prompts)
    batch = Batch(model, b)
    logits = batch.prefill(prompts, pad_id(tokenizer))[:, 0]
    outputs, alive, cycles = [[] for _ in range(b)], [max_new_tokens > 0] * b, [0] * b
    while True:
        chosen = argmax_rows(logits)
        for i in range(b):
            if alive[i]:
                outputs[i].append(chosen[i])
                cycles[i] += 1
                alive[i] = chosen[i] not in stop and len(outputs[i]) < max_new_tokens
        if not any(alive):
            break
        logits = batch.forward(torch.tensor(chosen)[:, None], 1)[:, 0]
        batch.settle(torch.tensor(alive)[:, None])  # a finished sequence's dummy token is a hole
    return BatchRun("batched greedy", outputs, batch.passes, 0, time.perf_counter() - t0, cycles)


def propose(draft: Batch, ids: list[list[int]], k: int) -> torch.Tensor:
    """K greedy draft tokens per sequence, (B, K): K batched draft forwards. The draft's cache holds
    ids[:-2] of every sequence, so the first forward feeds the last two tokens (one of them may already
    have been fed as a draft; re-feeding it keeps the feed the same width for every sequence)."""
    logits = draft.forward(torch.tensor([s[-2:] for s in ids]), 1)[:, 0]
    tokens = [argmax_rows(logits)]
    for _ in range(k - 1):
        logits = draft.forward(torch.tensor(tokens[-1])[:, None], 1)[:, 0]
        tokens.append(argmax_rows(logits))
    return torch.tensor(tokens).T


def accept(drafts: list[int], p: torch.Tensor, stop: set[int], budget: int) -> tuple[list[int], int]:
    """Greedy verification of one sequence (verify.py's rule): the tokens it emits, cut to its remaining
    budget (greedy would have stopped there), and how many drafts it accepted."""
    v = verify(drafts, None, p, True, new_generator(0), stop)
    emitted = v.emitted(drafts)[:budget]
    return emitted, v.accepted


def batched_speculative(target, draft, tokenizer, prompts: list[list[int]], max_new_tokens: int,
                        k: int = 4) -> BatchRun:
    """Speculative greedy for B prompts: per step K batched draft forwards, then ONE target forward over all
    B x (K+1) tokens [last token, d_1..d_K]; each sequence accepts its own number of drafts (ragged), keeps
    that prefix of its slots in both caches and turns the rest into holes. Invariant at the top of a step:
    the target's cache holds ids[:-1] of each sequence, the draft's ids[:-2]."""
    if k < 1:
        raise SpecVizError(f"K (draft length) must be at least 1; got {k}.")
    check_prompts(prompts, least=3)
    t0 = time.perf_counter()
    stop, b, pad = eos_ids(target, tokenizer), len(prompts), pad_id(tokenizer)
    tb, db = Batch(target, b), Batch(draft, b)
    tb.prefill([p[:-1] for p in prompts], pad)
    db.prefill([p[:-2] for p in prompts], pad)
    ids = [list(p) for p in prompts]
    outputs, alive = [[] for _ in range(b)], [max_new_tokens > 0] * b
    cycles, accepted = [0] * b, [0] * b
    while any(alive):
        drafts = propose(db, ids, k)
        p = distribution(tb.forward(torch.cat([torch.tensor([s[-1] for s in ids])[:, None], drafts], 1), k + 1), GREEDY)
        # accepted drafts + 1: the target's slots [last, d_1..d_n] (and the draft's [ids[-2], ids[-1], d_1..d_n-1])
        keep = [0] * b
        for i in range(b):
            if not alive[i]:
                continue
            emitted, n = accept(drafts[i].tolist(), p[i], stop, max_new_tokens - len(outputs[i]))
            ids[i] += emitted
            outputs[i] += emitted
            cycles[i], accepted[i], keep[i] = cycles[i] + 1, accepted[i] + n, n + 1
            alive[i] = emitted[-1] not in stop and len(outputs[i]) < max_new_tokens
        tb.settle(prefix_mask(keep, k + 1))
        db.settle(prefix_mask(keep, k + 1))
    return BatchRun(f"batched speculative greedy (K={k})", outputs, tb.passes, db.passes, time.perf_counter() - t0,
                    cycles, accepted, k)
