"""A cursor over a step generator's trace, for the pages: Step computes the next event only when the
cursor walks past what was recorded; Back and any revisit replay the recorded trace, never recompute.

Each cursor position is (event index, phase): a page that animates an event in several phases (the
speculative page shows draft, verify, decide, resolve, cache) gives `phases` > 1.
"""
from __future__ import annotations


class Replay:
    def __init__(self, steps, phases=1):
        """phases: an int, or a function event -> number of phases of that event."""
        self.steps = steps
        self._phases = phases if callable(phases) else (lambda event, n=phases: n)
        self.events: list = []
        self.result = None  # the generator's return value once exhausted
        self.event = -1  # -1: nothing shown yet
        self.phase = 0

    @property
    def phases(self) -> int:
        return self._phases(self.events[self.event]) if self.event >= 0 else 1

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def at_end(self) -> bool:
        return self.finished and self.event == len(self.events) - 1 and self.phase == self.phases - 1

    def _fetch(self) -> bool:
        """Record one more event; False when the generator is exhausted."""
        if self.finished:
            return False
        try:
            self.events.append(next(self.steps))
            return True
        except StopIteration as stop:
            self.result = stop.value
            self.steps = None  # drop the generator (and the KV caches it holds)
            return False

    def forward(self, whole_event: bool = False) -> bool:
        """One phase forward (or to the start of the next event). False when nothing is left."""
        if self.event >= 0 and not whole_event and self.phase < self.phases - 1:
            self.phase += 1
            return True
        if self.event + 1 >= len(self.events) and not self._fetch():
            if self.event >= 0 and self.phase < self.phases - 1:  # show the last event completely
                self.phase = self.phases - 1
                return True
            return False
        self.event += 1
        self.phase = 0
        if whole_event:
            self.phase = self.phases - 1
        if self.event == len(self.events) - 1:
            # compute one event ahead: the page then knows at once when the run has ended (a dead
            # "Step" button would be a lie), and the next Step has nothing to compute
            self._fetch()
        return True

    def back(self) -> bool:
        if self.event < 0:
            return False
        if self.phase > 0:
            self.phase -= 1
        else:
            self.event -= 1
            self.phase = self.phases - 1 if self.event >= 0 else 0
        return True

    def to_end(self, limit: int = 10_000) -> None:
        while not self.finished and len(self.events) < limit:
            self._fetch()
        self.event = len(self.events) - 1
        self.phase = self.phases - 1

    def current(self):
        return self.events[self.event] if self.event >= 0 else None

    def shown(self) -> list:
        """Events fully or partly on screen, oldest first."""
        return self.events[: self.event + 1]
