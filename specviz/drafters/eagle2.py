"""EAGLE-2 dynamic draft trees (Li et al. 2024, "EAGLE-2: Faster Inference of Language Models with Dynamic
Draft Trees") from the shipped feature draft (feature.py).

A node's value is its cumulative draft probability (the product of q along its root-to-node path), which
the EAGLE-2 paper finds tracks its chance of being accepted. Drafting, depth by depth:

  expand   the top_k nodes of the newest depth by value (at most `budget`) go through the draft in ONE forward (a tree
           mask: each sees the context and its own ancestors in the draft's cache), each giving top_k
           children: min(top_k, budget) * top_k candidates at the next depth;
  rerank   after `depth` levels every candidate is ranked by value and the best `budget` kept (a child's
           value never exceeds its parent's, so the kept set is a tree) for the target's ONE verify pass.

Every choice is deterministic (top-k), so each node's q is one-hot for the verifier: lossless under
sampling too (verify_tree). Draft passes per cycle: 1 (the context) + depth - 1.
"""
from __future__ import annotations

import math

import torch

from specviz.sampling import SamplingConfig, distribution, warpers
from specviz.verify import TokenTree
from specviz.drafters.feature import FeatureDraft, FeatureDrafter, shifted

EAGLE2_LABEL = "EAGLE-2 tree (feature draft)"


class Eagle2Drafter(FeatureDrafter):
    proposes_tree = True

    def __init__(self, model: FeatureDraft, name: str = EAGLE2_LABEL, top_k: int = 6):
        super().__init__(model, name)
        self.top_k = top_k

    @torch.inference_mode()
    def propose_tree(self, ids: list[int], budget: int, depth: int, cfg: SamplingConfig,
                     gen: torch.Generator) -> TokenTree:
        n = len(ids)
        if budget < 1 or depth < 1 or self.feats is None or self.feats.shape[0] < n - 1:
            return TokenTree((), ())
        start = self.cached
        h_root = self._step(ids[start:n], shifted(self.feats[:n - 1])[start:])[-1]
        self.trusted = n
        procs, k = warpers(cfg), self.top_k
        tokens, parents, value, q_tok, h_of = [], [], [], [], {-1: h_root}
        frontier, slot_of = [-1], {}
        for d in range(1, depth + 1):
            q = distribution(self.model.head(torch.stack([h_of[f] for f in frontier])).float(), cfg, procs)
            top = torch.topk(q, k)
            newest = []
            for row, f in enumerate(frontier):
                for x, qx in zip(top.indices[row].tolist(), top.values[row].tolist()):
                    if qx > 0:
                        newest.append(len(tokens))
                        tokens.append(x)
                        parents.append(f)
                        q_tok.append(qx)
                        value.append((value[f] if f >= 0 else 0.0) + math.log(qx))
            if d == depth or not newest:
                break
            # at most `budget` of a depth's nodes can be kept (a kept node's depth-mates of higher value are kept
            # too, and a child never outranks its parent), so expanding more than that only feeds nodes the
            # rerank would drop: the same tree for less work when budget < top_k (a tree sized for a CPU)
            frontier = sorted(newest, key=lambda i: -value[i])[:min(k, budget)]
            for f, h in zip(frontier, self.expand(frontier, tokens, parents, h_of, slot_of, n)):
                h_of[f] = h
        return best_subtree(tokens, parents, value, q_tok, budget)

    def expand(self, nodes: list[int], tokens, parents, h_of, slot_of, n: int) -> torch.Tensor:
        """ONE draft forward over `nodes`: each reads its token and its parent's h, at position n - 1 +
        depth, attending to the context and its ancestors' slots in the draft cache. Returns their h."""
        cached, m = self.cached, len(nodes)
        allowed = torch.zeros(m, cached + m, dtype=torch.bool)
        allowed[:, :n] = True
        positions = []
        for r, i in enumerate(nodes):
            slot_of[i] = cached + r
            a, depth = i, 0
            while a >= 0:
                allowed[r, slot_of[a]] = True
                a, depth = parents[a], depth + 1
            positions.append(n - 1 + depth)
        model = self.model
        tok = torch.tensor([[tokens[i] for i in nodes]], device=model.device)
        feats = torch.stack([h_of[parents[i]] for i in nodes])[None]
        x = model.fc(torch.cat([model.embed_tokens(tok), model.feature(feats)], -1))
        mask = torch.zeros(allowed.shape, dtype=model.dtype).masked_fill(~allowed, torch.finfo(model.dtype).min)
        out = model.lm.model(inputs_embeds=x, attention_mask=mask[None, None].to(model.device),
                             position_ids=torch.tensor([positions], device=model.device),
                             past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.passes += 1
        return out.last_hidden_state[0]


def best_subtree(tokens, parents, value, q_tok, budget: int) -> TokenTree:
    """Rerank every candidate by value and keep the best `budget` (ties: shallower first, so a parent always
    precedes its child and the kept set is a tree), renumbered in their original, parents-first order."""
    depth = []
    for a in parents:
        depth.append(1 if a < 0 else depth[a] + 1)
    keep = sorted(sorted(range(len(tokens)), key=lambda i: (-value[i], depth[i], i))[:budget])
    new = {old: j for j, old in enumerate(keep)}
    assert all(parents[i] < 0 or parents[i] in new for i in keep), "the kept set must be a tree"
    return TokenTree(tuple(tokens[i] for i in keep), tuple(new.get(parents[i], -1) for i in keep), None,
                     tuple(q_tok[i] for i in keep))
