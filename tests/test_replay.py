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


def test_phases_per_event_and_to_end():
    r = Replay(counting(4, []), phases=lambda e: e + 1)
    r.to_end()
    assert r.event == 3 and r.phase == 3 and r.at_end
    r.back()
    assert (r.event, r.phase) == (3, 2)


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
