"""Drafters: whatever proposes the tokens the target verifies. One module per drafter, each satisfying
the Drafter Protocol (base.py); the model-building helpers they share are in build.py."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specviz.errors import SpecVizError
from specviz.drafters.base import Drafter, TreeDrafter
from specviz.drafters.confidence import ConfidenceStopDrafter
from specviz.drafters.eagle2 import EAGLE2_LABEL, Eagle2Drafter
from specviz.drafters.early_exit import early_exit_drafter, early_exit_model
from specviz.drafters.feature import FeatureDrafter
from specviz.drafters.medusa import MEDUSA_LABEL, MedusaDrafter
from specviz.drafters.model import ModelDrafter
from specviz.drafters.ngram import NgramDrafter
from specviz.drafters.quantized import QUANTIZED_LABELS, quantized_drafter, quantized_model
from specviz.drafters.staged import StagedDrafter
from specviz.drafters.suffix import SuffixDrafter

__all__ = ["ConfidenceStopDrafter", "Drafter", "Eagle2Drafter", "FeatureDrafter", "MedusaDrafter", "ModelDrafter",
           "NgramDrafter", "StagedDrafter", "SuffixDrafter", "early_exit_drafter", "early_exit_model", "KINDS",
           "LABELS", "QUANTIZED", "TreeDrafter", "drafter_choices", "make_drafter", "quantized_model"]

FEATURE_LABEL = "feature draft (EAGLE-style)"
TOKEN_LABEL = "token draft"
ALIASES = {"model": "token"}  # the name links and scripts used before the token draft had its name


@dataclass(frozen=True)
class Kind:
    """One entry of the registry: how to build a drafter, and what it needs from the loaded models."""
    label: str
    build: Callable[..., Drafter]  # (models, target, options) -> a fresh drafter
    needs: str | None = None  # the attribute of the loaded models it is built on (None: nothing)
    missing: str = ""  # why it cannot be built when that attribute is None
    tree: bool = False  # a TreeDrafter: run it with specviz.engine.tree.tree_speculative_steps


EMBEDDED_ONLY = "exists only for the embedded target (trained on its features)"
# THE registry: every drafter the app, the CLI, the benchmark and the labs run is built here and only here.
KINDS: dict[str, Kind] = {
    "feature": Kind(FEATURE_LABEL, lambda m, t, o: FeatureDrafter(m.feature_draft, FEATURE_LABEL), "feature_draft",
                    f"The feature draft {EMBEDDED_ONLY}: pick another drafter."),
    "token": Kind(TOKEN_LABEL, lambda m, t, o: ModelDrafter(m.draft, m.draft_name), "draft",
                  "No draft model is loaded: pick the n-gram drafter or give a draft model."),
    "ngram": Kind("n-gram lookup", lambda m, t, o: NgramDrafter()),
    "early-exit": Kind("early exit (untrained)",
                       lambda m, t, o: early_exit_drafter(t if t is not None else m.target,
                                                          o.get("early_exit_layers", 4))),
    "suffix": Kind("suffix decoding", lambda m, t, o: SuffixDrafter(o.get("history"))),
    "staged": Kind("staged: n-gram → token draft", lambda m, t, o: StagedDrafter(m.draft), "draft",
                   "The staged drafter needs a draft model: none is loaded."),
    "confidence": Kind("token draft, confidence stop",
                       lambda m, t, o: ConfidenceStopDrafter(m.draft, o.get("threshold", 0.5),
                                                             o.get("keep_crossing", False)),
                       "draft", "The confidence stop drafts with a draft model: none is loaded."),
    "eagle2": Kind(EAGLE2_LABEL, lambda m, t, o: Eagle2Drafter(m.feature_draft), "feature_draft",
                   f"The EAGLE-2 tree needs the feature draft, which {EMBEDDED_ONLY}.", tree=True),
    "medusa": Kind(MEDUSA_LABEL, lambda m, t, o: MedusaDrafter(m.medusa, o.get("choices")), "medusa",
                   f"The Medusa heads {EMBEDDED_ONLY} (models/medusa).", tree=True),
    # the target itself with int8 / int4 weights (issue 48.5): agrees nearly always; what a step costs (c) is the
    # kernel's business, and decides whether it pays (specviz/drafters/quantized.py)
    **{kind: Kind(label, lambda m, t, o, kind=kind: quantized_drafter(t if t is not None else m.target, kind))
       for kind, label in QUANTIZED_LABELS.items()},
}
QUANTIZED = tuple(QUANTIZED_LABELS)  # "int8", "int4", "int8-bf16", "int4-bf16"
LABELS = {k: v.label for k, v in KINDS.items()}


def drafter_choices(models, quantized=()) -> dict[str, str]:
    """label -> kind for the pages' chain pickers, best first; only what these models can run. A draft model
    the user gave is labelled by its name. quantized: QUANTIZED kinds to add after them (the Drafter comparison's
    lesson that acceptance is not speedup; no picker offers the target quantized as a drafter to use)."""
    kinds = (["feature"] if models.feature_draft is not None else []) + (["token"] if models.draft is not None else [])
    kinds += ["ngram", "early-exit"] + [k for k in QUANTIZED if k in quantized]
    return {(models.draft_name if k == "token" else LABELS[k]): k for k in kinds}


def make_drafter(kind: str, models=None, target=None, early_exit_layers: int = 4, **options) -> Drafter:
    """A fresh drafter of `kind` (a KINDS key) on the loaded models. options: choices (Medusa's tree),
    history (the suffix drafter's earlier requests)."""
    kind = ALIASES.get(kind, kind)
    if kind not in KINDS:
        raise SpecVizError(f"Unknown drafter {kind!r}: use one of {', '.join(KINDS)}.")
    entry = KINDS[kind]
    if entry.needs and getattr(models, entry.needs, None) is None:
        # a shipped file that is not there (Models.missing names it) is the reason, when it is one
        raise SpecVizError(getattr(models, "missing", {}).get(entry.needs) or entry.missing)
    return entry.build(models, target, dict(options, early_exit_layers=early_exit_layers))
