"""Acceptance rules side by side (issue 38, item 5): how often each rule accepts a draft token, at real positions.

At one position the target's processed distribution is p and the draft's is q. The probability that the draft's
token is accepted, under each rule:

  exact match, sampled draft   the draft samples x ~ q, the target samples y ~ p on its own; accept when x == y.
                               P = sum_x p(x) q(x). Lossless: what is emitted is always the target's own y.
  exact match, self-draft      the same with q = p (a draft that is the target): P = sum_x p(x)^2, far below 1
                               whenever p is spread out, although the draft is perfect.
  rejection sampling           accept x ~ q with probability min(1, p(x)/q(x)), else draw from the residual:
                               P = sum_x min(p(x), q(x)) = 1 - TV(p, q). Lossless (Leviathan et al. 2023, Appendix A.1).
  greedy match                 a greedy draft against greedy verification: accepted iff argmax q == argmax p
                               (1 or 0). Lossless for greedy decoding; it says nothing about sampling.
  typical acceptance           Medusa's rule: accept x ~ q when p(x) > min(eps, delta * exp(-H(p)))
                               (specviz.verify.typical_threshold). P = sum_x q(x) [p(x) > threshold]. Not lossless:
                               the output is not distributed as p.

Why rejection sampling accepts the most among lossless rules: a lossless rule that accepts the draft's x ~ q
emits a token distributed as p, so (draft token, emitted token) is a coupling of q and p, and an acceptance
means the two are equal. For ANY coupling, P(X = Y) = sum_x P(X = Y = x) <= sum_x min(q(x), p(x)): rejection
sampling reaches that bound (it is the maximal coupling). Exact match is the independent coupling, sum p q <=
sum min(p, q) term by term (p q <= min(p, q) max(p, q) <= min(p, q)).

Block verification (Sun et al., ICLR 2025) is a rule for a BLOCK of K drafts, not for one: for the first draft
the bound above holds for it too (it is lossless), and with K = 1 it IS rejection sampling. What it changes is how
far into the block the kept prefix reaches: token-wise stops at the first failed test, block verification judges
the drafts jointly and keeps at least as many in expectation. So its row is measured on blocks: K drafts drawn
from the draft after the run's own text at each position, the target's p over them in one forward, and per block
the drafts each rule keeps in expectation over the uniforms (engine.speculative.block_odds, from verify's
block_weights); the mean over the sampled blocks, as a share of K (block_rows)."""
from __future__ import annotations

import copy
import math

import torch

from specviz.engine.speculative import block_odds
from specviz.tokens import token_text
from specviz.sampling import SamplingConfig, distribution
from specviz.verify import total_variation, typical_threshold

# the rule's name, and whether it is lossless: True, False, or a string saying for what
RULES = {
    "exact match, sampled draft": True,
    "exact match, self-draft": True,
    "rejection sampling": True,
    "greedy match": "greedy decoding only",
    "typical acceptance": False,
}
EPSILON, DELTA = 0.09, 0.3  # Medusa's posterior_threshold and posterior_alpha defaults (the CLI's --typical)
BLOCK = "block verification"  # the block rule's row (lossless), drawn when live_rules is given the run's K
TOKENWISE = "token-wise, same blocks"  # rejection sampling on the very blocks the block row judged: its reference
SAMPLES = 32  # blocks drawn per position: the mean gain's standard error is ~0.02 drafts at T = 1 on 16 positions


def rule_probabilities(p: torch.Tensor, q: torch.Tensor, epsilon: float = EPSILON, delta: float = DELTA) -> dict:
    """p, q: 1-D distributions over one vocabulary. Each rule's probability of accepting the draft token, and
    TV(p, q). In float64, each renormalised to sum to 1 (a float32 softmax misses 1 by ~1e-6, enough to part
    sum min(p, q) from 1 - TV); rule_fractions gives the lossless rules in exact rationals."""
    p, q = p.double(), q.double()
    p, q = p / p.sum(), q / q.sum()
    threshold = typical_threshold(p, epsilon, delta)
    return {
        "exact match, sampled draft": float((p * q).sum()),
        "exact match, self-draft": float((p * p).sum()),
        "rejection sampling": float(torch.minimum(p, q).sum()),
        "greedy match": float(int(torch.argmax(p)) == int(torch.argmax(q))),
        "typical acceptance": float(q[p > threshold].sum()),
        "tv": total_variation(p, q),
    }


def rule_fractions(p: list, q: list) -> dict:
    """The lossless rules' acceptance probabilities in exact arithmetic (p, q: lists of fractions.Fraction), for
    the tests: sum p q, sum p^2, sum min(p, q) and 1 - TV."""
    return {
        "exact match, sampled draft": sum(a * b for a, b in zip(p, q)),
        "exact match, self-draft": sum(a * a for a in p),
        "rejection sampling": sum(min(a, b) for a, b in zip(p, q)),
        "1 - tv": 1 - sum(abs(a - b) for a, b in zip(p, q)) / 2,
    }


@torch.no_grad()
def next_token_distributions(model, ids: list[int], start: int, cfg: SamplingConfig) -> torch.Tensor:
    """(len(ids) - start, vocab): the model's processed next-token distribution after ids[:i + 1] for i >= start - 1,
    i.e. at every output position from `start` on, from ONE forward pass over the whole text (teacher forcing)."""
    logits = model(torch.tensor([ids], device=model.device)).logits[0, start - 1: len(ids) - 1]
    return distribution(logits.cpu(), cfg)


def _cache_upto(model, ids: list[int]):
    """The model's KV cache over ids (one forward), for block_rows to start every position's blocks from."""
    return model(torch.tensor([ids], device=model.device), use_cache=True).past_key_values


def _forward_from(model, cache, keep: int, new: torch.Tensor, samples: int):
    """Logits (samples, new positions, vocab) of `new` (samples, n) fed after the first `keep` cached tokens, each of
    the `samples` rows on its own copy of that prefix (the shared cache is left as it was)."""
    c = copy.deepcopy(cache)
    if c.get_seq_length() > keep:
        c.crop(keep - c.get_seq_length())  # transformers 5: a negative size removes that many from the end
    c.batch_repeat_interleave(samples)
    out = model(new.to(model.device), past_key_values=c, use_cache=True)
    return out.logits.float().cpu(), out.past_key_values


@torch.no_grad()
def block_rows(target, draft, prompt: list[int], output: list[int], temperature: float, k: int, positions: int = 16,
               samples: int = SAMPLES, seed: int = 0) -> list[dict]:
    """At each of the first `positions` output positions of a run: `samples` blocks of k drafts drawn from the draft
    model at `temperature` after the run's own text up to there, and the target's p over each block (ONE forward for
    all of them). Per block, the drafts kept in expectation over the uniform draws under token-wise and under block
    verification (block_odds); per position their means over the blocks and the standard error of block's gain
    (the same blocks judged both ways: a paired difference). Estimates over the drafts, exact over the uniforms.
    Returns [{"position", "token-wise": E kept, "block": E kept, "gain_se"}]."""
    cfg = SamplingConfig(temperature=temperature)
    ids, start = list(prompt) + list(output), len(prompt)
    n = min(positions, len(output))
    if n == 0 or k < 1:
        return []
    gen = torch.Generator().manual_seed(seed)
    t_cache, d_cache = _cache_upto(target, ids[: start + n - 1]), _cache_upto(draft, ids[: start + n - 1])
    rows = []
    for s in range(n):
        last = torch.full((samples, 1), ids[start + s - 1])  # the run's token before position s + 1
        logits, cache = _forward_from(draft, d_cache, start + s - 1, last, samples)
        qs, drafts = [], []
        for j in range(k):  # the draft's k steps, every block of this position in one batch
            q = distribution(logits[:, -1], cfg)
            # inverse CDF, one uniform per block: torch.multinomial over 49152 tokens took ~28 ms per batch here
            cdf = q.cumsum(-1)
            u = torch.rand(samples, 1, generator=gen) * cdf[:, -1:]
            x = torch.searchsorted(cdf, u, right=True).clamp(max=q.shape[-1] - 1)  # right: never a token of mass 0
            qs.append(q)
            drafts.append(x)
            if j < k - 1:
                out = draft(x.to(draft.device), past_key_values=cache, use_cache=True)
                logits, cache = out.logits.float().cpu(), out.past_key_values
        blocks = torch.cat(drafts, 1)  # (samples, k)
        p = distribution(_forward_from(target, t_cache, start + s - 1, torch.cat([last, blocks], 1), samples)[0]
                         .reshape(samples * (k + 1), -1), cfg).reshape(samples, k + 1, -1)
        q = torch.stack(qs, 1)  # (samples, k, vocab)
        kept = [block_odds(blocks[b].tolist(), q[b], p[b]) for b in range(samples)]
        tok = [sum(o.kept_token) for o in kept]
        blk = [sum(o.kept_block) for o in kept]
        gain = [b - t for b, t in zip(blk, tok)]
        mean = sum(gain) / samples
        var = sum((g - mean) ** 2 for g in gain) / max(1, samples - 1)
        rows.append({"position": s + 1, "token-wise": sum(tok) / samples, "block": sum(blk) / samples,
                     "gain_se": math.sqrt(var / samples)})
    return rows


def live_rules(target, draft, tokenizer, prompt: list[int], output: list[int], temperature: float,
               positions: int = 16, epsilon: float = EPSILON, delta: float = DELTA, k: int | None = None,
               samples: int = SAMPLES) -> dict:
    """At the first `positions` output positions of a recorded run (prompt + output), p from the target and q from
    a token draft model (both teacher-forced on the run's text, processed at `temperature`), each rule's acceptance
    probability. Returns {"rows": [{"position", "token", "text", rule: P, ..., "tv"}], "mean": {rule: mean}}. With
    k (the run's K): block verification's row too, as the share of k drafts kept per block drafted at each position
    (BLOCK), and token-wise verification's on the same blocks (TOKENWISE) (block_rows; "block" holds the counts)."""
    cfg = SamplingConfig(temperature=temperature)
    ids = list(prompt) + list(output)
    n = min(positions, len(output))
    if n == 0:
        return {"rows": [], "mean": {}}
    start = len(prompt)
    p = next_token_distributions(target, ids[: start + n], start, cfg)
    q = next_token_distributions(draft, ids[: start + n], start, cfg)
    rows = []
    for i in range(n):
        row = {"position": i + 1, "token": output[i], "text": token_text(tokenizer, output[i])}
        row.update(rule_probabilities(p[i], q[i], epsilon, delta))
        rows.append(row)
    block = None
    if k:
        kept = block_rows(target, draft, prompt, output, temperature, k, n, samples)
        for row, b in zip(rows, kept):
            row[BLOCK], row[TOKENWISE] = b["block"] / k, b["token-wise"] / k
        token, blk = (sum(b[r] for b in kept) / n for r in ("token-wise", "block"))
        block = {"k": k, "samples": samples, "rows": kept, "token-wise": token, "block": blk,
                 "row": BLOCK, "reference": TOKENWISE,  # the names of its two rows (figures take no labs)
                 # the positions' estimates are independent: the mean gain's standard error from theirs
                 "gain_se": math.sqrt(sum(b["gain_se"] ** 2 for b in kept)) / n}
    names = list(RULES) + ([BLOCK, TOKENWISE] if block else []) + ["tv"]
    mean = {r: sum(row[r] for row in rows) / n for r in names}
    # where a rule that is not lossless accepts more than any lossless rule can (1 - TV): it pays in the output
    beyond = [row["position"] for row in rows if row["typical acceptance"] > row["rejection sampling"] + 1e-12]
    return {"rows": rows, "mean": mean, "temperature": temperature, "epsilon": epsilon, "delta": delta,
            "typical_beyond_bound": beyond, "block": block}
