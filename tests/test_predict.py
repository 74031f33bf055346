"""Predict-then-reveal marking on synthetic cycles: no model."""
import pytest

from specviz.practice.predict import mark_cycle, score
from test_figures import cycle



@pytest.mark.fast
def test_greedy_predictions_are_marked_and_wrong_ones_explained():
    c = cycle(k=4)  # one verdict: position 0 rejected (the draft t0 is not the target's top choice x)
    marked = mark_cycle(c, {0: True, 1: False, 2: True})
    assert [m.right for m in marked] == [False, None, None, None]
    assert "not the target's top choice “x”" in marked[0].why
    assert marked[1].actual is None and "not reached" in marked[1].why
    assert score(marked) == (0, 1)
    assert score(mark_cycle(c, {0: False})) == (1, 1)
    assert score(mark_cycle(c, {})) == (0, 0)


@pytest.mark.fast
def test_the_verify_chart_gives_nothing_away_while_predicting():
    from specviz.figures import spec_cycle as F

    bars = next(d for d in F.verify_pass(cycle(k=4), False).to_dict()["data"] if d["name"] == "p(draft token)")
    assert len(set(bars["marker"]["color"])) == 1 and not any("✗" in t or "✓" in t for t in bars["text"])
    assert set(bars["marker"]["opacity"]) == {1}  # nothing faded as "after the first mismatch"


@pytest.mark.fast
def test_sampling_predictions_give_the_odds():
    c = cycle(k=4, mode="sampling")
    m = mark_cycle(c, {0: False})[0]
    assert m.right is True and "u = 0.950" in m.why and "min(1, p/q)" in m.why


def test_predict_then_reveal_on_the_speculative_page():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.toggle(key="sp_predict").set_value(True).run()
    for _ in range(5):  # the 4 drafts, then the verify pass
        at.button(key="spec_step").click().run()
    radios = [r for r in at.radio if r.key and r.key.startswith("sp_pred_")]
    assert len(radios) == 4 and not any("Your predictions" in m.value for m in at.markdown)
    for r in radios:
        r.set_value("accept")
    at.button(key="spec_step").click().run()  # the verdicts: revealed and marked
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Your predictions: 4 of 4 right" in text  # the default cycle 1 accepts all four drafts
    at.button(key="spec_step").click().run()
    assert "this session: 4 of 4" in " ".join(m.value for m in at.markdown)  # counted once


def test_predict_then_reveal_on_the_beam_page():
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/1_Beam_search.py").run()
    at.toggle(key="bm_predict").set_value(True).run()
    at.button(key="beam_step").click().run()
    assert not at.exception
    tree = json.loads(at.get("plotly_chart")[0].proto.spec)
    by = {d.get("name"): d for d in tree["data"]}
    assert by["candidate"]["x"] and not by["kept"]["x"] and not by["pruned"]["x"]  # the step's fate hidden
    assert all("log p" in t for t in by["candidate"]["text"])  # each token's own log p, not the ranked total
    pick = at.multiselect[0]
    step = at.session_state["beam"].replay.current()
    from specviz.figures.beam_tree import by_beam, shown_candidates
    cands = by_beam(shown_candidates(step))
    pick.set_value([o for i, o in enumerate(pick.options) if cands[i].status == "kept"]).run()
    at.button(key="beam_step").click().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert f"Your prediction: {len(cands)} of {len(cands)} candidates right" in text
    assert next(d for d in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if d.get("name") == "kept")["x"]
    at.button(key="beam_step").click().run()  # the next step: Step again without picking
    at.button(key="beam_step").click().run()
    assert not at.exception
    assert any(c.value == "No prediction made for this step." for c in at.caption)


def test_predict_then_reveal_on_the_tree_page():
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/7_Tree_speculation.py").run()
    at.toggle(key="tr_predict").set_value(True).run()
    at.button(key="tree_step").click().run()
    assert not at.exception
    tree = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [d.get("name") for d in tree["data"] if d.get("mode") == "markers+text"][0] == "drafted (verdict hidden)"
    assert not any("accepted path of" in m.value for m in at.markdown)  # the heading keeps the answer back
    cycle = at.session_state["tree"].replay.current()
    at.number_input[0].set_value(cycle.accepted).run()
    at.button(key="tree_step").click().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert f"Your prediction: {cycle.accepted} — ✓ right" in text and "the walk accepted" in text


@pytest.mark.fast
def test_tree_marking_explains_the_path():
    from types import SimpleNamespace as N

    from specviz.practice.predict import mark_tree

    nodes = (N(index=0, text="a", depth=1), N(index=1, text="b", depth=2), N(index=2, text="c", depth=1))
    cycle = N(nodes=nodes, path=(0,), accepted=1, new_text="z", new_origin="correction")
    right, why = mark_tree(cycle, 2)
    assert not right and "accepted 1 (“a”)" in why and "at depth 2 no child passed" in why
    assert mark_tree(cycle, 1)[0]
