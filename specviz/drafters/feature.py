"""A draft that reads the target's own hidden state (EAGLE, Li et al. 2024), one file.

A token-only draft must guess what the target "thinks" from the tokens alone (a 1-layer one on 424k
tokens: 50 % greedy acceptance with SmolLM2-135M; models/README.md). But the target's verify pass has
already computed its last hidden state f_j at every accepted position (the vector its LM head reads).
The feature draft reads, at position i, the embedding of token x_i together with the target's
feature of the position before, f_{i-1} (zero at i = 0, so the first token, the attention sink, is
there as in any LM), and predicts the feature at i:

    h_i = norm(layer(fc([embed(x_i); f_{i-1}])))   ~ f_i       q_{i+1} = softmax(head(h_i))

To draft K tokens it feeds its own h_i back in place of the (not yet computed) target feature. After
verification the positions built on its own guesses are rolled back and rebuilt from the target's
real features, which the verify pass just produced: every cycle starts from the target's truth.

Only the fc, the decoder layer and its norm are the draft's own (8.4 MB in bf16). The embedding and the
rotary table are the target's modules; the reduced head is the token draft's (models/draft), which is
also where training starts: fc = [identity; 0] makes the untrained feature draft exactly the token
draft, and training teaches it what the target's state adds. The engine's side is small: Stepper
keeps the target's hidden states (hidden_layers), speculative_steps runs one prefill pass and hands each
verify pass's states to observe().
"""
from __future__ import annotations

import copy
import json
import pathlib

import torch

from .sampling import SamplingConfig, choose, distribution, warpers


def rms(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), eps=1e-6)


class FeatureDraft(torch.nn.Module):
    reads_target_features = True

    def __init__(self, target, layers, norm, head, fc=None, layers_read=(None,), fuse=None):
        super().__init__()
        from .drafters import _assemble

        hidden = target.config.hidden_size
        for i, layer in enumerate(layers):
            layer.self_attn.layer_idx = i  # its slot in the draft's own KV cache
        # a small Llama (usually one layer) whose embedding and rotary table are the target's own modules
        self.lm = _assemble(target, len(layers), layers, norm, head)
        self.config = self.lm.config
        # which of the target's hidden states it reads (indices into hidden_states: 0 = embeddings,
        # L = the final, normed one); several are fused into one vector (EAGLE-3 reads low, mid and high)
        last = target.config.num_hidden_layers
        self.layers_read = tuple(last if i is None else int(i) for i in layers_read)
        self.fuse = None
        if len(self.layers_read) > 1:
            self.fuse = fuse or torch.nn.Linear(len(self.layers_read) * hidden, hidden, bias=False)
            self.fuse = self.fuse.to(target.device, target.dtype)
        if fc is None:  # an untrained draft: start from the feature alone
            fc = torch.nn.Linear(2 * hidden, hidden, bias=True)
            with torch.no_grad():
                fc.weight.zero_()
                fc.weight[:, hidden:] = torch.eye(hidden)
                fc.weight[:, :hidden].normal_(0.0, 0.02)
                fc.bias.zero_()
        self.fc = fc.to(target.device, target.dtype)
        # Features enter RMS-normalised and scaled to the embeddings' size (~0.14 here, the target's
        # final features ~1.8): otherwise the first optimiser steps on the feature half of fc swamp
        # the token signal.
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
        if self.fuse is not None and feats.shape[-1] == hidden * len(self.layers_read):
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


class FeatureDrafter:
    """Drafter over a FeatureDraft. The engine hands it the target's hidden states after every target
    pass (observe); propose() needs them for every position but the newest token."""

    kind = "model"
    needs_features = True

    def __init__(self, model: FeatureDraft, name: str = "feature draft"):
        self.model, self.name = model, name
        self.feature_layers = model.layers_read  # what the engine's target Stepper keeps for it
        self.reset()

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self.feats = None  # (T, ·): the target's hidden states (layers_read) at positions 0..T-1
        self.trusted = 0  # cache entries built from real target features (the rest from own guesses)
        self.passes = 0
        self.seconds = 0.0

    @property
    def cached(self) -> int:
        return self.cache.get_seq_length()

    def observe(self, hidden: torch.Tensor, start: int) -> None:
        """The target just computed hidden states for positions start.. ; older ones stay valid."""
        hidden = hidden.detach()
        self.feats = hidden if self.feats is None or start == 0 else torch.cat([self.feats[:start], hidden])

    @torch.inference_mode()
    def _step(self, tokens: list[int], feats: torch.Tensor) -> torch.Tensor:
        import time

        t0 = time.perf_counter()
        h, self.cache = self.model(torch.tensor([tokens], device=self.model.device), feats[None], self.cache)
        self.seconds += time.perf_counter() - t0
        self.passes += 1
        return h[0]

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        n = len(ids)
        # position i pairs x_i with f_{i-1}: positions up to n - 1 need the target's features 0..n-2
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
            if i < k - 1:  # its own h stands in for the target feature it does not have yet
                h = self._step([x], h)[-1:]
        return tokens, torch.stack(qs)

    def rollback(self, n: int) -> None:
        # keep only entries built from real features; the next propose rebuilds the rest from the
        # features of the verify pass
        keep = min(n, self.trusted)
        if self.cached > keep:
            self.cache.crop(keep - self.cached)


@torch.inference_mode()
def forward_ms(model: FeatureDraft, ctx_len: int, repeats: int = 15) -> float:
    """Median ms of one draft step (one new entry) on top of ctx_len cached entries: the c numerator."""
    import statistics
    import time

    from transformers import DynamicCache

    tokens = torch.zeros((1, ctx_len + 1), dtype=torch.long, device=model.device)
    feats = torch.ones((1, ctx_len + 1, model.config.hidden_size * len(model.layers_read)), dtype=model.dtype,
                       device=model.device)
    times = []
    for _ in range(repeats + 2):
        cache = DynamicCache(config=model.config)
        h, _ = model(tokens[:, :ctx_len], feats[:, :ctx_len], cache)
        t0 = time.perf_counter()
        h, _ = model(tokens[:, ctx_len:], h[:, -1:], cache)  # a drafting step reads its own h
        model.head(h)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times[2:])


def target_head_rows(target, ids: torch.Tensor):
    """A reduced head made of the target's own LM-head rows for `ids`, frozen: the draft's features
    are trained to live in the target's space, so the target's head reads them (EAGLE keeps the
    target's head too). Only the ids are stored."""
    from .drafters import SubsetHead

    weight = getattr(target.lm_head, "weight", None)  # a packed head has no readable weight...
    if weight is None and target.config.tie_word_embeddings:
        weight = target.model.embed_tokens.weight  # ...but a tied one is the embedding
    if weight is None:
        from .errors import SpecVizError
        raise SpecVizError("A feature draft needs the target's LM-head weights; load the target unpacked.")
    ids = ids.to(weight.device).long()
    head = SubsetHead(weight.detach()[ids].clone(), ids, target.config.vocab_size)
    return head.requires_grad_(False)


def build(target, init_layer: int, head_ids: torch.Tensor) -> FeatureDraft:
    """An untrained feature draft: its layer a copy of target layer `init_layer`."""
    layer = copy.deepcopy(target.model.layers[init_layer])
    return FeatureDraft(target, torch.nn.ModuleList([layer]), copy.deepcopy(target.model.norm),
                        target_head_rows(target, head_ids))


def from_token_draft(target, token_draft: pathlib.Path, layers_read=(None,), layers: int = 1) -> FeatureDraft:
    """A feature draft that starts as the trained 1-layer token draft: its layer, norm and reduced head,
    with fc = [identity on the embedding; zero on the feature], so at step 0 it IS the token draft and
    training only has to learn what the target's state adds. The head stays frozen and is not stored
    again: at load time it comes from the token draft's file. layers > 1 stacks copies of that layer
    whose output projections (attention o_proj, MLP down_proj) are zero: each adds nothing to the
    residual stream at step 0, so the deeper draft also starts as the token draft exactly."""
    from .drafters import load_shipped_draft

    token = load_shipped_draft(target, token_draft, packed=False)
    if token.config.num_hidden_layers != 1:
        from .errors import SpecVizError
        raise SpecVizError(f"{token_draft} has {token.config.num_hidden_layers} layers; a feature draft starts from a 1-layer one.")
    hidden = target.config.hidden_size
    fc = torch.nn.Linear(2 * hidden, hidden, bias=True)
    with torch.no_grad():
        fc.weight.zero_()
        fc.weight[:, :hidden] = torch.eye(hidden)
        fc.bias.zero_()
    head = token.lm_head.requires_grad_(False)
    stack = torch.nn.ModuleList(copy.deepcopy(token.model.layers[0]) for _ in range(layers))
    with torch.no_grad():
        for layer in stack[1:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    return FeatureDraft(target, stack, copy.deepcopy(token.model.norm), head, fc, layers_read)


def is_feature_draft(path: pathlib.Path) -> bool:
    cfg = path / "config.json"
    return cfg.is_file() and json.loads(cfg.read_text()).get("kind") == "feature"


def load(target, path: pathlib.Path, packed: bool = True) -> FeatureDraft:
    """A feature draft saved by export(): fc, fuse, layers and norm. Embedding and rotary are the
    target's; the reduced head is the token draft's (config "head_from", relative to its parent)."""
    from safetensors.torch import load_file
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm

    from .drafters import SubsetHead

    cfg = copy.deepcopy(target.config)
    meta = json.loads((path / "config.json").read_text())
    state = load_file(str(path / "model.safetensors"))
    dev, dtype = target.device, target.dtype

    def part(prefix, module):
        module.load_state_dict({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)})
        return module.to(dev, dtype)

    layers = part("layers.", torch.nn.ModuleList(LlamaDecoderLayer(cfg, i) for i in range(meta["num_layers"])))
    norm = part("norm.", LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps))
    fc = part("fc.", torch.nn.Linear(2 * cfg.hidden_size, cfg.hidden_size, bias=True))
    source = load_file(str(path.parent / meta["head_from"] / "model.safetensors"))  # the token draft's head
    head = SubsetHead(source["head.weight"].to(dev, dtype), source["head.ids"].to(dev), cfg.vocab_size)
    layers_read = meta.get("layers_read", [None])
    fuse = None
    if len(layers_read) > 1:
        fuse = part("fuse.", torch.nn.Linear(len(layers_read) * cfg.hidden_size, cfg.hidden_size, bias=False))
    model = FeatureDraft(target, layers, norm, head.requires_grad_(False), fc, layers_read, fuse)
    model.requires_grad_(False)
    model.eval()
    if packed:
        from .packed import pack_linears
        pack_linears(model)  # its own fc, layer and head; the borrowed modules are packed already
    return model


def export(model: FeatureDraft, out: pathlib.Path, meta: dict, head_from: str) -> None:
    """fc, fuse, layers and norm as bf16 safetensors; the head is not stored: it is the token draft's
    in head_from (relative to out's parent)."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    state = {f"layers.{k}": v for k, v in model.lm.model.layers.state_dict().items()}
    state |= {f"norm.{k}": v for k, v in model.lm.model.norm.state_dict().items()}
    state |= {f"fc.{k}": v for k, v in model.fc.state_dict().items()}
    if model.fuse is not None:
        state |= {f"fuse.{k}": v for k, v in model.fuse.state_dict().items()}
    tensors = {k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in state.items()}
    save_file(tensors, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps({"kind": "feature", "head_from": head_from, "num_layers": len(model.lm.model.layers),
                                                "layers_read": list(model.layers_read)} | meta,
                                                indent=2) + "\n")


@torch.inference_mode()
def target_features(target, records, layers_read, log=print) -> list[torch.Tensor]:
    """One teacher-forced target pass per training sequence: its hidden states `layers_read` at every
    position, concatenated (fp16): what the verify pass hands the draft."""
    feats = []
    for i, r in enumerate(records):
        out = target(input_ids=torch.tensor([r["ids"]], device=target.device), output_hidden_states=True,
                     logits_to_keep=1)
        feats.append(torch.cat([out.hidden_states[j][0] for j in layers_read], -1).half().cpu())
        if (i + 1) % 200 == 0:
            log(f"  features {i + 1}/{len(records)}")
    return feats


def cached_features(path: pathlib.Path, records, layers_read, load_target, log=print) -> list[torch.Tensor]:
    """target_features for the records, cached next to the data. The data cache grows as a prefix, so
    the longest prefix of cached features whose shapes match the sequences is kept, the rest computed."""
    target, _ = load_target()  # inference only: the packed (fast) target
    width = target.config.hidden_size * len(layers_read)
    feats = torch.load(path, weights_only=True) if path.is_file() else []
    keep = 0
    while keep < min(len(feats), len(records)) and feats[keep].shape == (len(records[keep]["ids"]), width):
        keep += 1
    log(f"features: {keep} sequences from {path}" + (f", {len(records) - keep} to compute" if keep < len(records) else ""))
    if keep < len(records):
        feats = feats[:keep] + target_features(target, records[keep:], layers_read, log)
        torch.save(feats, path)
    return feats[:len(records)]  # a run on less data reads a prefix and leaves the longer cache intact


def shifted(f: torch.Tensor) -> torch.Tensor:
    """Target states f_0..f_{T-1} -> what positions 0..T read: 0, f_0, ..., f_{T-1} (position i reads
    the state at i - 1; position 0, the first token, reads zeros)."""
    return torch.cat([torch.zeros_like(f[:1]), f])


def sequence_loss(model: FeatureDraft, r: dict, f: torch.Tensor, unroll: int = 2):
    """Cross-entropy of q against the target's top-k distribution on one training sequence, summed over
    answer positions. Pass 1 reads the target's real states; pass u >= 2 reads the draft's own h from
    pass u-1, which is what drafting position u sees at inference."""
    ids = torch.tensor([r["ids"]], device=model.device)
    # position i predicts x_{i+1}; top-k row r predicts answer token start + r: position start - 1 + r
    t_logp = r["top_logp"].float().to(model.device)
    t_ids = r["top_ids"].long().to(model.device)
    lo, rows = r["start"] - 1, t_logp.shape[0]
    feats_in = shifted(f.to(model.device, model.dtype))[:-1]
    total = 0.0
    for _ in range(unroll):
        h = model(ids, feats_in[None])[0][0]
        logq = torch.log_softmax(model.head(h[lo:lo + rows]).float(), -1)
        picked = logq.gather(-1, t_ids)
        inside = torch.isfinite(picked)  # a reduced head cannot say tokens outside its subset
        t_p = torch.nan_to_num(torch.softmax(t_logp.masked_fill(~inside, float("-inf")), -1))
        total = total - (t_p * picked.masked_fill(~inside, 0.0)).sum()
        feats_in = shifted(h.detach())[:-1]  # the next pass sees the draft's own guesses
    return total, rows
