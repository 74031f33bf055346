"""Model folders for the pair tests (tests/test_pairs*.py): tiny random Llamas saved with safetensors, a local Hugging
Face cache laid out as huggingface_hub lays it out, and folders that must be refused (a different tokenizer, a cut
short file, a header that declares more than this machine's memory, an architecture transformers cannot load)."""
from __future__ import annotations

import json
import os
import pathlib
import struct

import torch


def word_tokenizer(words: list[str]):
    """A small word-level tokenizer built in code (no file from anywhere)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[UNK]", "<s>", "</s>", *words])}
    t = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]", bos_token="<s>", eos_token="</s>",
                                   pad_token="</s>")


WORDS = "the a cat dog sat on mat and ran far hi".split()


def tiny_llama(folder: pathlib.Path, tok, hidden: int = 64, layers: int = 2, seed: int = 0) -> pathlib.Path:
    """A random Llama on `tok`'s vocabulary, saved with its tokenizer into `folder` (safetensors)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(cfg).save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


def hub_entry(cache: pathlib.Path, hub_id: str, source: pathlib.Path, revision: str = "0" * 40) -> pathlib.Path:
    """`source`'s files as the snapshot `main` points to in a Hugging Face hub cache (blobs + links, as the hub
    client writes them)."""
    repo = cache / ("models--" + hub_id.replace("/", "--"))
    snap = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        blob = repo / "blobs" / f"{f.name}.{revision[:8]}"
        blob.write_bytes(f.read_bytes())
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return snap


def copy_folder(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def cut_short(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    """A copy whose weights file lost its second half (a copy or download cut short)."""
    copy_folder(src, dst)
    w = dst / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    return dst


def fake_huge(src: pathlib.Path, dst: pathlib.Path, params: int) -> pathlib.Path:
    """A folder whose one (sparse: nothing on disk) safetensors file is a valid header declaring one F32 tensor of
    `params` elements: the size check has to refuse it before anything is read."""
    copy_folder(src, dst)
    (dst / "model.safetensors").unlink()
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [params],
                                                       "data_offsets": [0, 4 * params]}}).encode()
    with open(dst / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + 4 * params)
    return dst


def foreign_architecture(src: pathlib.Path, dst: pathlib.Path, model_type: str, auto_map: bool = False) -> pathlib.Path:
    """A copy whose config.json names another architecture."""
    copy_folder(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["model_type"] = model_type
    cfg["architectures"] = ["SomethingElse"]
    if auto_map:
        cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def wrong_shapes(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    """Intact files that pass every check but whose weights do not fit the config (transformers refuses at load)."""
    copy_folder(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["hidden_size"] *= 2
    cfg["intermediate_size"] *= 2
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst
