"""A `medusa_choices` list typed by a person: parsed and checked, with a message that says what is wrong.

Medusa's trees are lists of paths: (i_1, ..., i_d) is the node holding head d's i_d-th most likely token
under the node (i_1, ..., i_{d-1}); (0,) is head 1's top-1, (1,) its runner-up, (0, 0) head 2's top-1 under
(0,). Every path's parent must be in the list too (the tree needs it to hang from)."""
from __future__ import annotations

import ast

from .errors import SpecVizError


def parse_choices(text: str, num_heads: int, top_k: int = 10, max_nodes: int = 64) -> tuple[tuple[int, ...], ...]:
    """'[(0,), (1,), (0, 0)]' -> ((0,), (1,), (0, 0)). Raises SpecVizError on anything else: not a Python
    list of tuples of ints, an index outside [0, top_k), a path longer than num_heads, a duplicate, a path
    whose parent is missing, more than max_nodes paths."""
    try:
        value = ast.literal_eval(text.strip() or "[]")
    except (ValueError, SyntaxError) as e:
        raise SpecVizError(f"medusa_choices must be a Python list of tuples such as [(0,), (1,), (0, 0)]: "
                           f"{type(e).__name__} ({e}).") from None
    if not isinstance(value, (list, tuple)) or not value:
        raise SpecVizError("medusa_choices must be a non-empty list of paths such as [(0,), (1,), (0, 0)].")
    paths = []
    for item in value:
        if not isinstance(item, (list, tuple)) or not item or not all(type(i) is int for i in item):
            raise SpecVizError(f"{item!r} is not a path: a tuple of candidate indices such as (0, 1).")
        path = tuple(item)
        if any(not 0 <= i < top_k for i in path):
            raise SpecVizError(f"{path}: every index must be in 0..{top_k - 1} (the i-th most likely candidate).")
        if len(path) > num_heads:
            raise SpecVizError(f"{path} is {len(path)} deep, but there are only {num_heads} heads.")
        if path in paths:
            raise SpecVizError(f"{path} appears twice.")
        paths.append(path)
    missing = [p for p in paths if len(p) > 1 and p[:-1] not in paths]
    if missing:
        raise SpecVizError(f"{missing[0]} hangs from {missing[0][:-1]}, which is not in the list: add the parent.")
    if len(paths) > max_nodes:
        raise SpecVizError(f"{len(paths)} paths: at most {max_nodes} (each is a node the target verifies).")
    return tuple(paths)
