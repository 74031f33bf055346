"""The skeleton every token-by-token decoding loop shares (plain, speculative chain and tree, lookahead,
Jacobi), written once: the token budget, committing a cycle's tokens, the end-of-sequence stop, the
counters, the Result. An algorithm supplies only its cycle: a function that reads the Decoding (ids so far,
room left), runs its forward pass(es) and returns (the trace event, the tokens it emits).

Beam search keeps B hypotheses at once and batched decoding B sequences: they have their own loops.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from specviz.tokens import eos_ids
from specviz.trace import Counters, Result


def room(k: int, left: int) -> int:
    """How many tokens a cycle may draft with `left` tokens of budget: every cycle adds one target token after its
    drafts, so a draft past max_new_tokens could never be kept."""
    return max(0, min(k, left - 1))


@dataclass
class Decoding:
    """One request being decoded: the prompt, the tokens committed so far, the budget and the stop ids."""
    tokenizer: object
    prompt_ids: list[int]
    max_new_tokens: int
    stop: set[int]
    ids: list[int] = field(default_factory=list)  # prompt + committed tokens
    new: list[int] = field(default_factory=list)  # committed tokens only
    counters: Counters = field(default_factory=Counters)
    cycle: int = 0
    # (cycle, stage, perf_counter()) each time a stage of a cycle ends, when a caller asked for them (the
    # cycle timeline, specviz/labs/timeline.py); None: not recorded, one attribute test per stage
    laps: list | None = None

    @classmethod
    def of(cls, model, tokenizer, prompt_ids: list[int], max_new_tokens: int, laps: list | None = None) -> "Decoding":
        return cls(tokenizer, list(prompt_ids), max_new_tokens, eos_ids(model, tokenizer), list(prompt_ids),
                   laps=laps)

    def lap(self, stage: str) -> None:
        """Mark the end of `stage` of this cycle (a no-op unless laps are recorded)."""
        if self.laps is not None:
            self.laps.append((self.cycle, stage, time.perf_counter()))

    @property
    def left(self) -> int:
        """Tokens the budget still allows."""
        return self.max_new_tokens - len(self.new)

    def room(self, k: int) -> int:
        return room(k, self.left)

    def cut(self, emitted: list[int]) -> list[int]:
        """A cycle's tokens within the budget and up to (and including) the first end-of-sequence token."""
        emitted = emitted[:self.left]
        return emitted[:next((j + 1 for j, x in enumerate(emitted) if x in self.stop), len(emitted))]

    def result(self, method: str, **extra) -> Result:
        return Result(method, list(self.prompt_ids), self.new,
                      self.tokenizer.decode(self.new, skip_special_tokens=True), self.counters, **extra)


def record_cycle(counters: Counters, event) -> None:
    """A speculative cycle (chain or tree): drafts, rulings and passes, as Counters.record counts them."""
    counters.record(event)


def record_guesses(counters: Counters, event) -> None:
    """One target pass that emitted event.emitted (all but the last were guesses it confirmed)."""
    counters.target_passes += 1
    counters.tokens += len(event.emitted)
    counters.accepted_per_pass.append(len(event.emitted) - 1)


def record_token(counters: Counters, event) -> None:
    """Plain decoding: one pass, one token."""
    counters.target_passes += 1
    counters.tokens += 1


def run_cycles(d: Decoding, cycle: Callable[[Decoding], tuple[object, list[int]]],
               record: Callable[[Counters, object], None] = record_cycle) -> Generator[object, None, None]:
    """Call `cycle` until the budget is spent or an end-of-sequence token is committed; commit each cycle's
    tokens, count it and yield its event. The caller returns d.result(...) afterwards."""
    while d.left > 0:
        d.lap("start")  # the time the caller spends between cycles is not the cycle's
        event, emitted = cycle(d)
        d.ids += emitted
        d.new += emitted
        record(d.counters, event)
        d.lap("overhead")  # after the cycle's last stage: its trace event, the commit and the counters
        yield event
        d.cycle += 1
        if emitted[-1] in d.stop:
            break


def run_steps(steps):
    """Iterate a step generator to its end; returns (events, result). A full run is just this."""
    events = []
    while True:
        try:
            events.append(next(steps))
        except StopIteration as stop:
            return events, stop.value
