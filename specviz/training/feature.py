"""The feature draft before training, the target states it trains on, and its loss on one sequence.

The model itself (FeatureDraft) and its drafter are in specviz/drafters/feature.py."""
from __future__ import annotations

import copy
import pathlib

import torch

from specviz.drafters.build import SubsetHead, load_token_draft
from specviz.drafters.feature import FeatureDraft, shifted
from specviz.errors import SpecVizError
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
    """One teacher-forced target pass per training sequence: its hidden states `read_layers` at every
    position, concatenated (fp16): what the verify pass hands the draft."""
    feats = []
    for i, r in enumerate(records):
        out = target(input_ids=torch.tensor([r["ids"]], device=target.device), output_hidden_states=True,
                     logits_to_keep=1)
        feats.append(torch.cat([out.hidden_states[j][0] for j in read_layers], -1).half().cpu())
        if (i + 1) % 200 == 0:
            log(f"  features {i + 1}/{len(records)}")
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


def sequence_loss(model: FeatureDraft, record: dict, states: torch.Tensor, unroll: int = 2):
    """(loss summed over the answer's positions and the unrolled passes, positions) for one training
    sequence. Pass 1 reads the target's real states; pass u >= 2 reads the draft's own h from pass u-1,
    which is what drafting position u sees at inference."""
    ids = torch.tensor([record["ids"]], device=model.device)
    # position i predicts x_{i+1}; top-k row r predicts answer token start + r: position start - 1 + r
    lo, rows = record["start"] - 1, record["top_logp"].shape[0]
    states_in = shifted(states.to(model.device, model.dtype))[:-1]
    total = 0.0
    for _ in range(unroll):
        h = model(ids, states_in[None])[0][0]
        total = total + topk_cross_entropy(model.head(h[lo:lo + rows]), record["top_logp"], record["top_ids"])
        states_in = shifted(h.detach())[:-1]  # the next pass sees the draft's own guesses
    return total, rows
