"""Any local pair (issue 39), model-free: what specviz.loading reads from a folder before loading it (sizes from the
safetensors headers, corrupt and missing files, architectures), the memory check (CPU and GPU), the local Hugging
Face cache (nothing downloaded), tokenizer matching, the CLI on a tiny pair through the same load_models, and the
page table the app states per page. Tiny random Llamas on a word-level tokenizer built here: seconds."""
import json
import os
import struct

import pytest
import torch

from pairs import WORDS, copy_folder, cut_short, fake_huge, foreign_architecture, hub_entry, tiny_llama, word_tokenizer
from specviz import loading as M
from specviz.errors import SpecVizError

pytestmark = pytest.mark.fast


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    tok = word_tokenizer(WORDS)
    return {"dir": d, "tok": tok,
            "target": tiny_llama(d / "target", tok, hidden=64, layers=2, seed=0),
            "draft": tiny_llama(d / "draft", tok, hidden=32, layers=1, seed=1),
            "other": tiny_llama(d / "other", word_tokenizer(WORDS + ["extra"]), hidden=32, layers=1, seed=2)}


def test_sizes_come_from_the_safetensors_headers(folders, tmp_path):
    from transformers import AutoModelForCausalLM

    files = M.inspect_folder(folders["target"])
    model = AutoModelForCausalLM.from_pretrained(folders["target"])
    assert files.problem is None and files.model_type == "llama"
    assert files.params == sum(p.numel() for p in model.parameters())  # tied head counted once, as stored
    assert files.bytes == (folders["target"] / "model.safetensors").stat().st_size
    assert files.needed(torch.float32) == 4 * files.params and files.needed(torch.bfloat16) == 2 * files.params
    # sharded: the same count over the shards; a shard gone is a missing file
    model.save_pretrained(tmp_path / "sharded", safe_serialization=True, max_shard_size="100KB")
    folders["tok"].save_pretrained(tmp_path / "sharded")
    shards = sorted((tmp_path / "sharded").glob("*.safetensors"))
    assert len(shards) > 1 and M.inspect_folder(tmp_path / "sharded").params == files.params
    shards[-1].unlink()
    assert "is missing" in M.inspect_folder(tmp_path / "sharded").problem


def write_header(path, header: dict, data: bytes = b""):
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


@pytest.mark.parametrize("damage, needle", [
    ("cut", "cut short"),
    ("garbage", "not a valid safetensors"),
    ("not_json", "not a valid safetensors"),
    ("bad_offsets", "described wrongly"),
    ("config", "not valid JSON"),
    ("no_config", "no config.json"),
    ("pickle_only", "pickle"),
    ("empty", "No safetensors"),
])
def test_a_damaged_folder_is_named_with_its_problem(folders, tmp_path, damage, needle):
    d = copy_folder(folders["draft"], tmp_path / damage)
    w = d / "model.safetensors"
    if damage == "cut":
        cut_short(folders["draft"], d)
    elif damage == "garbage":
        w.write_bytes(os.urandom(4096))
    elif damage == "not_json":
        w.write_bytes(struct.pack("<Q", 10) + b"{not json!" + b"\0" * 64)
    elif damage == "bad_offsets":
        write_header(w, {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}}, b"\0" * 16)
    elif damage == "config":
        (d / "config.json").write_text("{ truncated")
    elif damage == "no_config":
        (d / "config.json").unlink()
    elif damage == "pickle_only":
        w.unlink()
        (d / "pytorch_model.bin").write_bytes(b"not loaded")
    elif damage == "empty":
        w.unlink()
    problem = M.inspect_folder(d).problem
    assert problem and needle in problem and "\n" not in problem
    with pytest.raises(SpecVizError, match=needle):
        M.plan_pair(str(d))
    with pytest.raises(SpecVizError, match=needle):  # and the loader itself, whoever calls it
        M.load_model(d, torch.device("cpu"))


@pytest.mark.parametrize("model_type, auto_map, needle", [
    ("t5", False, "not a causal language model"),
    ("nonesuch", True, "trust_remote_code"),
    ("nonesuch", False, "does not know"),
])
def test_an_architecture_transformers_cannot_load_is_refused_before_loading(folders, tmp_path, model_type, auto_map,
                                                                             needle):
    d = foreign_architecture(folders["draft"], tmp_path / "arch", model_type, auto_map)
    with pytest.raises(SpecVizError, match=needle):
        M.plan_pair(str(folders["target"]), str(d))


def test_too_big_for_memory_is_refused_from_the_header_alone(folders, tmp_path, monkeypatch):
    import psutil

    huge = fake_huge(folders["draft"], tmp_path / "huge", psutil.virtual_memory().total)  # 4 bytes each: 4x the RAM
    assert (huge / "model.safetensors").stat().st_blocks * 512 < 2**20  # sparse: nothing on disk
    assert M.inspect_folder(huge).problem is None  # a valid file, only too big
    with pytest.raises(SpecVizError, match="GiB"):
        M.plan_pair(str(folders["target"]), str(huge))
    # two models that fit alone but not together are refused as a pair
    t, d = M.inspect_folder(folders["target"]), M.inspect_folder(folders["draft"])
    free = (t.needed(torch.float32) + d.needed(torch.float32) / 2) / 0.8  # room for the bigger one, not for both
    monkeypatch.setattr(M.files, "available_memory", lambda dev: int(free))  # what check_fits reads
    M.check_fits([t], torch.device("cpu"))
    M.check_fits([d], torch.device("cpu"))
    with pytest.raises(SpecVizError, match=r"\+") as e:
        M.check_fits([t, d], torch.device("cpu"))
    assert "float32" in str(e.value)


def test_on_a_gpu_the_check_uses_its_free_memory_and_fp32_unless_bf16_is_asked(folders, monkeypatch):
    """The GPU path, run on a CPU: fp32 on CUDA (exact, as on the CPU) against torch.cuda.mem_get_info; with
    SPECVIZ_DTYPE=bf16 half of fp32's bytes, so a model that fits only in bf16 loads then."""
    t = M.inspect_folder(folders["target"])
    free = int(2 * t.params / 0.8) + 8  # just enough for bf16, not for fp32
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, 10 * free))
    assert M.available_memory(torch.device("cuda")) == free
    monkeypatch.delenv("SPECVIZ_DTYPE", raising=False)
    assert M.pick_dtype(torch.device("cuda")) == torch.float32 and M.pick_dtype(torch.device("cpu")) == torch.float32
    with pytest.raises(SpecVizError, match="GPU memory in float32.*SPECVIZ_DTYPE=bf16"):
        M.check_fits([t], torch.device("cuda"))
    monkeypatch.setenv("SPECVIZ_DTYPE", "bf16")
    assert M.pick_dtype(torch.device("cuda")) == torch.bfloat16 and M.pick_dtype(torch.device("cpu")) == torch.float32
    M.check_fits([t], torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free // 2, 10 * free))
    with pytest.raises(SpecVizError, match="GPU memory in bfloat16"):
        M.check_fits([t], torch.device("cuda"))
    monkeypatch.setenv("SPECVIZ_DTYPE", "fp16")  # a typo or an unsupported type: one sentence, not fp32 silently
    with pytest.raises(SpecVizError, match="SPECVIZ_DTYPE must be fp32 or bf16"):
        M.pick_dtype(torch.device("cuda"))


def test_device_choice(monkeypatch):
    if not torch.cuda.is_available():
        with pytest.raises(SpecVizError, match="no CUDA"):
            M.pick_device("cuda")
        assert M.pick_device() == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert M.pick_device() == torch.device("cuda") and M.pick_device("cpu") == torch.device("cpu")


def test_apple_gpu_when_there_is_no_cuda(monkeypatch):
    """MPS (Apple silicon) is picked when there is no CUDA, kept in fp32; asked for where absent: one sentence."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(M.device, "mps_available", lambda: True)
    assert M.pick_device() == torch.device("mps") and M.pick_dtype(torch.device("mps")) == torch.float32
    monkeypatch.setattr(M.device, "mps_available", lambda: False)
    assert M.pick_device() == torch.device("cpu")
    with pytest.raises(SpecVizError, match="no Apple GPU"):
        M.pick_device("mps")


def test_the_local_hub_cache_is_read_and_nothing_is_downloaded(folders, tmp_path, monkeypatch):
    import huggingface_hub

    def no_network(*a, **k):
        raise AssertionError("a download was attempted")

    for name in ("snapshot_download", "hf_hub_download"):
        monkeypatch.setattr(huggingface_hub, name, no_network)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # even online, nothing is fetched
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    old = hub_entry(hub, "org/target", folders["draft"], revision="1" * 40)
    new = hub_entry(hub, "org/target", folders["target"], revision="2" * 40)
    (hub / "models--org--target" / "refs" / "main").write_text("1" * 40)  # main is the older snapshot
    hub_entry(hub, "org/no-weights", folders["draft"])  # then its weights link removed: a download cut short
    for f in (hub / "models--org--no-weights" / "snapshots").glob("*/*.safetensors"):
        f.unlink()
    assert M.cached_models() == {"org/target": old}
    assert M.resolve_local("org/target") == old != new
    for bad, needle in (("org/absent", "not available offline"), ("a/b/c", "No model folder"),
                        ("org/../x", "No model folder")):
        with pytest.raises(SpecVizError, match=needle):
            M.resolve_local(bad)
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert M.hub_cache() == tmp_path / "home" / "hub" and M.cached_models() == {}


def test_tokenizers_must_match(folders, tmp_path):
    assert M.tokenizer_signature(folders["target"]) == M.tokenizer_signature(folders["draft"])
    assert M.tokenizer_signature(folders["target"]) != M.tokenizer_signature(folders["other"])
    pair = M.plan_pair(str(folders["target"]), str(folders["draft"]))
    assert pair.draft.path == folders["draft"]
    with pytest.raises(SpecVizError, match="different tokenizer"):
        M.plan_pair(str(folders["target"]), str(folders["other"]))
    no_tok = copy_folder(folders["draft"], tmp_path / "no-tokenizer")
    for f in no_tok.glob("tok*"):
        f.unlink()
    with pytest.raises(SpecVizError, match="tokenizer"):
        M.plan_pair(str(folders["target"]), str(no_tok))


def test_the_cli_loads_a_pair_through_the_same_path(folders, capsys):
    from specviz.__main__ import main

    ms = M.load_models(str(folders["target"]), str(folders["draft"]), "cpu")
    for m in (ms.target, ms.draft):
        assert {p.device for p in m.parameters()} == {torch.device("cpu")}
        assert {p.dtype for p in m.parameters()} == {torch.float32}
    assert ms.feature_draft is None and ms.medusa is None  # trained for the embedded target only
    args = ["decode", "--target", str(folders["target"]), "--prompt", "the cat sat on", "--max-new-tokens", "8",
            "--json", "--device", "cpu"]
    assert main(args + ["--method", "greedy"]) == 0
    greedy = json.loads(capsys.readouterr().out)["token_ids"]
    assert main(args + ["--method", "speculative", "--draft", str(folders["draft"]), "--drafter", "token"]) == 0
    assert json.loads(capsys.readouterr().out)["token_ids"] == greedy  # lossless on the pair
    assert main(args + ["--method", "speculative", "--draft", str(folders["other"])]) == 2
    assert "different tokenizer" in capsys.readouterr().err


def test_every_page_says_what_it_does_with_a_pair():
    from ui.models import SUPPORT, support_line
    from ui.registry import PAGES

    assert set(SUPPORT) == {""} | {p.path for p in PAGES}  # a new page has to state it
    for page, s in SUPPORT.items():
        embedded, other = support_line(page, None, True), support_line(page, "/models/x", False)
        assert embedded and other and embedded != other
        if s.embedded_only:
            assert s.embedded_only in other and "embedded target only" in other
        if s.needs_draft:
            assert "(none given)" in other
    assert "needs the embedded target" in support_line("pages/7_Tree_speculation.py", None, True)
