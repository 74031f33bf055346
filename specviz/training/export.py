"""A trained draft's own weights, saved for specviz/drafters to load: bf16 safetensors + config.json.

Token draft (models/draft): layers.*, norm.* and, with a reduced head, head.weight and head.ids.
Feature draft (models/feature_draft): layers.*, norm.*, fc.* and fuse.*; its head is the token draft's
and is not stored again (config "head_from", relative to the folder's parent).
"""
from __future__ import annotations

import json
import pathlib

import torch
from safetensors.torch import save_file

from specviz.drafters.build import SubsetHead
from specviz.drafters.feature import FeatureDraft


def own_tensors(draft) -> dict[str, torch.Tensor]:
    """The weights that are the draft's own (not borrowed from the target), named as the loaders expect."""
    feature = isinstance(draft, FeatureDraft)
    lm = draft.lm if feature else draft
    modules = {"layers": lm.model.layers, "norm": lm.model.norm}
    if feature:
        modules |= {"fc": draft.fc} | ({"fuse": draft.fuse} if draft.fuse is not None else {})
    state = {f"{name}.{k}": v for name, m in modules.items() for k, v in m.state_dict().items()}
    if not feature and isinstance(lm.lm_head, SubsetHead):
        state["head.weight"] = lm.lm_head.weight
    tensors = {k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in state.items()}
    if not feature and isinstance(lm.lm_head, SubsetHead):
        tensors["head.ids"] = lm.lm_head.ids.to(torch.int32).cpu()
    return tensors


def export(draft, out: pathlib.Path, meta: dict, head_from: str | None = None) -> None:
    """Save draft to the folder out with config.json = meta (a feature draft's config also names its kind,
    head_from, num_layers and read_layers, first)."""
    if isinstance(draft, FeatureDraft):
        if head_from is None:
            raise ValueError("a feature draft's export needs head_from: the token draft whose head it reads")
        meta = {"kind": "feature", "head_from": head_from, "num_layers": len(draft.lm.model.layers),
                "read_layers": list(draft.read_layers)} | meta
    out.mkdir(parents=True, exist_ok=True)
    save_file(own_tensors(draft), str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
