"""Early exit: the target's first L layers + its final norm + its head, untrained, as the draft.
Free to build and it shares the target's weights, but its guesses agree with the target's less than a
third of the time: the honest bad drafter, and the reason self-speculation methods train their exits."""
from __future__ import annotations

import torch

from specviz.errors import SpecVizError
from specviz.drafters.build import assemble
from specviz.drafters.model import ModelDrafter


def early_exit_model(target, num_layers: int):
    total = target.config.num_hidden_layers
    if not 1 <= num_layers < total:
        raise SpecVizError(f"Early exit needs 1 <= L < {total} layers; got {num_layers}.")
    # the target's own first layers (shared, not copied): their cache slots 0..L-1 stay as they are
    return assemble(target, torch.nn.ModuleList(target.model.layers[:num_layers]), target.model.norm)


def early_exit_drafter(target, num_layers: int) -> ModelDrafter:
    return ModelDrafter(early_exit_model(target, num_layers), f"early exit (first {num_layers} layers)")
