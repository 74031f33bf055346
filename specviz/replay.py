"""A cursor over a step generator's trace, for the pages: Step computes the next event only when the
cursor walks past what was recorded; Back and any revisit replay the recorded trace, never recompute.

Each cursor position is (event index, phase): a page that animates an event in several phases (the
speculative page shows draft, verify, decide, resolve, cache) gives `phases` > 1.

The trace itself is a `Recording`, which several cursors may share: the same prompt and settings give the
same trace (every run is deterministic given its settings and seed), so a server computes it once and every
browser session walks it with its own `Replay`. A Recording only ever grows (append-only, under a lock), so
a cursor reading it never sees another session's position, only events that are the same for everyone.

`Ahead` records the event after next in the background while the learner reads the screen, so the Step
that starts a new cycle finds it computed and only draws.
"""
from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict


class Recording:
    """The events a step generator has yielded so far, and its return value once exhausted. Thread-safe:
    two sessions stepping the same recording compute each event once."""

    def __init__(self, steps):
        self.steps = steps
        self.events: list = []
        self.result = None  # the generator's return value once exhausted
        self.error: Exception | None = None  # what the generator raised, raised again to every later reader
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
                except Exception as e:  # a generator that raised is dead: keep the reason for whoever asks next
                    # without its traceback, whose frames would keep the dead generator's KV caches alive
                    self.error, self.steps = e.with_traceback(None), None
            if self.error is not None and len(self.events) < n:
                # also when the background worker met it first: the page shows it (each reader's frames only)
                raise self.error.with_traceback(None)
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
        """One phase forward (or to the start of the next event). False when nothing is left. whole_event: the
        next whole event; from part-way through an event, the rest of that event first (its later phases, the
        verdicts of a speculative cycle, would otherwise never be shown)."""
        if self.event >= 0 and self.phase < self.phases - 1:
            self.phase = self.phases - 1 if whole_event else self.phase + 1
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
        self._look_ahead(self.event + 2)
        return True

    def _look_ahead(self, n: int) -> None:
        """Record n events if the run has them. A failure here is a later event's: the Recording keeps it and
        raises it to the Step that needs that event, so the events before it can still be stepped through."""
        try:
            self.recording.fetch_until(n)
        except Exception:
            pass

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
        """To the last event (the last one recorded when the run fails on the way, then its error)."""
        try:
            self.recording.fetch_until(limit)
        finally:
            self.event = len(self.events) - 1
            self.phase = self.phases - 1 if self.event >= 0 else 0

    def seek(self, event: int, phase: int = 0) -> None:
        """Walk to (event, phase), clamped to what the run has: a shared link reopens the same screen."""
        self.event, self.phase = -1, 0
        if event < 0:
            return
        self._look_ahead(event + 2)
        self.event = min(event, len(self.events) - 1)
        if self.event >= 0:
            self.phase = max(0, min(phase, self.phases - 1))
        if self.event < event:  # the run ended or failed before the event asked for: a failure is said
            self.recording.fetch_until(event + 1)

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


class Ahead:
    """One low-priority worker thread per process that records events before a cursor asks for them.

    Why: on a 2-core machine the Step that starts a new speculative cycle pays a whole cycle of engine work
    (~0.1 s: K draft passes and one verify pass), every other Step only draws. Computing the cycle after next
    while the learner reads moves that work off the click. Why low priority (nice): the browser drawing the
    Step just taken often runs on the same cores (a laptop, or a test); the OS gives the worker the cores
    when the page's own work leaves them idle. A Step that arrives first computes the event itself, or waits
    for the worker's event in progress (Recording.fetch_until is under a lock: each event is computed once).
    Nice does not order locks or the GIL: while the worker holds one, a Step waits for it whatever its
    priority (one event at most).

    One wish per key (a session's page): a newer request replaces an older one, so a learner who changes a
    setting does not leave stale work queued."""

    def __init__(self, nice: int = 10):
        self.nice = nice
        self._wanted: OrderedDict = OrderedDict()  # key -> (recording, n)
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def request(self, key, recording: Recording, n: int) -> None:
        """Have `recording` hold at least n events soon (nothing to do when it does or has ended)."""
        if recording.finished or recording.error is not None or len(recording.events) >= n:
            return
        with self._ready:
            self._wanted.pop(key, None)
            self._wanted[key] = (recording, n)
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(target=self._run, name="specviz-ahead", daemon=True)
                self._thread.start()
                atexit.register(self.stop)
            self._ready.notify()

    def idle(self) -> bool:
        """True when no request is waiting (one may still be computing)."""
        with self._ready:
            return not self._wanted

    def _run(self) -> None:
        try:  # this thread only (Linux: a thread's nice is its own, inherited by the threads it starts)
            me = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + self.nice))
        except (AttributeError, OSError):  # not Linux, or not allowed: run at normal priority
            pass
        while True:
            with self._ready:
                while not self._wanted and not self._stopping:
                    self._ready.wait()
                if self._stopping:
                    return
                _, (recording, n) = self._wanted.popitem(last=False)
            try:  # one event at a time, so that stop() waits for one event at most
                while not self._stopping and recording.steps is not None and len(recording.events) < n:
                    recording.fetch_until(len(recording.events) + 1)
            except Exception:  # kept in recording.error; the cursor that reaches it raises it on the page
                pass
            recording = None  # an abandoned recording (and its KV caches) is not kept alive by the worker

    def stop(self, timeout: float = 60.0) -> None:
        """Finish the event being computed and end the worker (at exit: a thread still inside PyTorch while
        the interpreter shuts down aborts the process, "terminate called without an active exception")."""
        with self._ready:
            self._stopping = True
            self._wanted.clear()
            self._ready.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
