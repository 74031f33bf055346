"""Any local pair in the app (issue 39): every page under AppTest on a tiny random Llama pair that shares the
embedded tokenizer, the sidebar's list of the local Hugging Face cache, and each bad pair refused with one line while
the app goes on with the pair it had."""
import os
import pathlib

import pytest
from streamlit.testing.v1 import AppTest

from pairs import copy_folder, cut_short, fake_huge, foreign_architecture, hub_entry, tiny_llama, wrong_shapes
from ui.registry import PAGES

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Folders and a hub cache: org/tiny-target and org/tiny-draft share the embedded tokenizer, org/other-vocab has
    one more token; plus folders that must be refused."""
    import psutil

    from specviz.loading import embedded_path, load_tokenizer

    d = tmp_path_factory.mktemp("pair")
    tok = load_tokenizer(embedded_path())
    target = tiny_llama(d / "tiny-target", tok, hidden=64, layers=2, seed=0)
    draft = tiny_llama(d / "tiny-draft", tok, hidden=32, layers=1, seed=1)
    other_tok = load_tokenizer(embedded_path())
    other_tok.add_tokens(["<specviz-not-shared>"])
    other = tiny_llama(d / "other-vocab", other_tok, hidden=32, layers=1, seed=2)
    hub = d / "hub"
    for hub_id, src in (("org/tiny-target", target), ("org/tiny-draft", draft), ("org/other-vocab", other)):
        hub_entry(hub, hub_id, src)
    old = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(hub)
    yield {"dir": d, "target": target, "draft": draft, "other": other, "hub": hub,
           "cut": cut_short(draft, d / "cut-short"),
           "huge": fake_huge(draft, d / "fake-huge", psutil.virtual_memory().total),  # 4 bytes each: 4x the RAM
           "t5": foreign_architecture(draft, d / "t5-arch", "t5"),
           "shapes": wrong_shapes(draft, d / "wrong-shapes"),
           "copy": copy_folder(target, d / "target-copy")}
    if old is None:
        os.environ.pop("HF_HUB_CACHE", None)
    else:
        os.environ["HF_HUB_CACHE"] = old


def app(page=None, **state):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def in_use(at) -> str:
    """The sidebar's line naming the pair in use, Markdown escapes removed."""
    return next(c.value for c in at.sidebar.caption if c.value.startswith("In use:")).replace("\\", "")


def errors(at) -> list[str]:
    return [e.value.replace("\\", "") for e in at.sidebar.error]


STEP_KEYS = {None: "home_run", "pages/1_Beam_search.py": "beam_step", "pages/2_Speculative_decoding.py": "spec_step",
             "pages/9_Lookahead_decoding.py": "lookahead_step"}


@pytest.mark.parametrize("page", [None] + [p.path for p in PAGES])
def test_every_page_runs_on_a_tiny_local_pair(pair, page):
    at = app(page, s_target=str(pair["target"]), s_draft=str(pair["draft"]))
    assert "tiny-target" in in_use(at) and "tiny-draft" in in_use(at), in_use(at)
    assert not errors(at)
    assert any(c.value.startswith("With this pair") for c in at.sidebar.caption)  # what this page does with it
    if page in STEP_KEYS:  # the engine runs on the pair: two steps, no exception
        for _ in range(1 if page is None else 2):
            at.button(key=STEP_KEYS[page]).click().run()
            assert not at.exception, [e.value for e in at.exception]
        if page is None:  # Home: the three runs, speculative with the best drafter the pair has (its draft model)
            runs = at.session_state["home_runs"][1]
            assert len(runs) == 3
        else:
            assert at.get("plotly_chart")
    if page == "pages/2_Speculative_decoding.py":
        options = at.selectbox(key="sp_drafter").options
        assert str(pair["draft"]) in options and "n-gram lookup" in options
        assert not any(o.startswith("feature draft") for o in options)  # not offered: trained for the embedded target
        assert any("embedded target only" in i.value for i in at.info)
    if page == "pages/7_Tree_speculation.py":  # nothing to show: says why and stops, no traceback
        assert any("needs the embedded target" in w.value for w in at.warning)
        assert not at.get("plotly_chart")


def test_the_sidebar_lists_the_local_cache_with_sizes_and_tokenizer_match(pair):
    at = app("pages/1_Beam_search.py")
    targets = at.selectbox(key="w_target_pick")
    text = " ".join(targets.options)  # as the learner reads them
    for hub_id in ("org/tiny-target", "org/tiny-draft", "org/other-vocab"):
        assert hub_id in text
    assert "params" in text
    targets.set_value("org/tiny-target").run()
    assert not at.exception and "org/tiny-target" in in_use(at)
    drafts = " ".join(at.selectbox(key="w_draft_pick").options)
    assert "org/tiny-draft" in drafts and "same tokenizer" in drafts
    assert "org/other-vocab" not in drafts  # a different tokenizer: not offered, and said so
    assert any("Not offered as a draft" in c.value and "other-vocab" in c.value.replace("\\", "")
               for c in at.sidebar.caption)
    at.selectbox(key="w_draft_pick").set_value("org/tiny-draft").run()
    assert not at.exception and "org/tiny-draft" in in_use(at)
    at.button(key="beam_step").click().run()
    assert not at.exception and at.get("plotly_chart")


@pytest.mark.parametrize("role, name, needle", [
    ("s_draft", "other", "different tokenizer"),
    ("s_draft", "cut", "cut short"),
    ("s_draft", "huge", "GiB"),
    ("s_draft", "t5", "not a causal language model"),
    ("s_target", "t5", "not a causal language model"),
    ("s_target", "/no/such/folder", "No model folder"),
    ("s_target", "no-such-org/no-such-model", "not available offline"),
])
def test_a_bad_pair_is_one_line_and_the_app_goes_on_with_the_pair_it_had(pair, role, name, needle):
    at = app("pages/2_Speculative_decoding.py", s_target=str(pair["target"]))
    assert "tiny-target" in in_use(at)
    at.session_state[role] = str(pair.get(name, name))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = errors(at)
    assert needle in error and "Still using" in error and "\n" not in error and "Traceback" not in error
    assert len(error) < 400
    assert "tiny-target" in in_use(at)  # the pair before it, still in use
    at.button(key="spec_step").click().run()
    assert not at.exception and at.get("plotly_chart")
    at.session_state[role] = ""  # cleared: that part of the pair goes back to its default, no message
    at.run()
    assert not at.exception and not errors(at)


def test_weights_transformers_refuses_to_load_fall_back_after_the_attempt(pair):
    """Intact files whose shapes contradict config.json pass the checks; transformers refuses at load: the page runs
    again on the pair before, with the reason."""
    at = app("pages/1_Beam_search.py", s_target=str(pair["target"]))
    at.session_state["s_draft"] = str(pair["shapes"])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = errors(at)
    assert "do not fit its config.json" in error and "Still using" in error
    assert "tiny-target" in in_use(at) and "wrong-shapes" not in in_use(at)
    assert at.button(key="beam_step")


def test_a_link_carries_the_pair(pair):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["target"] = str(pair["copy"])
    at.query_params["draft"] = "org/tiny-draft"
    at.run()
    at.switch_page("pages/9_Lookahead_decoding.py").run()
    assert not at.exception and "target-copy" in in_use(at) and "org/tiny-draft" in in_use(at)
    at.button(key="lookahead_step").click().run()
    assert at.query_params["target"] == [str(pair["copy"])] or at.query_params["target"] == str(pair["copy"])
    # a link to a pair that cannot be used opens on the embedded pair, with the reason
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["target"] = str(pair["cut"])
    at.run()
    assert not at.exception and "embedded" in in_use(at)
    assert any("cut short" in e for e in errors(at))


def test_a_bad_dtype_setting_is_one_line_on_the_page_and_the_sidebar_still_lists_the_cache(pair, monkeypatch):
    """SPECVIZ_DTYPE=fp16 (not a choice): the page that loads the models says so in one line, never a traceback, and
    the sidebar's list of the local cache still draws (its fit check falls back to fp32)."""
    from ui.sidebar import load_pair, loaded

    load_pair.clear()  # models an earlier test loaded stay cached in this process and would never meet the setting
    loaded().clear()
    monkeypatch.setenv("SPECVIZ_DTYPE", "fp16")
    at = app("pages/1_Beam_search.py")
    assert not at.exception
    assert any("SPECVIZ" in e.value and "fp32 or bf16" in e.value for e in at.error)
    assert "org/tiny-target" in " ".join(at.selectbox(key="w_target_pick").options)
