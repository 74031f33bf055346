"""Lookahead decoding (Fu et al. 2024, "Break the Sequential Dependency of LLM Inference Using Lookahead
Decoding"): speculation with NO draft model. The target itself guesses, by Jacobi iteration, and
remembers the n-grams its guesses produce; the same forward pass also verifies earlier n-grams.

Plain Jacobi decoding (jacobi_steps) guesses the next W tokens, runs ONE causal forward over them and
replaces each guess by the target's argmax after the guesses before it. Guesses that already equal the
output are converged and exact, but a guess is only right if every guess before it was, so it rarely
gains more than one token per pass. Lookahead keeps the by-products instead:

  window     N - 1 levels of W tokens, oldest first; level l, column i sits at position t + 1 + i + l. So a
             column is NOT one token's trajectory: it holds consecutive positions, each level produced at
             a different iteration. The next level is what the target outputs after each column of the
             newest level (one position further on);
  n-grams    column i read from the oldest level up, plus its new output, is an n-gram the model
             "nearly" generates (N consecutive positions): it goes into a pool keyed by its first token.
             Fu et al.'s figure draws one column per position, where the same n-grams run diagonally;
  verify     the pool's n-grams that start with the last accepted token (at most G) are checked in the
             SAME forward (each attends to the context and its own earlier tokens only); the longest
             one the target agrees with is accepted, plus the target's own next token.

One forward per step: the root (the last accepted token), the lookahead branch and the verification
branch, with a mask that keeps them independent (lookahead_inputs). Greedy only: every emitted token is
the target's argmax after the tokens before it, so the output is plain greedy's (tested).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Generator

import torch

from specviz.errors import SpecVizError
from specviz.engine.loop import Decoding, record_guesses, run_cycles
from specviz.stepper import Stepper
from specviz.tokens import token_text
from specviz.trace import CacheState, JacobiStep, LookaheadStep, Result


class NgramPool:
    """n-grams by first token; the newest G continuations (N - 1 tokens each) per first token."""

    def __init__(self, guesses: int):
        self.guesses = guesses
        self.by_first: dict[int, OrderedDict] = {}

    def add(self, ngram: tuple[int, ...]) -> bool:
        """Remember an n-gram; True when it was new."""
        rest = self.by_first.setdefault(ngram[0], OrderedDict())
        new = ngram[1:] not in rest
        rest[ngram[1:]] = None
        rest.move_to_end(ngram[1:])
        while len(rest) > self.guesses:
            rest.popitem(last=False)
        return new

    def candidates(self, first: int) -> list[tuple[int, ...]]:
        """What may follow `first`, newest first."""
        return list(reversed(self.by_first.get(first, {})))

    def __len__(self) -> int:
        return sum(len(r) for r in self.by_first.values())


def lookahead_inputs(levels: list[list[int]], candidates: list[tuple[int, ...]], pending: list[int],
                     cached: int) -> tuple[list[int], list[int], torch.Tensor]:
    """The ONE forward's tokens, position ids and (queries, keys) attention pattern on top of a cache of
    `cached` tokens. Rows: the pending context (its last token is the root, at position t), then the
    window row by row (level l, column i at position t + 1 + i + l: it continues level 0's columns 0..i
    and its own column's lower levels, so it sees exactly those), then each candidate (token j at
    t + 1 + j, seeing its own earlier tokens). Everything sees the context."""
    m, t = len(pending), cached + len(pending) - 1
    w = len(levels[0]) if levels else 0
    tokens, positions = list(pending), list(range(cached, t + 1))
    sees: list[list[int]] = [list(range(r + 1)) for r in range(m)]  # rows each row attends to (besides the cache)
    row_of = {}
    for l, level in enumerate(levels):
        for i, x in enumerate(level):
            row_of[l, i] = len(tokens)
            own = [row_of[0, j] for j in range(i + 1)] + [row_of[k, i] for k in range(1, l + 1)]
            sees.append(list(range(m)) + own)
            tokens.append(x)
            positions.append(t + 1 + i + l)
    for cand in candidates:
        first = len(tokens)
        for j, x in enumerate(cand):
            sees.append(list(range(m)) + list(range(first, first + j + 1)))
            tokens.append(x)
            positions.append(t + 1 + j)
    allowed = torch.zeros(len(tokens), cached + len(tokens), dtype=torch.bool)
    allowed[:, :cached] = True
    for r, cols in enumerate(sees):
        allowed[r, [cached + c for c in cols]] = True
    assert w == 0 or len(tokens) == m + len(levels) * w + sum(map(len, candidates))
    return tokens, positions, allowed


def agreed(candidate: tuple[int, ...], root_choice: int, after: list[int]) -> int:
    """Greedy verification of one candidate: how many of its leading tokens the target agrees with. Token 0
    must equal the root's argmax, token j the argmax after token j - 1 (after[j - 1], from the same pass)."""
    m = 0
    while m < len(candidate) and candidate[m] == (root_choice if m == 0 else after[m - 1]):
        m += 1
    return m


def initial_level(prompt_ids: list[int], window: int, seed: int, special: set[int] = frozenset()) -> list[int]:
    """Level 0 before any iteration: W tokens drawn from the prompt (the paper's initialisation), leaving out
    the chat template's special tokens: any guess works, since nothing is accepted without verification,
    and the prompt's words are likelier guesses than random tokens."""
    words = [x for x in prompt_ids if x not in special] or list(prompt_ids)
    gen = torch.Generator().manual_seed(seed)
    return [words[i] for i in torch.randint(len(words), (window,), generator=gen).tolist()]


def check(window: int, ngram: int, guesses: int) -> None:
    if window < 1 or ngram < 2 or guesses < 0:
        raise SpecVizError(f"Lookahead needs window W ≥ 1, n-gram size N ≥ 2 and guesses G ≥ 0; got W = {window}, "
                           f"N = {ngram}, G = {guesses}.")


def lookahead_steps(target, tokenizer, prompt_ids: list[int], max_new_tokens: int, window: int = 5, ngram: int = 4,
                    guesses: int = 5, seed: int = 0) -> Generator[LookaheadStep, None, Result]:
    """Greedy lookahead decoding, one target forward per step (yielded); returns the Result."""
    check(window, ngram, guesses)
    stepper, pool = Stepper(target), NgramPool(guesses)
    levels = [initial_level(prompt_ids, window, seed, set(tokenizer.all_special_ids))]

    def cycle(d: Decoding) -> tuple[LookaheadStep, list[int]]:
        nonlocal levels
        ids = d.ids
        context_len, cached = len(ids), stepper.cached
        candidates = pool.candidates(ids[-1])[:guesses]
        tokens, positions, allowed = lookahead_inputs(levels, candidates, ids[cached:], cached)
        branch = len(tokens) - (context_len - cached) + 1  # the root's row and everything after it
        # the ONE forward; row 0 follows the root, then the window row by row, then the candidates
        choice = stepper.masked_logits(tokens, positions, allowed, branch).argmax(-1).tolist()
        filled = stepper.cached
        outputs = choice[1 + (len(levels) - 1) * window:1 + len(levels) * window]  # after the newest level
        starts = [1 + len(levels) * window + sum(map(len, candidates[:g])) for g in range(len(candidates))]
        matched = [agreed(c, choice[0], choice[s:s + len(c)]) for s, c in zip(starts, candidates)]
        best = max(range(len(candidates)), key=lambda g: (matched[g], -g)) if any(matched) else -1  # newest wins ties
        m = matched[best] if best >= 0 else 0
        emitted = d.cut(list(candidates[best][:m]) + [choice[starts[best] + m - 1]] if best >= 0 else [choice[0]])
        # keep the context and the accepted candidate tokens' entries (computed on exactly this prefix)
        kept = [context_len - 1 + starts[best] + j for j in range(len(emitted) - 1)] if best >= 0 else []
        stepper.keep_slots(list(range(context_len)) + kept)

        ngrams = ([tuple(lv[i] for lv in levels) + (outputs[i],) for i in range(window)]
                  if len(levels) == ngram - 1 else [])
        fresh = [pool.add(g) for g in ngrams]
        event = LookaheadStep(
            step=d.cycle, context_len=context_len, root=ids[-1],
            levels=tuple(map(tuple, levels)), outputs=tuple(outputs),
            new_ngrams=tuple(ngrams), fresh=tuple(fresh), added=sum(fresh), pool_size=len(pool),
            candidates=tuple(candidates), matched=tuple(matched), best=best, emitted=tuple(emitted),
            texts=texts(tokenizer, [ids[-1], *outputs, *emitted, *(x for lv in levels for x in lv),
                                    *(x for c in candidates for x in c)]),
            verify_positions=len(tokens), position_ids=tuple(positions[-branch:]),
            allowed=tuple(map(tuple, allowed[-branch:, -branch:].tolist())),
            target_cache=CacheState(filled, stepper.cached))
        levels = (levels[1:] if len(levels) == ngram - 1 else levels) + [outputs]
        return event, emitted

    d = Decoding.of(target, tokenizer, prompt_ids, max_new_tokens)
    yield from run_cycles(d, cycle, record_guesses)
    return d.result("lookahead")


def texts(tokenizer, tokens) -> dict[int, str]:
    """Every token id shown in a step -> its text (byte fragments as <0x..>), for the figures."""
    return {x: token_text(tokenizer, x) for x in sorted(set(tokens))}


def jacobi_steps(target, tokenizer, prompt_ids: list[int], max_new_tokens: int, window: int = 5,
                 seed: int = 0) -> Generator[JacobiStep, None, Result]:
    """Plain Jacobi decoding (no pool): guess W tokens, ONE causal forward over them, keep the guesses that
    already equal the target's argmax (converged) plus the target's next token, re-guess the rest from the
    outputs. Always at least one token per pass; more only when a whole prefix of guesses was right."""
    check(window, 2, 0)
    stepper = Stepper(target)
    guess = initial_level(prompt_ids, window, seed, set(tokenizer.all_special_ids))

    def cycle(d: Decoding) -> tuple[JacobiStep, list[int]]:
        nonlocal guess
        context_len = len(d.ids)
        out = stepper.logits(d.ids + guess, window + 1).argmax(-1).tolist()  # out[j]: the argmax after guess[:j]
        m = 0
        while m < window and guess[m] == out[m]:
            m += 1  # guess[m] is exact: everything before it was, and the target agrees with it
        emitted = d.cut(out[:m + 1])
        filled = stepper.cached
        stepper.crop(context_len + len(emitted) - 1)  # the exact guesses' entries stay
        event = JacobiStep(step=d.cycle, context_len=context_len, guesses=tuple(guess), outputs=tuple(out),
                           converged=m, emitted=tuple(emitted), texts=texts(tokenizer, guess + out),
                           target_cache=CacheState(filled, stepper.cached))
        guess = (out[m + 1:] + [out[-1]] * (m + 1))[:window]  # the outputs become the next guesses
        return event, emitted

    d = Decoding.of(target, tokenizer, prompt_ids, max_new_tokens)
    yield from run_cycles(d, cycle, record_guesses)
    return d.result("jacobi")
