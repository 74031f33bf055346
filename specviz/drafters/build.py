"""Building draft models on the target: the pieces every draft model shares.

A draft is a small Llama whose embedding and rotary table ARE the target's modules (shared, no copy)
with decoder layers and a final norm of its own, and either the target's LM head or a reduced one
(SubsetHead). The token draft (models/draft) and the feature draft (models/feature_draft) are both
assembled here; training (specviz/training/) builds its untrained drafts with the same functions.
"""
from __future__ import annotations

import copy
import json
import pathlib

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm

from specviz.packed import pack_linears


class SubsetHead(torch.nn.Module):
    """An LM head over a subset of the vocabulary (the tokens the target actually uses most).

    On CPU the full head is the draft's biggest cost: 49152 x 576 weights read per step. Scoring 8192
    rows costs a sixth of that. Tokens outside the subset get probability 0 in q, which is still exact:
    q is the distribution the draft really samples from."""

    def __init__(self, weight: torch.Tensor, ids: torch.Tensor, vocab_size: int):
        super().__init__()
        # a plain nn.Linear, so pack_linears packs it like any other layer on CPU
        self.proj = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False,
                                    device=weight.device, dtype=weight.dtype)
        self.proj.weight = torch.nn.Parameter(weight)
        self.register_buffer("ids", ids.long(), persistent=True)
        self.vocab_size = vocab_size

    @property
    def weight(self) -> torch.Tensor:
        return self.proj.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        sub = self.proj(hidden)
        out = torch.full((*sub.shape[:-1], self.vocab_size), float("-inf"), dtype=sub.dtype, device=sub.device)
        out[..., self.ids] = sub
        return out


def assemble(target, layers: torch.nn.ModuleList, norm, head=None):
    """A LlamaForCausalLM whose embedding, rotary table and head ARE the target's modules (shared, no
    copy), with its own `layers` and `norm`. Built on the meta device so nothing is allocated twice."""
    for i, layer in enumerate(layers):
        layer.self_attn.layer_idx = i  # its slot in the draft's own KV cache
    cfg = copy.deepcopy(target.config)
    cfg.num_hidden_layers = len(layers)
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = cfg.layer_types[:len(layers)]
    with torch.device("meta"):
        draft = AutoModelForCausalLM.from_config(cfg)
    draft.model.embed_tokens = target.model.embed_tokens
    draft.model.rotary_emb = target.model.rotary_emb
    draft.model.layers = layers
    draft.model.norm = norm
    draft.lm_head = target.lm_head if head is None else head
    draft.generation_config = copy.deepcopy(target.generation_config)  # generate() may edit it
    return draft.eval()


def read_parts(target, path: pathlib.Path, num_layers: int) -> tuple[dict, torch.nn.ModuleList, torch.nn.Module]:
    """A saved draft's tensors, and its own decoder layers and final norm loaded from them, on the target's
    device and dtype (stored bf16)."""
    state = load_file(str(path / "model.safetensors"))
    cfg = copy.deepcopy(target.config)
    cfg.num_hidden_layers = num_layers
    layers = load_part(state, "layers.",
                       torch.nn.ModuleList(LlamaDecoderLayer(cfg, i) for i in range(num_layers)), target)
    norm = load_part(state, "norm.", LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps), target)
    return state, layers, norm


def load_part(state: dict, prefix: str, module: torch.nn.Module, target) -> torch.nn.Module:
    module.load_state_dict({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)})
    return module.to(target.device, target.dtype)


def subset_head(state: dict, target) -> SubsetHead:
    """The reduced head saved with a token draft (head.weight, head.ids), frozen."""
    head = SubsetHead(state["head.weight"].to(target.device, target.dtype), state["head.ids"].to(target.device),
                      target.config.vocab_size)
    return head.requires_grad_(False)


def load_token_draft(target, path: pathlib.Path, packed: bool = True):
    """The token draft in models/draft: its own decoder layers and final norm (and a reduced head when
    saved with one), everything else borrowed from the target at load time."""
    meta = json.loads((path / "config.json").read_text())
    state, layers, norm = read_parts(target, path, int(meta["num_hidden_layers"]))
    head = subset_head(state, target) if "head.ids" in state else None  # else the target's head
    draft = assemble(target, layers, norm, head)
    if packed:
        pack_linears(draft)  # its own layers and head; the borrowed target modules are packed already
    return draft
