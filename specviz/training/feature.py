"""The feature draft before training, the target states it trains on, and its loss on one sequence.

The model itself (FeatureDraft) and its drafter are in specviz/drafters/feature.py."""
from __future__ import annotations

import copy
import pathlib

import torch

from specviz.drafters.build import SubsetHead, load_token_draft
from specviz.drafters.feature import FeatureDraft
from specviz.errors import SpecVizError
from specviz.training.data import pass_batches, right_padded
from specviz.training.loss import topk_cross_entropy


def passthrough_fc(hidden: int, keep: str) -> torch.nn.Linear:
    """fc over [embedding; state] that passes one half through: keep="embedding" (state half zero: the
    draft starts as a token draft) or keep="state" (embedding half small and random: an untrained draft
    that starts from the state alone)."""
    fc = torch.nn.Linear(2 * hidden, hidden, bias=True)
    with torch.no_grad():
        fc.weight.zero_()
        fc.bias.zero_()
        if keep == "embedding":
            fc.weight[:, :hidden] = torch.eye(hidden)
        else:
            fc.weight[:, hidden:] = torch.eye(hidden)
            fc.weight[:, :hidden].normal_(0.0, 0.02)
    return fc


def target_head_rows(target, ids: torch.Tensor) -> SubsetHead:
    """A reduced head made of the target's own LM-head rows for `ids`, frozen: the draft's states are
    trained to live in the target's space, so the target's head reads them (EAGLE keeps the target's
    head too)."""
    weight = getattr(target.lm_head, "weight", None)  # a packed head has no readable weight...
    if weight is None and target.config.tie_word_embeddings:
        weight = target.model.embed_tokens.weight  # ...but a tied one is the embedding
    if weight is None:
        raise SpecVizError("A feature draft needs the target's LM-head weights; load the target unpacked.")
    ids = ids.to(weight.device).long()
    return SubsetHead(weight.detach()[ids].clone(), ids, target.config.vocab_size).requires_grad_(False)


def build(target, init_layer: int, head_ids: torch.Tensor, read_layers=(None,)) -> FeatureDraft:
    """An untrained feature draft: one layer copied from target layer `init_layer`, the target's head rows
    `head_ids`, fc passing the state through."""
    layer = copy.deepcopy(target.model.layers[init_layer])
    head = target_head_rows(target, head_ids)
    fc = passthrough_fc(target.config.hidden_size, keep="state")
    return FeatureDraft(target, torch.nn.ModuleList([layer]), copy.deepcopy(target.model.norm), head, fc, read_layers)


def from_token_draft(target, token_draft: pathlib.Path, read_layers=(None,), layers: int = 1) -> FeatureDraft:
    """A feature draft that starts as the trained 1-layer token draft: its layer, norm and reduced head,
    with fc = [identity on the embedding; zero on the state], so at step 0 it IS the token draft and
    training only has to learn what the target's state adds. The head stays frozen and is not stored
    again: at load time it comes from the token draft's file. layers > 1 stacks copies of that layer
    whose output projections (attention o_proj, MLP down_proj) are zero: each adds nothing to the
    residual stream at step 0, so the deeper draft also starts as the token draft exactly."""
    token = load_token_draft(target, token_draft, packed=False)
    if token.config.num_hidden_layers != 1:
        raise SpecVizError(f"{token_draft} has {token.config.num_hidden_layers} layers; a feature draft starts "
                           "from a 1-layer one.")
    fc = passthrough_fc(target.config.hidden_size, keep="embedding")
    stack = torch.nn.ModuleList(copy.deepcopy(token.model.layers[0]) for _ in range(layers))
    with torch.no_grad():
        for layer in stack[1:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    head = token.lm_head.requires_grad_(False)
    return FeatureDraft(target, stack, copy.deepcopy(token.model.norm), head, fc, read_layers)


@torch.inference_mode()
def target_features(target, records, read_layers, log=print) -> list[torch.Tensor]:
    """Teacher-forced target passes over the training sequences (batched, right-padded): each one's hidden
    states `read_layers` at every position, concatenated (fp16): what the verify pass hands the draft."""
    feats, seqs = [], [r["ids"] for r in records]
    for group in pass_batches([len(s) for s in seqs], target.device):
        out = target(input_ids=right_padded([seqs[i] for i in group], target.device), output_hidden_states=True,
                     logits_to_keep=1)
        for row, i in enumerate(group):
            feats.append(torch.cat([out.hidden_states[j][row, :len(seqs[i])] for j in read_layers], -1).half().cpu())
        if len(feats) // 200 > (len(feats) - len(group)) // 200:
            log(f"  features {len(feats)}/{len(records)}")
    return feats


def cached_features(path: pathlib.Path, records, read_layers, load_target, log=print) -> list[torch.Tensor]:
    """target_features for the records, cached next to the data. The data cache grows as a prefix, so
    the longest prefix of cached features whose shapes match the sequences is kept, the rest computed.
    load_target() -> (target, tokenizer): called for the target that computes them."""
    target, _ = load_target()
    width = target.config.hidden_size * len(read_layers)
    feats = torch.load(path, weights_only=True) if path.is_file() else []
    keep = 0
    while keep < min(len(feats), len(records)) and feats[keep].shape == (len(records[keep]["ids"]), width):
        keep += 1
    todo = len(records) - keep
    log(f"features: {keep} sequences from {path}" + (f", {todo} to compute" if todo > 0 else ""))
    if keep < len(records):
        feats = feats[:keep] + target_features(target, records[keep:], read_layers, log)
        torch.save(feats, path)
    return feats[:len(records)]  # a run on less data reads a prefix and leaves the longer cache intact


def batch_loss(model: FeatureDraft, records: list[dict], states: list[torch.Tensor], unroll: int = 2):
    """(loss summed over the answers' positions and the unrolled passes, positions) for training sequences in
    one right-padded pass (a causal pass never lets a real position see the padding after it). Pass 1 reads
    the target's real states; pass u >= 2 reads the draft's own h from pass u-1, which is what drafting
    position u sees at inference."""
    ids = right_padded([r["ids"] for r in records], model.device)
    # position i reads the state at i - 1 (position 0 reads zeros); the padding reads zeros too
    states_in = torch.zeros(*ids.shape, states[0].shape[-1], device=model.device, dtype=model.dtype)
    for b, s in enumerate(states):
        states_in[b, 1:s.shape[0]] = s[:-1].to(model.device, model.dtype)
    # position i predicts x_{i+1}; top-k row r predicts answer token start + r: position start - 1 + r
    spans = [(r["start"] - 1, r["top_logp"].shape[0]) for r in records]
    top_logp = torch.cat([r["top_logp"] for r in records])
    top_ids = torch.cat([r["top_ids"] for r in records])
    total = 0.0
    for _ in range(unroll):
        h = model(ids, states_in)[0]
        rows = torch.cat([h[b, lo:lo + n] for b, (lo, n) in enumerate(spans)])
        total = total + topk_cross_entropy(model.head(rows), top_logp, top_ids)
        states_in = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1).detach()  # the draft's own guesses
    return total, top_logp.shape[0]

