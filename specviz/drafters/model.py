"""Drafters: whatever proposes the K tokens the target then verifies.

- ModelDrafter: a small causal LM (the shipped distilled draft, an early-exit slice of the target, or
  the user's own draft). It samples from q, the *same processed distribution* the target's p goes
  through, and records q at each position: the verifier needs exactly the q the token came from.
- NgramDrafter: prompt lookup. Find the latest earlier occurrence of the last n tokens and propose
  what followed it. No model, no cost; q is one-hot, so a sampling verifier accepts with p(x).

Every drafter has propose(ids, k, cfg, generator) -> (tokens, q or None) and rollback(n).
"""
from __future__ import annotations

import copy
import json
import pathlib

import torch

from .sampling import SamplingConfig, choose, distribution, warpers
from .step import Stepper


class ModelDrafter:
    kind = "model"

    def __init__(self, model, name: str = "draft model"):
        self.model = model
        self.name = name
        self.stepper = Stepper(model)

    def reset(self) -> None:
        self.stepper = Stepper(self.model)

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        ctx = list(ids)
        tokens, qs = [], []
        procs = warpers(cfg)
        for _ in range(k):
            q = distribution(self.stepper.logits(ctx, 1), cfg, procs)[0].cpu()
            x = choose(q, cfg, gen)
            tokens.append(x)
            qs.append(q)
            ctx.append(x)
        return tokens, (torch.stack(qs) if qs else None)

    def rollback(self, n: int) -> None:
        # The last proposed token was never fed, so the cache may already be shorter than n.
        self.stepper.crop(n)

    @property
    def cached(self) -> int:
        return self.stepper.cached

    @property
    def passes(self) -> int:
        return self.stepper.passes


class NgramDrafter:
    kind = "ngram"
    name = "n-gram lookup"
    passes = 0

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def reset(self) -> None:
        pass

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        if k < 1:
            return [], None
        # Longest suffix first: a 3-token match predicts better than a 1-token one.
        for n in range(min(self.max_ngram, len(ids) - 1), self.min_ngram - 1, -1):
            pattern = ids[-n:]
            for start in range(len(ids) - n - 1, -1, -1):  # latest earlier occurrence first
                if ids[start:start + n] == pattern:
                    follow = ids[start + n:start + n + k]
                    if follow:
                        return list(follow), None  # None: q is one-hot on each proposed token
        return [], None

    def rollback(self, n: int) -> None:
        pass

    cached = None


# ---------------------------------------------------------------- draft models built on the target
class SubsetHead(torch.nn.Module):
    """An LM head over a subset of the vocabulary (the tokens the target actually uses most).

    On CPU the full head is the draft's biggest cost: 49152 x 576 weights read per step (~8 ms of
    ~12). Scoring 8192 rows costs ~1 ms. Tokens outside the subset get probability 0 in q, which is
    still exact: q is the distribution the draft really samples from."""

    def __init__(self, weight: torch.Tensor, ids: torch.Tensor, vocab_size: int):
        super().__init__()
        # a plain nn.Linear, so pack_linears packs it like any other layer on CPU
        self.proj = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, device=weight.device, dtype=weight.dtype)
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


def _assemble(target, num_layers: int, layers, norm, head=None):
    """A LlamaForCausalLM whose embedding, rotary table and head ARE the target's modules (shared, no
    copy), with its own `layers` and `norm`. Built on the meta device so nothing is allocated twice."""
    from transformers import AutoModelForCausalLM

    cfg = copy.deepcopy(target.config)
    cfg.num_hidden_layers = num_layers
    if hasattr(cfg, "layer_types") and cfg.layer_types:
        cfg.layer_types = cfg.layer_types[:num_layers]
    with torch.device("meta"):
        draft = AutoModelForCausalLM.from_config(cfg)
    draft.model.embed_tokens = target.model.embed_tokens
    draft.model.rotary_emb = target.model.rotary_emb
    draft.model.layers = layers
    draft.model.norm = norm
    draft.lm_head = target.lm_head if head is None else head
    draft.generation_config = copy.deepcopy(target.generation_config)  # generate() may edit it
    return draft.eval()


def early_exit_model(target, num_layers: int):
    """The target's first L layers + its final norm + head, untrained: the honest bad drafter."""
    total = target.config.num_hidden_layers
    if not 1 <= num_layers < total:
        from .errors import SpecVizError
        raise SpecVizError(f"Early exit needs 1 <= L < {total} layers; got {num_layers}.")
    return _assemble(target, num_layers, torch.nn.ModuleList(target.model.layers[:num_layers]), target.model.norm)


def load_shipped_draft(target, path: pathlib.Path, packed: bool = True):
    """The distilled draft in models/draft: its own decoder layers and final norm (safetensors),
    everything else borrowed from the target at load time."""
    from safetensors.torch import load_file
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm

    meta = json.loads((path / "config.json").read_text())
    n = int(meta["num_hidden_layers"])
    cfg = copy.deepcopy(target.config)
    cfg.num_hidden_layers = n
    layers = torch.nn.ModuleList(LlamaDecoderLayer(cfg, i) for i in range(n))
    norm = LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
    state = load_file(str(path / "model.safetensors"))
    dtype, dev = target.model.embed_tokens.weight.dtype, target.device
    layers.load_state_dict({k[len("layers."):]: v for k, v in state.items() if k.startswith("layers.")})
    norm.load_state_dict({k[len("norm."):]: v for k, v in state.items() if k.startswith("norm.")})
    head = None
    if "head.ids" in state:  # a reduced-vocabulary head of its own; otherwise the target's head
        head = SubsetHead(state["head.weight"].to(dev, dtype), state["head.ids"].to(dev), target.config.vocab_size)
        head.requires_grad_(False)
    draft = _assemble(target, n, layers.to(dev, dtype), norm.to(dev, dtype), head)
    if packed:
        from .packed import pack_linears
        pack_linears(draft)  # its own layers and head; the borrowed target modules are packed already
    return draft


FEATURE_LABEL = "feature draft (EAGLE-style)"
LABELS = {"feature": FEATURE_LABEL, "model": "draft model", "ngram": "n-gram lookup",
          "early-exit": "early exit (untrained)"}


def drafter_choices(pair) -> dict[str, str]:
    """label -> kind for the pages' pickers, best first; only what this pair can run."""
    kinds = (["feature"] if pair.feature_draft is not None else []) + (["model"] if pair.draft is not None else [])
    return {LABELS[k]: k for k in kinds + ["ngram", "early-exit"]}


def make_drafter(kind: str, pair=None, target=None, early_exit_layers: int = 4):
    """'feature' (the shipped feature draft), 'model' (the pair's draft), 'ngram', or 'early-exit'."""
    from .errors import SpecVizError

    if kind == "feature":
        if pair is None or pair.feature_draft is None:
            raise SpecVizError("The feature draft exists only for the embedded target: pick another drafter.")
        from .eagle import FeatureDrafter
        return FeatureDrafter(pair.feature_draft, LABELS["feature"])
    if kind == "ngram":
        return NgramDrafter()
    if kind == "early-exit":
        return ModelDrafter(early_exit_model(target or pair.target, early_exit_layers),
                            f"early exit (first {early_exit_layers} layers)")
    if kind == "model":
        if pair is None or pair.draft is None:
            raise SpecVizError("No draft model is loaded: pick the n-gram drafter or give a draft model.")
        return ModelDrafter(pair.draft, pair.draft_name)
    raise SpecVizError(f"Unknown drafter {kind!r}: use feature, model, ngram or early-exit.")
