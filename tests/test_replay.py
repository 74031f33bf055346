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
