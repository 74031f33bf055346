"""Issue 35's learner walk: inputs and texts a learner met in the browser that crashed or read wrong."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def page(name):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page(f"pages/{name}.py")
    return at


def test_a_5000_character_model_name_is_a_message_not_a_crash():
    """It raised OSError "File name too long" and left the status box at "Loading models…"."""
    from specviz.errors import SpecVizError
    from specviz.loading import resolve_local

    for name in ("a" * 5000, "x/" * 3000, "/" + "b" * 300):
        with pytest.raises(SpecVizError) as e:
            resolve_local(name)
        assert len(str(e.value)) < 300  # one line, not the name again in full
    at = page("2_Speculative_decoding")
    at.session_state["s_target"] = "m" * 5000
    at.run()
    assert not at.exception and any("limit" in e.value for e in at.error)
    at.text_input(key="w_target").set_value("").run()  # the learner clears the box: the app works again
    assert not at.exception and at.button(key="spec_step")


def test_output_chips_decode_emoji_and_cjk_as_a_whole(embedded):
    """Each byte token decoded alone is U+FFFD: the chips read "�������" while the text was "世界 😀"."""
    from specviz.figures.spec_cycle import token_chips
    from specviz.tokens import output_pieces

    tok = embedded[1]
    text = "Hello 世界 😀 naïve"
    ids = tok(text)["input_ids"]
    pieces = output_pieces(tok, ids)
    assert "".join(pieces) == tok.decode(ids) and "\ufffd" not in "".join(pieces)
    assert "世" in pieces and any("😀" in p for p in pieces)
    html = token_chips([(p, "accepted", t) for p, t in zip(pieces, ids)])
    assert "\ufffd" not in html and "😀" in html
    # a character cut off at the end of the output keeps its bytes, as the charts label them
    assert output_pieces(tok, tok("😀")["input_ids"][:1])[0].startswith("<0x")


@pytest.mark.parametrize("B,max_new", [(4, 12), (8, 40)])
def test_the_beam_tree_highlights_the_winning_path(models, B, max_new):
    """B = 8 / 40 tokens: the winning path was not highlighted. It is drawn from the prompt through one node per
    step, ending on the best finished hypothesis' star."""
    from specviz.engine.beam import beam_steps
    from specviz.figures.beam_tree import beam_tree
    from specviz.prompting import prompt_ids

    ids = prompt_ids(models.tokenizer, "What is 2+2?")
    steps = list(beam_steps(models.target, models.tokenizer, ids, B, max_new, 1.0, 6))
    best = steps[-1].finished[0]
    fig = beam_tree(steps).to_dict()
    path = next(d for d in fig["data"] if d.get("name") == "best finished path")
    assert path["x"] == list(range(len(best.tokens) + 1))
    nodes = {(x, y) for d in fig["data"] if d.get("name") in ("kept", "finished") for x, y in zip(d["x"], d["y"])}
    stars = next(d for d in fig["data"] if d.get("name") == "finished")
    assert all((x, y) in nodes for x, y in zip(path["x"][1:], path["y"][1:]))
    assert (path["x"][-1], path["y"][-1]) in set(zip(stars["x"], stars["y"]))  # it ends on a star


def test_the_qa_page_keeps_its_mode_topics_and_half_written_answer_across_pages():
    at = page("6_Interview_QA")
    at.run()
    at.radio(key="qa_mode").set_value("Quiz").run()
    box = next(t for t in at.text_area if t.key.startswith("qa_mine_"))
    box.set_value("the residual is normalize(max(0, p - q))").run()
    at.switch_page("pages/1_Beam_search.py").run()
    at.switch_page("pages/6_Interview_QA.py").run()
    assert not at.exception
    assert at.radio(key="qa_mode").value == "Quiz"
    assert at.text_area(key=box.key).value == "the residual is normalize(max(0, p - q))"
