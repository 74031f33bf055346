"""Medusa-1 heads (Cai et al. 2024, "Medusa: Simple LLM Inference Acceleration Framework with Multiple
Decoding Heads") for the embedded target, and the static token tree they draft.

The target is frozen (Medusa-1). Head k is a residual block on the target's LAST hidden state (final,
normed) feeding a vocabulary head:

    logits_k(f_t) = head(f_t + SiLU(W_k f_t + b_k))     predicts x_{t+1+k}      (k = 1..H)

The target's own LM head on f_t predicts x_{t+1}. In this engine that token is already decided when
the heads read f_t: after a verify pass the context ends with the target's correction/bonus token
x_{n-1}, and the newest state the drafter holds is f_{n-2}, the one that produced it. So head k reads
f_{n-2} and drafts x_{n-1+k}: head 1 is depth 1 of the tree (the first drafted token), head 2 depth 2,
... every head is a draft, exactly Medusa's layout ("base head gives t+1, head k gives t+1+k"). The first
cycle gets f_{n-2} from the engine's prefill pass over the prompt (speculative.prefill_states).

The vocabulary head is the TARGET's own tied head restricted to the 8192 token ids of the shipped token
draft's reduced head (models/draft), frozen and not stored: the rows are the target's embedding, the ids
the token draft's. Why not the token draft's own trained rows: they score the draft's hidden space, while
f_t lives in the target's, which the target's rows read by construction; so with W_k = 0 (Medusa's
initialisation) head k starts as the target's own next-token head. Why not all 49152 rows: 6x the cost
per head on this CPU for tokens the target almost never emits (the token draft's acceptance is measured
with the same subset).

The tree is STATIC, from a `medusa_choices`-style list: each path (i_1, ..., i_d) is the node whose token
is the i_d-th most likely candidate of head d, under the node (i_1, ..., i_{d-1}). The heads all read the
same f_t, so a node's candidates do not depend on its parent's token: the tree is a subset of the product
of the heads' top-k lists. Each node is a deterministic top-k pick, so its q is one-hot: lossless under
sampling too (verify.verify_tree). The list is settable (MedusaDrafter.choices); the shipped default
(config.json "choices") was chosen as Medusa does, best-first by the product of the heads' measured top-i
accuracies on TRAINING prompts (specviz/training/medusa.py).
"""
from __future__ import annotations

import json
import pathlib

import torch
from safetensors.torch import load_file

from specviz.packed import pack_linears
from specviz.sampling import SamplingConfig
from specviz.verify import TokenTree
from specviz.drafters.build import SubsetHead

MEDUSA_LABEL = "Medusa heads"
# Used when a model's config carries no measured list: top-1 chain of every head plus the runner-ups of
# the first two heads (the shape of Medusa's small hand-written trees).
FALLBACK_CHOICES = ((0,), (1,), (0, 0), (2,), (0, 1), (1, 0), (0, 0, 0), (0, 0, 0, 0))


class MedusaHeads(torch.nn.Module):
    """H residual blocks x + SiLU(W_k x + b_k) on the target's final state, sharing one frozen head."""

    def __init__(self, hidden: int, num_heads: int, head: SubsetHead, read_layer: int, choices=None):
        super().__init__()
        self.read_layer = read_layer  # which of the target's hidden states it reads: the final, normed one
        self.choices = tuple(map(tuple, choices or FALLBACK_CHOICES))  # the default tree (config.json)
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(num_heads))
        for block in self.blocks:  # Medusa's initialisation: each block starts as the identity
            torch.nn.init.zeros_(block.weight)
            torch.nn.init.zeros_(block.bias)
        self.head = head.requires_grad_(False)

    @property
    def num_heads(self) -> int:
        return len(self.blocks)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        """f (..., hidden) -> logits (H, ..., vocab): row k-1 is head k's (predicts k tokens past the next)."""
        x = torch.stack([f + torch.nn.functional.silu(block(f)) for block in self.blocks])
        return self.head(x)


def tree_from_choices(choices, budget: int, depth: int) -> list[tuple[int, ...]]:
    """The paths kept, whatever order the list gives parents and children in. In the list's order (its
    priority: the shipped list is best-first), a path at most `depth` long whose ancestors are all in the
    list is kept together with those ancestors not kept yet, when all of them fit in `budget` nodes. Returned
    sorted by (length, path) as Medusa's generate_medusa_buffers sorts them: parents before children (the
    tree's node order) and, among siblings, the likelier candidate first (the order the verifier tries them).
    Keeping a path only when its parent was kept BEFORE it silently dropped a child listed first."""
    listed = {tuple(p) for p in choices}
    kept: set[tuple[int, ...]] = set()
    for path in map(tuple, choices):
        if not 1 <= len(path) <= depth or path in kept:
            continue
        line = [path[:d] for d in range(1, len(path) + 1)]  # the path and its ancestors, root's child first
        if any(a not in listed for a in line):
            continue  # hangs from nothing: parse_choices refuses such a list with a message
        new = [a for a in line if a not in kept]
        if len(kept) + len(new) <= budget:
            kept.update(new)
    return sorted(kept, key=lambda p: (len(p), p))


def choice_tree(paths: list[tuple[int, ...]], top_ids: torch.Tensor, top_q: torch.Tensor) -> TokenTree:
    """paths (parents-first) and each head's top-k ids and probabilities (H, k) -> the TokenTree."""
    index = {p: i for i, p in enumerate(paths)}
    tokens = tuple(int(top_ids[len(p) - 1, p[-1]]) for p in paths)
    parents = tuple(index[p[:-1]] if len(p) > 1 else -1 for p in paths)
    q_token = tuple(float(top_q[len(p) - 1, p[-1]]) for p in paths)
    return TokenTree(tokens, parents, None, q_token)  # q None: every node is a deterministic (one-hot) pick


class MedusaDrafter:
    """Drafter over MedusaHeads: the engine hands it the target's final states (observe); propose_tree
    reads the newest one and builds the static tree of `choices`."""

    reads_target_states = True
    proposes_tree = True

    def __init__(self, heads: MedusaHeads, choices=None, name: str = MEDUSA_LABEL):
        self.heads, self.name = heads, name
        self.read_layers = (heads.read_layer,)  # what the engine's target Stepper keeps for it
        self.choices = tuple(map(tuple, choices)) if choices else heads.choices  # settable: any list of paths
        self.reset()

    def reset(self) -> None:
        self.feats = None  # (T, hidden): the target's final states at positions 0..T-1
        self.passes = 0

    @property
    def cached(self) -> None:
        return None  # no KV cache: the heads read one state and nothing else

    def observe(self, states: torch.Tensor, start: int) -> None:
        states = states.detach()
        self.feats = states if self.feats is None or start == 0 else torch.cat([self.feats[:start], states])

    def rollback(self, n: int) -> None:
        """Nothing to undo: the states the engine hands over are the accepted positions' only."""

    @torch.inference_mode()
    def head_topk(self, ids: list[int], k: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Each head's top-k (ids, probabilities) (H, k) from the state at position len(ids) - 2, the one
        whose own LM head gave the context's last token; None before the engine has handed it over."""
        n = len(ids)
        if self.feats is None or n < 2 or self.feats.shape[0] < n - 1:
            return None
        f = self.feats[n - 2].to(self.heads.head.ids.device)  # the target's own dtype already
        probs = torch.softmax(self.heads(f).float(), -1).cpu()
        self.passes += 1
        top = torch.topk(probs, k, -1)
        return top.indices, top.values

    def propose_tree(self, ids: list[int], budget: int, depth: int, cfg: SamplingConfig,
                     gen: torch.Generator) -> TokenTree:
        paths = tree_from_choices(self.choices, budget, min(depth, self.heads.num_heads))
        top = self.head_topk(ids, 1 + max((max(p) for p in paths), default=0)) if paths else None
        if top is None:
            return TokenTree((), ())
        return choice_tree(paths, *top)

    def propose(self, ids: list[int], k: int, cfg: SamplingConfig, gen: torch.Generator):
        """As a chain drafter: the top-1 candidate of heads 1..k (choices (0,), (0, 0), ...)."""
        top = self.head_topk(ids, 1) if k >= 1 else None
        if top is None:
            return [], None
        return top[0][:k, 0].tolist(), None


def target_rows(target, ids: torch.Tensor) -> SubsetHead:
    """The target's own (tied) LM-head rows for `ids`, frozen. A packed head has no readable weight, but
    a tied one IS the embedding."""
    weight = getattr(target.lm_head, "weight", None)
    if weight is None or not isinstance(weight, torch.Tensor):
        weight = target.model.embed_tokens.weight
    ids = ids.to(weight.device).long()
    return SubsetHead(weight.detach()[ids].clone(), ids, target.config.vocab_size).requires_grad_(False)


def load(target, path: pathlib.Path, packed: bool = True) -> MedusaHeads:
    """Heads saved by specviz.training.medusa: blocks.* (bf16) in model.safetensors; the head's ids come
    from the token draft named by config "head_ids_from" (relative to the folder's parent), its rows from
    the target; config "choices" is the default tree."""
    meta = json.loads((path / "config.json").read_text())
    ids = load_file(str(path.parent / meta["head_ids_from"] / "model.safetensors"))["head.ids"]
    heads = MedusaHeads(target.config.hidden_size, meta["num_heads"], target_rows(target, ids), meta["read_layer"],
                        meta.get("choices"))
    state = load_file(str(path / "model.safetensors"))
    heads.blocks.load_state_dict({k[len("blocks."):]: v for k, v in state.items() if k.startswith("blocks.")})
    heads.to(target.device, target.dtype).requires_grad_(False).eval()
    if packed:
        pack_linears(heads)  # its blocks and head rows, like the other drafts on CPU
    return heads
