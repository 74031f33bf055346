"""The page cursor: Back replays without recomputing; the end is known as soon as it is shown."""
import pytest

from specviz.replay import Replay

pytestmark = pytest.mark.fast


def counting(n, calls):
    for i in range(n):
        calls.append(i)
        yield i
    return "done"


def test_back_replays_and_end_is_known_at_the_last_event():
    calls = []
    r = Replay(counting(3, calls), phases=2)
    assert r.current() is None and not r.at_end
    r.forward()
    assert (r.event, r.phase, r.current()) == (0, 0, 0)
    r.forward()
    assert (r.event, r.phase) == (0, 1)
    r.forward(whole_event=True)
    r.forward(whole_event=True)
    assert r.current() == 2 and r.at_end and r.result == "done"  # no dead Step at the end
    assert not r.forward()
    made = list(calls)
    r.back()
    r.back()
    r.back()
    assert (r.event, r.phase) == (1, 0)
    r.forward()
    r.forward()
    assert calls == made  # going back and forth replays the record: nothing recomputed



def fails_at(n):
    for i in range(n):
        yield i
    raise ValueError(f"event {n} failed")


def test_a_failing_event_is_reported_by_the_step_that_needs_it_not_before():
    """The cursor records one event ahead (the end is known at once): a run failing at event 2 still shows
    events 0 and 1 completely, then every Step past them reports the failure and leaves the cursor where it was."""
    r = Replay(fails_at(2), phases=2)
    r.forward()
    r.forward()
    r.forward()
    r.forward()
    assert (r.event, r.phase) == (1, 1) and not r.at_end  # event 2 was looked ahead for, and failed, silently
    for _ in range(2):
        with pytest.raises(ValueError, match="event 2 failed"):
            r.forward()
        assert (r.event, r.phase) == (1, 1)
    r = Replay(fails_at(2), phases=2)
    with pytest.raises(ValueError, match="event 2 failed"):
        r.to_end()
    assert (r.event, r.phase) == (1, 1)  # Run to end stops at the last event the run has
    r = Replay(fails_at(2), phases=2)
    r.seek(1, 1)  # a link to the last good event opens it
    assert (r.event, r.phase) == (1, 1)
    r = Replay(fails_at(2), phases=2)
    with pytest.raises(ValueError, match="event 2 failed"):
        r.seek(4)  # a link past the failure: the last good event, and why it stops there
    assert r.event == 1

def test_phases_per_event_and_to_end():
    r = Replay(counting(4, []), phases=lambda e: e + 1)
    r.to_end()
    assert r.event == 3 and r.phase == 3 and r.at_end
    r.back()
    assert (r.event, r.phase) == (3, 2)


def test_a_whole_step_from_part_way_finishes_the_event_first():
    """"Next cycle" pressed at a cycle's first stage shows the rest of THAT cycle (its verdicts), not the next
    cycle's last stage."""
    r = Replay(counting(4, []), phases=3)
    r.forward()
    assert (r.event, r.phase) == (0, 0)
    r.forward(whole_event=True)
    assert (r.event, r.phase) == (0, 2)  # the rest of event 0
    r.forward(whole_event=True)
    assert (r.event, r.phase) == (1, 2)  # then a whole event at a time


def test_position_round_trips_and_seek_clamps():
    r = Replay(counting(4, []), phases=3)
    assert r.position() == ""
    r.forward(whole_event=True)
    r.forward()
    assert r.position() == "2.1" and Replay.parse_position("2.1") == (1, 0)
    other = Replay(r.recording, phases=3)
    other.seek(*Replay.parse_position(r.position()))
    assert (other.event, other.phase) == (r.event, r.phase)
    other.seek(99, 99)  # past the end: the last event, completely shown
    assert other.at_end and (other.event, other.phase) == (3, 2)
    assert (r.event, r.phase) == (1, 0)  # cursors are independent over one recording
    for bad in ("", "x", "0", "1.0", "1.2.3", "-1"):
        assert Replay.parse_position(bad) is None
    assert Replay(counting(2, []), phases=1).position() == ""


def test_a_shared_recording_computes_each_event_once():
    from specviz.replay import Recording

    calls = []
    rec = Recording(counting(3, calls))
    a, b = Replay(rec), Replay(rec)
    a.to_end()
    b.forward()
    b.forward()
    assert calls == [0, 1, 2] and b.current() == 1 and a.at_end


def wait_for(cond, timeout=10.0):
    import time

    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "the background worker did not get there"
        time.sleep(0.01)


def test_ahead_records_in_the_background_at_low_priority_and_no_further_than_asked():
    import os
    import sys
    import threading

    from specviz.replay import Ahead, Recording

    where = []

    def steps(calls):
        for i in range(10):
            calls.append(i)
            where.append((threading.current_thread().name,
                          os.getpriority(os.PRIO_PROCESS, 0) if sys.platform == "linux" else None))
            yield i

    calls = []
    rec = Recording(steps(calls))
    cursor = Replay(rec)
    cursor.forward()  # the page: event 0 shown, event 1 recorded by the Step itself
    assert calls == [0, 1]
    ahead = Ahead(nice=7)
    ahead.request("session", rec, cursor.event + 3)
    wait_for(lambda: len(rec.events) >= 3)
    wait_for(ahead.idle)
    assert calls == [0, 1, 2]  # one more, not the rest of the run
    assert where[2][0] == "specviz-ahead"
    if sys.platform == "linux":
        assert where[2][1] >= min(19, where[0][1] + 7)  # nice is per thread on Linux: only the worker's
        assert os.getpriority(os.PRIO_PROCESS, 0) == where[0][1]
    cursor.forward()  # the Step that needs event 2 computes nothing
    assert calls == [0, 1, 2] and cursor.current() == 1
    ahead.request("session", rec, 2)  # already there: nothing queued
    assert ahead.idle()


def test_ahead_keeps_one_wish_per_session_and_passes_errors_to_the_page():
    import threading

    from specviz.errors import SpecVizError
    from specviz.replay import Ahead, Recording

    gate, inside = threading.Event(), threading.Event()

    def blocked():
        inside.set()
        gate.wait(10)
        yield 0

    def failing():
        yield 0
        raise SpecVizError("the model ran out of memory")

    ahead = Ahead()
    ahead.request("other", Recording(blocked()), 1)
    wait_for(inside.is_set)  # the worker is busy: the next two requests wait in its queue
    stale, fresh = Recording(counting(5, [])), Recording(failing())
    ahead.request("session", stale, 2)
    ahead.request("session", fresh, 3)  # the same session changed a setting: the old wish goes
    gate.set()
    wait_for(lambda: fresh.error is not None)
    wait_for(ahead.idle)
    assert stale.events == []
    assert fresh.events == [0] and fresh.fetch_until(1)  # what was recorded stays readable
    with pytest.raises(SpecVizError, match="out of memory"):  # the Step that reaches the failure shows it
        fresh.fetch_until(2)
    with pytest.raises(SpecVizError):
        Replay(fresh).to_end()


def test_the_process_exits_cleanly_while_the_worker_computes():
    """A worker thread still inside PyTorch when the interpreter shuts down aborts the process ("terminate
    called without an active exception", exit 134: it failed a test run once). Ahead.stop runs at exit."""
    import subprocess
    import sys
    from pathlib import Path

    script = """
import threading, torch
from specviz.replay import Ahead, Recording
started = threading.Event()
def steps():
    a = torch.randn(600, 600)
    for i in range(1000):
        started.set()
        for _ in range(20):
            a = torch.tanh(a @ a)
        yield i
Ahead().request("s", Recording(steps()), 1000)
started.wait(30)
"""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
