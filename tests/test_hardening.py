"""Bad input gets one clear line (CLI exit 2) or a message in the page — never a traceback."""
import json
from pathlib import Path

import pytest
import torch

from specviz.__main__ import main
from specviz.errors import SpecVizError
from specviz.loading import load_models, load_model, pick_device

ROOT = Path(__file__).resolve().parent.parent
HTML = "<img src=x onerror=alert(1)> <script>alert(2)</script>"


def cli(capsys, *args):
    code = main(["decode", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, needle", [
    (["--prompt", ""], "empty"),
    (["--prompt", "   \n\t "], "empty"),
    (["--prompt", "x" * 100_000], "limit"),
    (["--prompt", "hi", "--method", "speculative", "--k", "0"], "--k"),
    (["--prompt", "hi", "--method", "beam", "--num-beams", "0"], "--num-beams"),
    (["--prompt", "hi", "--temperature", "-1"], "Temperature"),
    (["--prompt", "hi", "--top-p", "0"], "top-p"),
    (["--prompt", "hi", "--top-p", "1.5"], "top-p"),
    (["--prompt", "hi", "--max-new-tokens", "0"], "--max-new-tokens"),
    (["--prompt", "hi", "--target", "no-such-org/no-such-model"], "not available"),
    (["--prompt", "hi", "--target", "/no/such/folder"], "No model folder"),
    (["--prompt", "hi", "--device", "cuda"] if not torch.cuda.is_available() else ["--prompt", ""],
     "cuda" if not torch.cuda.is_available() else "empty"),
])
def test_cli_bad_input_is_one_clear_line(capsys, args, needle):
    code, out, err = cli(capsys, *args)
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert "Traceback" not in err and len(errors) == 1
    assert needle.lower() in errors[0].lower()


def test_cli_prompt_longer_than_context(capsys):
    code, _, err = cli(capsys, "--prompt", "1 " * 9500, "--max-new-tokens", "8")  # ~9500 tokens > 8192
    assert code == 2 and "context" in err


def test_cli_speculative_json_equals_greedy(capsys):
    code, out, _ = cli(capsys, "--method", "speculative", "--chat", "--prompt", "Explain beam search", "--json",
                       "--max-new-tokens", "24")
    spec = json.loads(out)
    code2, out2, _ = cli(capsys, "--method", "greedy", "--chat", "--prompt", "Explain beam search", "--json",
                         "--max-new-tokens", "24")
    greedy = json.loads(out2)
    assert code == code2 == 0
    assert spec["token_ids"] == greedy["token_ids"] and len(spec["token_ids"]) == 24
    assert spec["target_passes"] <= greedy["target_passes"]
    # every verify pass emits its accepted drafts + one target token
    assert sum(spec["accepted_per_pass"]) + len(spec["accepted_per_pass"]) == len(spec["token_ids"])
    assert spec["target_passes"] - len(spec["accepted_per_pass"]) in (0, 1)  # 1: the feature draft's prefill


def test_cli_medusa_tree_with_typical_and_choices(capsys):
    """--tree medusa --typical: under greedy Medusa verifies by exact match, so the output is plain greedy's (the
    typical rule with the T = 1 softmax left greedy at token 7 on this prompt); --medusa-choices sets the tree,
    listed in any order; under sampling the rule runs and is named."""
    prompt = "Explain why the sky is blue in two sentences."
    base = ["--method", "speculative", "--tree", "medusa", "--chat", "--prompt", prompt,
            "--json", "--max-new-tokens", "24"]
    code, out, _ = cli(capsys, *base, "--typical", "0.09,0.3", "--medusa-choices", "[(0, 0), (1,), (0,)]")
    tree = json.loads(out)
    code2, out2, _ = cli(capsys, "--method", "greedy", "--chat", "--prompt", prompt, "--json", "--max-new-tokens", "24")
    assert code == code2 == 0 and tree["token_ids"] == json.loads(out2)["token_ids"]
    assert tree["medusa_choices"] == [[0, 0], [1], [0]] and tree["verify_mode"] == "greedy"
    code, out, _ = cli(capsys, *base, "--typical", "0.09,0.3", "--temperature", "1")
    assert code == 0 and json.loads(out)["verify_mode"] == "typical" and json.loads(out)["typical"] == [0.09, 0.3]
    deep = "[(0,), (0, 0), (0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0, 0)]"  # deeper than the shipped heads
    code, _, err = cli(capsys, *base, "--medusa-choices", deep)
    assert code == 2 and "heads" in err and "Traceback" not in err


def test_cli_extreme_but_valid_settings(capsys):
    code, out, _ = cli(capsys, "--method", "sample", "--prompt", "The capital of France is", "--temperature", "1e-6",
                       "--json", "--max-new-tokens", "6")
    tiny_t = json.loads(out)
    _, out, _ = cli(capsys, "--method", "greedy", "--prompt", "The capital of France is",
                    "--json", "--max-new-tokens", "6")
    assert code == 0 and tiny_t["token_ids"] == json.loads(out)["token_ids"]  # T -> 0 is greedy
    code, out, _ = cli(capsys, "--method", "sample", "--prompt", "Hello", "--top-p", "1e-9", "--json",
                       "--max-new-tokens", "4", "--num-samples", "3")
    samples = json.loads(out)["samples"]
    assert code == 0 and samples[0] == samples[1] == samples[2]  # top-p -> 0 keeps only the top token
    code, out, _ = cli(capsys, "--method", "beam", "--prompt", "Hello", "--num-beams", "2", "--json",
                       "--max-new-tokens", "4")
    assert code == 0 and json.loads(out)["score"] is not None


def test_cli_many_scripts_emoji_control_chars_and_html(capsys):
    prompt = "Привет 你好 مرحبا नमस्ते 🙂🚀 \x00\x07\x1b[31m " + HTML
    code, out, _ = cli(capsys, "--prompt", prompt, "--json", "--max-new-tokens", "4")
    assert code == 0 and len(json.loads(out)["token_ids"]) == 4


@pytest.fixture(scope="module")
def foreign_model(tmp_path_factory):
    """A tiny model with its own 5-word tokenizer: a pair with it must be refused."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("foreign")
    t = Tokenizer(WordLevel({"[UNK]": 0, "a": 1, "b": 2, "c": 3, "d": 4}, unk_token="[UNK]"))
    t.pre_tokenizer = Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]").save_pretrained(d)
    cfg = LlamaConfig(vocab_size=5, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=1, max_position_embeddings=64)
    LlamaForCausalLM(cfg).save_pretrained(d, safe_serialization=True)
    return d


def test_mismatched_tokenizers_are_refused(foreign_model, capsys):
    with pytest.raises(SpecVizError, match="different tokenizer"):
        load_models(None, str(foreign_model))
    code, _, err = cli(capsys, "--method", "speculative", "--prompt", "hi", "--draft", str(foreign_model))
    assert code == 2 and "different tokenizer" in err


def test_pickle_checkpoints_are_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"not really a pickle")
    with pytest.raises(SpecVizError, match="pickle"):
        load_model(tmp_path, pick_device("cpu"))


def test_too_big_model_is_refused_before_loading(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "dtype": "float32"}))
    with open(tmp_path / "model.safetensors", "wb") as f:  # sparse: 2 TB on paper, nothing on disk
        f.truncate(2 * 2**40)
    with pytest.raises(SpecVizError, match="GiB"):
        load_model(tmp_path, pick_device("cpu"))


@pytest.mark.fast  # model-free
def test_trust_remote_code_is_never_enabled():
    for path in (ROOT / "specviz").rglob("*.py"):
        assert "trust_remote_code=True" not in path.read_text(), path


def test_readme_app_command_binds_loopback_with_xsrf_on():
    make = (ROOT / "Makefile").read_text()
    assert "--server.address 127.0.0.1" in make and "enableXsrfProtection false" not in make
    assert "make app" in (ROOT / "README.md").read_text()


# ---------------------------------------------------------------- the pages
from streamlit.testing.v1 import AppTest  # noqa: E402


def page(name):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page(f"pages/{name}.py")
    return at


def set_prompt(at, text):
    at.session_state["s_choice"] = "Your own prompt"
    at.session_state["s_prompt"] = text


def test_html_prompt_is_shown_as_text_everywhere():
    at = page("2_Speculative_decoding")
    set_prompt(at, HTML + " Repeat this exactly: " + HTML)
    at.session_state["sp_drafter"] = "n-gram lookup"
    at.run()
    for _ in range(3):
        at.button(key="spec_whole").click().run()
    assert not at.exception
    html = " ".join(m.value for m in at.markdown)
    assert "<img src=x" not in html and "<script>" not in html  # never raw
    for el in at.get("plotly_chart"):
        assert "<img src=x" not in el.proto.spec and "<script>" not in el.proto.spec


def test_empty_and_whitespace_prompts_get_a_message():
    for text in ("", "   \n  "):
        at = page("2_Speculative_decoding")
        set_prompt(at, text)
        at.run()
        assert not at.exception
        assert any("empty" in w.value for w in at.warning)


def test_huge_prompt_is_refused_quickly():
    at = page("1_Beam_search")
    set_prompt(at, "x" * 100_000)
    at.run()
    assert not at.exception and any("limit" in w.value for w in at.warning)


def test_out_of_range_url_and_session_values_are_clamped():
    at = page("2_Speculative_decoding")
    at.query_params["k"] = "99"
    at.query_params["max_new_tokens"] = "banana"
    at.run()
    assert not at.exception
    assert at.slider(key="sp_k").value == 16 and at.slider(key="sp_max").value == 48
    assert any("outside" in w.value for w in at.warning) and any("not a number" in w.value for w in at.warning)
    at = page("1_Beam_search")
    at.session_state["bm_b"] = 0
    at.session_state["bm_max"] = 10_000
    at.run()
    assert not at.exception and at.slider(key="bm_b").value == 1 and at.slider(key="bm_max").value == 40


def test_unknown_model_in_the_sidebar_is_a_message_not_a_crash():
    at = page("2_Speculative_decoding")
    at.session_state["s_target"] = "no-such-org/no-such-model"
    at.run()
    assert not at.exception and any("not available" in e.value for e in at.error)
    at.session_state["s_target"] = ""  # back to the embedded model: the app still works
    at.run()
    assert not at.exception and at.button(key="spec_step")


def test_play_into_an_engine_error_stops_with_a_message(monkeypatch):
    """An engine that fails mid-run while playing: Play stops, the page says why once, keeps the cycle it had
    shown and its controls; no traceback, and Step afterwards says it again instead of failing."""
    import specviz.engine.speculative

    real = specviz.engine.speculative.speculative_steps

    def fails_after_one_cycle(*args, **kwargs):
        steps = real(*args, **kwargs)
        yield next(steps)
        raise SpecVizError("the engine stopped here (test)")

    monkeypatch.setattr(specviz.engine.speculative, "speculative_steps", fails_after_one_cycle)
    at = page("2_Speculative_decoding")
    at.session_state["sp_seed"] = 424242  # a recording of its own (the server shares recordings per settings)
    at.session_state["sp_mode"] = "rejection sampling"
    at.run()
    at.button(key="spec_play").click().run()
    assert at.session_state["spec"].playing
    for _ in range(40):  # each run is one Play tick (AppTest runs no timer): through cycle 1's stages
        at.run()
        if not at.session_state["spec"].playing:
            break
    assert not at.exception
    assert not at.session_state["spec"].playing
    assert [e.value for e in at.error if "engine stopped here" in e.value]
    replay = at.session_state["spec"].replay
    assert (replay.event, replay.phase) == (0, replay.phases - 1)  # cycle 1 played to its last stage, still shown
    assert at.get("plotly_chart") and at.button(key="spec_back")
    at.button(key="spec_step").click().run()
    assert not at.exception and [e.value for e in at.error if "engine stopped here" in e.value]
