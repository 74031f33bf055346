"""A draft that reads the target's own hidden state (EAGLE, Li et al. 2024): the model and its drafter.

A token-only draft must guess what the target "thinks" from the tokens alone. But the target's verify
pass has already computed its hidden states at every accepted position. The feature draft reads, at
position i, the embedding of token x_i together with the target's state of the position before,
f_{i-1} (zero at i = 0, so the first token, the attention sink, is there as in any LM), and predicts
the state at i:

    h_i = norm(layers(fc([embed(x_i); f_{i-1}])))   ~ f_i       q_{i+1} = softmax(head(h_i))

To draft K tokens it feeds its own h_i back in place of the (not yet computed) target state. After
verification the positions built on its own guesses are rolled back and rebuilt from the target's real
states, which the verify pass just produced: every cycle starts from the target's truth.

Only fc, the decoder layers and their norm are the draft's own; the embedding and the rotary table are
the target's modules and the reduced head is the token draft's (models/draft). Training lives in
specviz/training/feature.py; sizes and measured figures in models/README.md.
"""
from __future__ import annotations

import json
import pathlib

import torch
from safetensors.torch import load_file
from transformers import DynamicCache

from specviz.packed import pack_linears
from specviz.sampling import SamplingConfig, choose, distribution, warpers
from specviz.drafters.build import assemble, load_part, read_parts, subset_head


def rms(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), eps=1e-6)


def shifted(f: torch.Tensor) -> torch.Tensor:
    """Target states f_0..f_{T-1} -> what positions 0..T read: 0, f_0, ..., f_{T-1} (position i reads
    the state at i - 1; position 0, the first token, reads zeros)."""
    return torch.cat([torch.zeros_like(f[:1]), f])


class FeatureDraft(torch.nn.Module):
    def __init__(self, target, layers, norm, head, fc, read_layers=(None,), fuse=None):
        super().__init__()
        hidden = target.config.hidden_size
        # a small Llama (usually one layer) whose embedding and rotary table are the target's own modules
        self.lm = assemble(target, layers, norm, head)
        self.config = self.lm.config
        # which of the target's hidden states it reads (indices into hidden_states: 0 = embeddings,
        # L = the final, normed one); several are fused into one vector (EAGLE-3 reads low, mid and high)
        last = target.config.num_hidden_layers
        self.read_layers = tuple(last if i is None else int(i) for i in read_layers)
        self.fuse = None
        if len(self.read_layers) > 1:
            self.fuse = fuse or torch.nn.Linear(len(self.read_layers) * hidden, hidden, bias=False)
            self.fuse = self.fuse.to(target.device, target.dtype)
        self.fc = fc.to(target.device, target.dtype)
        # States enter RMS-normalised and scaled to the embeddings' size (the target's final states are
        # ~10x larger): otherwise the first optimiser steps on the state half of fc swamp the token signal.
        emb_rms = float(target.model.embed_tokens.weight.detach().float().pow(2).mean().sqrt())
        self.register_buffer("feat_scale", torch.tensor(emb_rms, dtype=target.dtype, device=target.device))

    @property
    def device(self):
        return self.embed_tokens.weight.device

    @property
    def dtype(self):
        return self.embed_tokens.weight.dtype

    @property
    def embed_tokens(self):
        return self.lm.model.embed_tokens

    def feature(self, feats: torch.Tensor) -> torch.Tensor:
        """The vector the draft reads: the target's states (fused when several), or its own h."""
        feats = feats.to(self.dtype)
        hidden = self.config.hidden_size
        if self.fuse is not None and feats.shape[-1] == hidden * len(self.read_layers):
            feats = self.fuse(torch.cat([rms(part) for part in feats.split(hidden, -1)], -1))
        return rms(feats) * self.feat_scale

    def forward(self, tokens: torch.Tensor, feats: torch.Tensor, cache=None):
        """tokens (B, T) = x_i; feats (B, T, ·) = the target's states at i-1 (or the draft's own h_{i-1}).
        Returns (h (B, T, H), cache); q_{i+1} = softmax(head(h_i))."""
        x = self.fc(torch.cat([self.embed_tokens(tokens), self.feature(feats)], -1))
        out = self.lm.model(inputs_embeds=x, past_key_values=cache, use_cache=cache is not None)
        return out.last_hidden_state, out.past_key_values

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return self.lm.lm_head(h)

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.config)


class FeatureDrafter:
    """Drafter over a FeatureDraft. The engine hands it the target's hidden states after every target
    pass (observe); propose() needs them for every position but the newest token."""

    reads_target_states = True
    proposes_tree = False

    def __init__(self, model: FeatureDraft, name: str = "feature draft"):
        self.model, self.name = model, name
        self.read_layers = model.read_layers  # what the engine's target Stepper keeps for it
        self.reset()

    def reset(self) -> None:
        self.cache = self.model.new_cache()
        self.feats = None  # (T, ·): the target's hidden states (read_layers) at positions 0..T-1
        self.trusted = 0  # cache entries built from real target states (the rest from own guesses)
        self.passes = 0

    @property
    def cached(self) -> int:
        return self.cache.get_seq_length()

    def observe(self, states: torch.Tensor, start: int) -> None:
        """The target just computed hidden states for positions start.. ; older ones stay valid."""
        states = states.detach()
        self.feats = states if self.feats is None or start == 0 else torch.cat([self.feats[:start], states])

    @torch.inference_mode()
    def _step(self, tokens: list[int], feats: torch.Tensor) -> torch.Tensor:
        h, self.cache = self.model(torch.tensor([tokens], device=self.model.device), feats[None], self.cache)
        self.passes += 1
        return h[0]

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        n = len(ids)
        # position i pairs x_i with f_{i-1}: positions up to n - 1 need the target's states 0..n-2
        if k < 1 or self.feats is None or self.feats.shape[0] < n - 1:
            return [], None  # a one-token prompt: the engine takes a plain target step, which brings them
        start = self.cached
        h = self._step(ids[start:n], shifted(self.feats[:n - 1])[start:])[-1:]
        self.trusted = n
        tokens, qs = [], []
        procs = warpers(cfg)
        for i in range(k):
            q = distribution(self.model.head(h).float(), cfg, procs)[0].cpu()
            x = choose(q, cfg, gen)
            tokens.append(x)
            qs.append(q)
            if i < k - 1:  # its own h stands in for the target state it does not have yet
                h = self._step([x], h)[-1:]
        return tokens, torch.stack(qs)

    def rollback(self, n: int) -> None:
        # keep only entries built from real states; the next propose rebuilds the rest from the states
        # of the verify pass
        keep = min(n, self.trusted)
        if self.cached > keep:
            self.cache.crop(keep - self.cached)


def is_feature_draft(path: pathlib.Path) -> bool:
    cfg = path / "config.json"
    return cfg.is_file() and json.loads(cfg.read_text()).get("kind") == "feature"


def load(target, path: pathlib.Path, packed: bool = True) -> FeatureDraft:
    """A feature draft saved by specviz.training.export: fc, fuse, layers and norm. Embedding and rotary
    are the target's; the reduced head is the token draft's (config "head_from", relative to its parent)."""
    meta = json.loads((path / "config.json").read_text())
    state, layers, norm = read_parts(target, path, meta["num_layers"])
    hidden = target.config.hidden_size
    fc = load_part(state, "fc.", torch.nn.Linear(2 * hidden, hidden, bias=True), target)
    # the token draft's
    head = subset_head(load_file(str(path.parent / meta["head_from"] / "model.safetensors")), target)
    read_layers = meta["read_layers"]
    fuse = None
    if len(read_layers) > 1:
        fuse = load_part(state, "fuse.", torch.nn.Linear(len(read_layers) * hidden, hidden, bias=False), target)
    model = FeatureDraft(target, layers, norm, head, fc, read_layers, fuse)
    model.requires_grad_(False)
    model.eval()
    if packed:
        pack_linears(model)  # its own fc, layer and head; the borrowed modules are packed already
    return model

