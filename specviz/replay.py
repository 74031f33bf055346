"""A cursor over a step generator's trace, for the pages: Step computes the next event only when the
cursor walks past what was recorded; Back and any revisit replay the recorded trace, never recompute.

Each cursor position is (event index, phase): a page that animates an event in several phases (the
speculative page shows draft, verify, decide, resolve, cache) gives `phases` > 1.

The trace itself is a `Recording`, which several cursors may share: the same prompt and settings give the
same trace (every run is deterministic given its settings and seed), so a server computes it once and every
browser session walks it with its own `Replay`. A Recording only ever grows (append-only, under a lock), so
a cursor reading it never sees another session's position, only events that are the same for everyone.
"""
from __future__ import annotations

import threading


class Recording:
    """The events a step generator has yielded so far, and its return value once exhausted. Thread-safe:
    two sessions stepping the same recording compute each event once."""

    def __init__(self, steps):
        self.steps = steps
        self.events: list = []
        self.result = None  # the generator's return value once exhausted
        self._lock = threading.Lock()

    @property
    def finished(self) -> bool:
        return self.result is not None

    def fetch_until(self, n: int) -> bool:
        """Record events until there are at least n (or the generator ends); True when event n-1 exists."""
        if len(self.events) >= n:
            return True
        with self._lock:
            while len(self.events) < n and self.steps is not None:
                try:
                    self.events.append(next(self.steps))
                except StopIteration as stop:
                    self.result = stop.value
                    self.steps = None  # drop the generator (and the KV caches it holds)
            return len(self.events) >= n


class Replay:
    def __init__(self, steps, phases=1):
        """steps: a step generator, or a Recording shared with other cursors. phases: an int, or a
        function event -> number of phases of that event."""
        self.recording = steps if isinstance(steps, Recording) else Recording(steps)
        self._phases = phases if callable(phases) else (lambda event, n=phases: n)
        self.event = -1  # -1: nothing shown yet
        self.phase = 0

    @property
    def events(self) -> list:
        return self.recording.events

    @property
    def result(self):
        return self.recording.result

    @property
    def phases(self) -> int:
        return self._phases(self.events[self.event]) if self.event >= 0 else 1

    @property
    def finished(self) -> bool:
        return self.recording.finished

    @property
    def at_end(self) -> bool:
        return self.finished and self.event == len(self.events) - 1 and self.phase == self.phases - 1

    def forward(self, whole_event: bool = False) -> bool:
        """One phase forward (or to the start of the next event). False when nothing is left."""
        if self.event >= 0 and not whole_event and self.phase < self.phases - 1:
            self.phase += 1
            return True
        # compute one event ahead: the page then knows at once when the run has ended (a dead "Step"
        # button would be a lie), and the next Step has nothing to compute
        if not self.recording.fetch_until(self.event + 2):
            if self.event >= 0 and self.phase < self.phases - 1:  # show the last event completely
                self.phase = self.phases - 1
                return True
            return False
        self.event += 1
        self.phase = self.phases - 1 if whole_event else 0
        self.recording.fetch_until(self.event + 2)
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
        self.recording.fetch_until(limit)
        self.event = len(self.events) - 1
        self.phase = self.phases - 1 if self.event >= 0 else 0

    def seek(self, event: int, phase: int = 0) -> None:
        """Walk to (event, phase), clamped to what the run has: a shared link reopens the same screen."""
        self.event, self.phase = -1, 0
        if event < 0:
            return
        self.recording.fetch_until(event + 2)
        self.event = min(event, len(self.events) - 1)
        if self.event >= 0:
            self.phase = max(0, min(phase, self.phases - 1))

    def position(self) -> str:
        """The cursor as a URL value: "3.2" is event 3, phase 2 (both counted from 1); "" before any step."""
        if self.event < 0:
            return ""
        return f"{self.event + 1}.{self.phase + 1}" if self.phases > 1 or self.phase else f"{self.event + 1}"

    @staticmethod
    def parse_position(text: str) -> tuple[int, int] | None:
        """The inverse of position(): (event, phase) counted from 0, or None when malformed."""
        try:
            parts = [int(p) for p in str(text).strip().split(".")]
        except ValueError:
            return None
        if not 1 <= len(parts) <= 2 or parts[0] < 1 or (len(parts) == 2 and parts[1] < 1):
            return None
        return parts[0] - 1, (parts[1] - 1 if len(parts) == 2 else 0)

    def current(self):
        return self.events[self.event] if self.event >= 0 else None

    def shown(self) -> list:
        """Events fully or partly on screen, oldest first."""
        return self.events[: self.event + 1]
