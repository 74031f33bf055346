"""Formula drills: parameters drawn from a generator seeded by (kind, seed), no model needed (the numbers an
interviewer throws at you: "a = 0.62, c = 0.08: what K?"). Each takes (random.Random, seed) and returns a Drill
whose `given` holds every input needed to recompute its answer."""
from __future__ import annotations

import math
import random

import torch

from specviz.practice.drill_grading import Drill
from specviz.practice.drill_grading import numbers as _fmt
from specviz.practice.drill_grading import rounded as _r
from specviz.theory import DONT_SPECULATE, best_k, expected_tokens, walltime_improvement
from specviz.verify import accept_probability, residual as residual_of, total_variation


def accept(rng: random.Random, seed: int) -> Drill:
    while True:  # no near-tie between u and the threshold: the verdict must not hinge on rounding
        p, q, u = _r(rng.uniform(0.02, 0.9), 2), _r(rng.uniform(0.05, 0.95), 2), _r(rng.random(), 2)
        if abs(u - accept_probability(p, q)) > 0.03:
            break
    ratio = accept_probability(p, q)  # the engine's accept test: u < min(1, p/q)
    verdict = "accept" if u < ratio else "reject"
    return Drill(
        "accept", seed,
        f"Rejection sampling. The draft proposed token x with $q(x) = {q}$; the target gives it $p(x) = {p}$; the "
        f"uniform draw is $u = {u}$. Accept or reject?",
        dict(p=p, q=q, u=u), verdict, 0.0,
        f"Accept when $u < \\min(1, p/q)$: $\\min(1, {p}/{q}) = {ratio:.3f}$, and $u = {u}$ is "
        f"{'below' if u < ratio else 'not below'} it, so **{verdict}**."
        + (" A token the target likes at least as much as the draft ($p \\ge q$) is always accepted." if p >= q else
           f" The draft over-proposes x ($q > p$), so only a fraction {ratio:.3f} of its proposals survive."),
        "pages/2_Speculative_decoding.py", "choice", ("accept", "reject"))


def _dist(rng: random.Random, n: int) -> list[float]:
    """n probabilities with two decimals summing to exactly 1."""
    cuts = sorted(rng.sample(range(1, 100), n - 1))
    return [(b - a) / 100 for a, b in zip([0] + cuts, cuts + [100])]


def residual(rng: random.Random, seed: int) -> Drill:
    while True:
        p, q = _dist(rng, 4), _dist(rng, 4)
        if any(pi > qi for pi, qi in zip(p, q)):
            break
    answer = [_r(x) for x in residual_of(torch.tensor(p, dtype=torch.float64), torch.tensor(q, dtype=torch.float64))[0]]
    pos = [max(0.0, pi - qi) for pi, qi in zip(p, q)]  # the explanation's arithmetic, step by step
    tokens = ["A", "B", "C", "D"]
    return Drill(
        "residual", seed,
        f"Over four tokens {', '.join(tokens)}: target $p = ({_fmt(p)})$, draft $q = ({_fmt(q)})$. The draft token was "
        "rejected. Give the residual distribution $\\mathrm{normalize}(\\max(0, p - q))$ the next token is drawn "
        "from, as four numbers.",
        dict(p=p, q=q, tokens=tokens), answer, 0.01,
        f"$\\max(0, p - q) = ({_fmt(_r(x) for x in pos)})$, summing to {sum(pos):.2f}; divided by that sum: "
        f"$({_fmt(answer)})$. Tokens the draft over-proposed ($q \\ge p$) get nothing: they already received their "
        "full $p$ on the accept branch. Drawing from p instead would give every token an extra $(1 - \\beta)\\,p(x)$ "
        "on top of $\\min(p(x), q(x))$ ($\\beta$ = the acceptance probability): $\\min(p, q) + (1 - \\beta)p "
        "\\ne p$ whenever $\\beta < 1$, and the over-proposed tokens end above their $p$.",
        "pages/4_Lossless_lab.py", "list")


def tokens_per_pass(rng: random.Random, seed: int) -> Drill:
    a, k = _r(rng.uniform(0.4, 0.95), 2), rng.randint(2, 8)
    answer = _r(expected_tokens(a, k))
    return Drill(
        "tokens-per-pass", seed,
        f"Each drafted token is accepted with probability $a = {a}$, independently. With $K = {k}$ drafts per cycle, "
        "how many tokens does one verify pass commit on average (the bonus or correction token included)?",
        dict(a=a, k=k), answer, 0.01,
        f"$1 + a + \\dots + a^K = \\frac{{1 - a^{{K+1}}}}{{1 - a}} = "
        f"\\frac{{1 - {a}^{{{k + 1}}}}}{{1 - {a}}} = {answer}$. "
        f"The ceiling is $K + 1 = {k + 1}$ (every draft accepted plus the bonus).",
        "pages/3_Speedup_lab.py")


def walltime(rng: random.Random, seed: int) -> Drill:
    a, k, c = _r(rng.uniform(0.5, 0.9), 2), rng.randint(2, 8), _r(rng.uniform(0.02, 0.3), 2)
    v = 1.0 if rng.random() < 0.5 else _r(rng.uniform(1.05, 1.8), 2)
    answer = _r(walltime_improvement(a, k, c, v))
    tokens = expected_tokens(a, k)
    return Drill(
        "walltime", seed,
        f"$a = {a}$, $K = {k}$, a draft step costs $c = {c}$ of a target step, and the verify pass over K + 1 tokens "
        f"costs $v = {v:g}$ target steps. What walltime improvement over plain decoding do you expect?",
        dict(a=a, k=k, c=c, v=v), answer, 0.01,
        f"Tokens per cycle $\\frac{{1 - a^{{K+1}}}}{{1 - a}} = {tokens:.3f}$; "
        f"cost per cycle $Kc + v = {k}·{c} + {v:g} = "
        f"{k * c + v:.3f}$ target steps; improvement $= {tokens:.3f} / {k * c + v:.3f} = {answer}$×"
        + (" (v = 1 is Leviathan et al.'s formula: verification as cheap as one step)." if v == 1.0 else
           " (v > 1: the verify pass is not free, as on a CPU or at large batch)."),
        "pages/3_Speedup_lab.py")


K_CAP = 16  # the largest K the best-k drill offers


def _gains(a: float, c: float, v: float) -> list[float]:
    """The estimated improvement of every K in 1..K_CAP, best first."""
    return sorted((walltime_improvement(a, k, c, v) for k in range(1, K_CAP + 1)), reverse=True)


def best_k_drill(rng: random.Random, seed: int) -> Drill:
    while True:  # the best K must stand out: the runner-up at least 1 % worse, or no K near 1
        a, c = _r(rng.uniform(0.3, 0.95), 2), _r(rng.uniform(0.02, 0.6), 2)
        v = 1.0 if rng.random() < 0.6 else _r(rng.uniform(1.05, 1.5), 2)
        gains = _gains(a, c, v)
        if gains[0] > 1.01 and gains[1] < gains[0] * 0.99 or gains[0] < 0.99:
            break
    return best_k_for(seed, a, c, v)


def best_k_for(seed: int, a: float, c: float, v: float) -> Drill:
    """The best-k drill at given a, c, v (its worked solution shows the improvement around the peak)."""
    gains = _gains(a, c, v)
    k = best_k(a, c, v, K_CAP)
    capped = k == K_CAP and walltime_improvement(a, K_CAP + 1, c, v) > walltime_improvement(a, K_CAP, c, v)
    # the window around the peak stays inside 1..K_CAP: at the cap there is no K + 1 to show
    where = ", ".join(f"K={j}: {walltime_improvement(a, j, c, v):.3f}"
                      for j in range(max(1, k - 1), min(K_CAP, (k or 1) + 1) + 1))
    return Drill(
        "best-k", seed,
        f"$a = {a}$, $c = {c}$, $v = {v:g}$. Which K in 1..{K_CAP} maximises the estimated walltime improvement "
        "$\\frac{1 - a^{K+1}}{(1 - a)(Kc + v)}$? Answer 0 if no K beats plain decoding (don't speculate).",
        dict(a=a, c=c, v=v, k_max=K_CAP), k, 0.0,
        (f"Evaluate the improvement per K near the cap: {where}. It still rises at K = {K_CAP}: the optimum is "
         f"capped, **K = {K_CAP}** is the best allowed (without the cap a larger K would do better still)."
         if capped else
         f"Evaluate the improvement per K around the peak: {where}. It rises while one more draft adds more "
         f"expected tokens than it costs, then falls: the best is **K = {k}**." if k != DONT_SPECULATE else
         f"Even the best K gives {gains[0]:.3f} ≤ 1: **don't speculate** (0)."
         + (" With v = 1 this happens exactly when a ≤ c (Leviathan et al., Corollary 3.9)." if v == 1.0 else "")),
        "pages/3_Speedup_lab.py", "int")


def acceptance_rate(rng: random.Random, seed: int) -> Drill:
    p, q = _dist(rng, 4), _dist(rng, 4)
    tv = total_variation(p, q)
    answer = _r(1 - tv, 2)  # sum min(p, q) = 1 - TV(p, q)
    return Drill(
        "acceptance-rate", seed,
        f"Over four tokens: target $p = ({_fmt(p)})$, draft $q = ({_fmt(q)})$. What is the probability that a draft "
        "token sampled from q is accepted by rejection sampling?",
        dict(p=p, q=q), answer, 0.005,
        f"$\\sum_x q(x)\\min(1, p(x)/q(x)) = \\sum_x \\min(p(x), q(x)) = {answer}$, which is $1 - \\mathrm{{TV}}(p, q) "
        f"= 1 - {tv:.2f}$.", "pages/4_Lossless_lab.py")


MODELS = [  # (name, layers, KV heads, head dim): shapes of public configs a learner is asked about
    ("Llama-3-8B-like", 32, 8, 128), ("Llama-3-70B-like", 80, 8, 128), ("Mistral-7B-like", 32, 8, 128),
    ("13B-like without GQA", 40, 40, 128), ("Qwen2.5-1.5B-like", 28, 2, 128), ("SmolLM2-135M", 30, 3, 64)]


def kv_gib(rng: random.Random, seed: int) -> Drill:
    name, layers, kv_heads, head_dim = rng.choice(MODELS)
    bytes_per_value = rng.choice([2, 2, 1])
    batch, context = rng.choice([1, 4, 8, 16, 32, 64]), rng.choice([2048, 4096, 8192, 32768, 131072])
    per_token = 2 * layers * kv_heads * head_dim * bytes_per_value
    gib = per_token * batch * context / 2 ** 30
    answer = _r(gib, 3)
    return Drill(
        "kv-gib", seed,
        f"Model {name}: {layers} layers, {kv_heads} KV heads of dimension {head_dim}, KV cache in "
        f"{'fp8' if bytes_per_value == 1 else 'bf16'} ({bytes_per_value} byte{'s' if bytes_per_value > 1 else ''} per "
        f"value). How many GiB does the KV cache of a batch of {batch} sequences of {context:,} tokens take?",
        dict(layers=layers, kv_heads=kv_heads, head_dim=head_dim, bytes_per_value=bytes_per_value, batch=batch,
             context=context), answer, max(0.01, _r(0.01 * gib, 3)),
        f"Per token: 2 (K and V) × {layers} layers × {kv_heads} KV heads × {head_dim} × {bytes_per_value} B = "
        f"{per_token:,} B. × {batch} × {context:,} tokens = {per_token * batch * context:,} B = **{answer} GiB** "
        "(÷ 2³⁰).", "pages/8_Serving_lab.py")


def greedy_verify(rng: random.Random, seed: int) -> Drill:
    words = ["the", "cat", "sat", "on", "a", "mat", "and", "slept", "there", "all", "day", "long"]
    k = rng.randint(3, 6)
    drafts = rng.sample(words, k)
    accepted = rng.randint(0, k)
    target = drafts[:accepted] + [rng.choice([w for w in words if w not in drafts[accepted:accepted + 1]])
                                  for _ in range(k + 1 - accepted)]
    next_token = target[accepted]
    return Drill(
        "greedy-verify", seed,
        f"Greedy verification, K = {k}. The draft proposed {', '.join(f'“{w}”' for w in drafts)}. In its one verify "
        f"pass the target's argmax at positions 1..{k + 1} is {', '.join(f'“{w}”' for w in target)}. How many drafts "
        "are accepted?",
        dict(drafts=drafts, target_argmax=target), accepted, 0.0,
        f"Walk the positions while the draft equals the target's argmax: {accepted} match"
        + (f", then “{drafts[accepted]}” ≠ “{next_token}”. The cycle commits {accepted} accepted + the target's "
           f"“{next_token}” as the correction = {accepted + 1} tokens." if accepted < k else
           f"es, all of them: the cycle commits {k} + the bonus token “{next_token}” from position {k + 1} = "
           f"{k + 1} tokens."), "pages/2_Speculative_decoding.py", "int")


DEVICES = [  # (name, dense bf16 tensor FLOP/s, memory bandwidth B/s) from the vendors' data sheets
    ("A100 SXM 80GB", 312e12, 2.039e12), ("H100 SXM", 989e12, 3.35e12), ("H200 SXM", 989e12, 4.8e12),
    ("L4", 121e12, 0.3e12), ("A10", 125e12, 0.6e12), ("MI300X", 1307e12, 5.3e12)]


def roofline_batch(rng: random.Random, seed: int) -> Drill:
    name, flops, bandwidth = rng.choice(DEVICES)  # real pairs: no device has 150 TFLOP/s with 0.1 TB/s
    tokens = rng.choice([1, 1, 2, 5, 8])
    bytes_per_value = 2
    ridge = flops / bandwidth
    answer = max(1, math.ceil(ridge * bytes_per_value / (2.0 * tokens)))
    return Drill(
        "roofline-batch", seed,
        f"An {name}: {flops / 1e12:g} TFLOP/s dense bf16 and {bandwidth / 1e12:g} TB/s. Weights in bf16 (2 bytes). "
        f"Each sequence feeds {tokens} token{'s' if tokens > 1 else ''} per step (1: decode; more: a verify pass). "
        "From which batch size on are the linear layers compute-bound (smallest integer; ±1 accepted, as a ridge "
        "rounded to whole FLOP/byte moves it by one)?",
        dict(flops=flops, bandwidth=bandwidth, tokens_per_seq=tokens, bytes_per_value=bytes_per_value, device=name),
        answer, 1.0,
        f"Ridge point: {flops / 1e12:g}e12 / {bandwidth / 1e12:g}e12 = {ridge:.1f} FLOP/byte. Linear layers do 2 FLOPs "
        f"per weight per token and read each 2-byte weight once per step: intensity = 2·B·{tokens} / 2 = "
        f"B·{tokens}. B·{tokens} ≥ {ridge:.1f} → **B = {answer}** (the ridge taken as {round(ridge)} gives "
        f"{max(1, math.ceil(round(ridge) / tokens))}).", "pages/8_Serving_lab.py", "int")


def beam_rank(rng: random.Random, seed: int) -> Drill:
    alpha = rng.choice([0.0, 0.5, 1.0, 2.0])
    while True:
        hyps = [(_r(-rng.uniform(1.5, 12.0), 2), rng.randint(3, 20)) for _ in range(3)]
        scores = [lp / n ** alpha for lp, n in hyps]
        order = sorted(range(3), key=lambda i: -scores[i])
        if scores[order[0]] - scores[order[1]] > 0.02:
            break
    names = ["A", "B", "C"]
    return Drill(
        "beam-rank", seed,
        "Three finished beam hypotheses, (total log-prob, length in tokens): "
        + ", ".join(f"{n} = ({lp}, {L})" for n, (lp, L) in zip(names, hyps))
        + f". With length penalty $\\alpha = {alpha:g}$ (score $= \\log p / L^{{\\alpha}}$), which one does beam "
          "search return?",
        dict(hypotheses=[list(h) for h in hyps], names=names, length_penalty=alpha), names[order[0]], 0.0,
        "Scores: " + ", ".join(f"{n}: {lp}/{L}^{alpha:g} = {s:.3f}" for n, (lp, L), s in zip(names, hyps, scores))
        + f". Highest (closest to 0): **{names[order[0]]}**."
        + (" α = 0 compares raw log-probs, which favours short hypotheses." if alpha == 0 else
           " Raising α favours longer hypotheses." if alpha > 1 else ""),
        "pages/1_Beam_search.py", "choice", tuple(names))


def tree_walk(rng: random.Random, seed: int) -> Drill:
    """A drafted token tree and the target's argmax after every node (all from ONE verify pass over the tree):
    greedy verification walks from the root to the child equal to the argmax there, as deep as it goes."""
    words = ["the", "a", "cat", "dog", "sat", "ran", "on", "in", "mat", "park", "and", "then"]
    parents, tokens = [-1], ["(root)"]  # node 0: the last committed token
    for n in range(1, rng.randint(5, 8)):
        parent = rng.randrange(n)
        siblings = {tokens[i] for i in range(n) if parents[i] == parent}
        tokens.append(rng.choice([w for w in words if w not in siblings]))
        parents.append(parent)
    children = {i: [j for j in range(len(parents)) if parents[j] == i] for i in range(len(parents))}
    # the target's argmax after each node: often one of its children (so the walk goes somewhere), else a new word
    argmax = [tokens[rng.choice(children[i])] if children[i] and rng.random() < 0.75 else rng.choice(words)
              for i in range(len(parents))]
    path, node = [], 0
    while True:
        nxt = [j for j in children[node] if tokens[j] == argmax[node]]
        if not nxt:
            break
        node = nxt[0]
        path.append(node)
    listing = "; ".join(f"node {j}: “{tokens[j]}” (child of {parents[j]})" for j in range(1, len(parents)))
    return Drill(
        "tree-walk", seed,
        f"A drafted token tree, verified in ONE target pass. {listing}. The target's argmax after each node: "
        + ", ".join(f"{j}: “{w}”" for j, w in enumerate(argmax))
        + ". With greedy verification, how many drafted tokens does the walk accept?",
        dict(parents=parents, tokens=tokens, target_argmax=argmax), len(path), 0.0,
        "From the root take the child equal to the target's argmax there, and repeat: "
        + (" → ".join(f"node {j} “{tokens[j]}”" for j in path) if path else "no child of the root matches")
        + f". **{len(path)} accepted**, then the target's “{argmax[node]}” after node {node} is committed too "
          f"({len(path) + 1} tokens for one pass). Sibling branches are discarded with their KV entries.",
        "pages/7_Tree_speculation.py", "int")

