"""Drafters: whatever proposes the tokens the target verifies. One module per drafter, each satisfying
the Drafter Protocol (base.py); the model-building helpers they share are in build.py."""
from __future__ import annotations

from specviz.errors import SpecVizError
from specviz.drafters.base import Drafter
from specviz.drafters.eagle2 import EAGLE2_LABEL, Eagle2Drafter
from specviz.drafters.early_exit import early_exit_drafter, early_exit_model
from specviz.drafters.feature import FeatureDrafter
from specviz.drafters.medusa import MEDUSA_LABEL, MedusaDrafter
from specviz.drafters.model import ModelDrafter
from specviz.drafters.ngram import NgramDrafter
from specviz.drafters.staged import StagedDrafter
from specviz.drafters.suffix import SuffixDrafter

__all__ = ["Drafter", "Eagle2Drafter", "FeatureDrafter", "MedusaDrafter", "ModelDrafter", "NgramDrafter", "StagedDrafter", "SuffixDrafter", "early_exit_drafter",
           "early_exit_model", "LABELS", "drafter_choices", "make_drafter"]

FEATURE_LABEL = "feature draft (EAGLE-style)"
TOKEN_LABEL = "token draft"
LABELS = {"feature": FEATURE_LABEL, "token": TOKEN_LABEL, "ngram": "n-gram lookup",
          "early-exit": "early exit (untrained)", "eagle2": EAGLE2_LABEL, "medusa": MEDUSA_LABEL}
ALIASES = {"model": "token"}  # the name links and scripts used before the token draft had its name


def drafter_choices(models) -> dict[str, str]:
    """label -> kind for the pages' pickers, best first; only what these models can run. A draft model the
    user gave is labelled by its name."""
    kinds = (["feature"] if models.feature_draft is not None else []) + (["token"] if models.draft is not None else [])
    return {(models.draft_name if k == "token" else LABELS[k]): k for k in kinds + ["ngram", "early-exit"]}


def make_drafter(kind: str, models=None, target=None, early_exit_layers: int = 4) -> Drafter:
    """'feature' (the shipped feature draft), 'token' (the loaded draft model), 'ngram' or 'early-exit'."""
    kind = ALIASES.get(kind, kind)
    if kind == "feature":
        if models is None or models.feature_draft is None:
            raise SpecVizError("The feature draft exists only for the embedded target: pick another drafter.")
        return FeatureDrafter(models.feature_draft, FEATURE_LABEL)
    if kind == "eagle2":  # a tree drafter (proposes_tree): run it with specviz.engine.tree.tree_speculative_steps
        if models is None or models.feature_draft is None:
            raise SpecVizError("The EAGLE-2 tree needs the feature draft, which exists only for the embedded target.")
        return Eagle2Drafter(models.feature_draft)
    if kind == "medusa":  # a tree drafter (proposes_tree): run it with specviz.engine.tree.tree_speculative_steps
        if models is None or getattr(models, "medusa", None) is None:
            raise SpecVizError("The Medusa heads exist only for the embedded target (models/medusa).")
        return MedusaDrafter(models.medusa)
    if kind == "ngram":
        return NgramDrafter()
    if kind == "early-exit":
        return early_exit_drafter(target or models.target, early_exit_layers)
    if kind == "token":
        if models is None or models.draft is None:
            raise SpecVizError("No draft model is loaded: pick the n-gram drafter or give a draft model.")
        return ModelDrafter(models.draft, models.draft_name)
    raise SpecVizError(f"Unknown drafter {kind!r}: use feature, token, ngram or early-exit.")
