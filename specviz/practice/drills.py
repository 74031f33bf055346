"""Drills: exercises with exact answers, generated deterministically from a seed and graded.

Two sources. Formula drills draw their parameters from a seeded generator (the numbers an interviewer
throws at you: "a = 0.62, c = 0.08: what K?"). Live drills take their numbers from a real cycle of the
embedded model (p, q and u of an actual verify pass, the candidates of an actual beam step): the learner
practises on the model's own numbers, and the page that drew that cycle is one link away.

Every drill carries `given`: every input needed to recompute `answer` independently (the tests do, over many
seeds). Numeric answers are graded with a stated absolute tolerance.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import asdict, dataclass, field

import torch

from specviz.errors import SpecVizError
from specviz.theory import DONT_SPECULATE, best_k, expected_tokens, walltime_improvement
from specviz.verify import accept_probability, residual as residual_of, total_variation

# The live drills import the engine inside their functions, on purpose: formula drills and `python -m specviz
# drill --list` answer without loading torch and transformers (seconds on a 2-core machine)

MAX_RESPONSE = 200  # characters: an answer is a number, a short list or a word


@dataclass(frozen=True)
class Drill:
    kind: str
    seed: int
    question: str  # Markdown; maths between $...$
    given: dict  # every input needed to recompute the answer
    answer: object  # float | int | str | list
    tolerance: float  # absolute, per number (0: exact)
    solution: str  # the worked solution with this drill's own numbers
    page: str = ""  # the app page that shows it
    form: str = "number"  # "number" | "int" | "choice" | "list"
    choices: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        d = asdict(self)
        return {k: d[k] for k in ("kind", "question", "given", "answer", "tolerance", "solution")} | {
            "seed": self.seed, "page": self.page, "form": self.form, "choices": list(self.choices)}


@dataclass(frozen=True)
class Grade:
    right: bool
    message: str  # what was wrong with the response, or "" when it could not be read
    readable: bool = True


@dataclass(frozen=True)
class DrillKind:
    name: str
    title: str
    make: object  # (random.Random, seed) -> Drill, or (models, seed) -> Drill for live kinds
    live: bool = False
    page: str = ""
    blurb: str = field(default="")


def _r(x: float, n: int = 3) -> float:
    return round(float(x), n)


def _fmt(xs) -> str:
    return ", ".join(f"{x:g}" for x in xs)


# ---------------------------------------------------------------- formula drills
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


# ---------------------------------------------------------------- live drills (the embedded model's own numbers)
LIVE_PROMPTS = ["Write a Python function that returns the sum of a list.", "Explain how a hash table works.",
                "What is machine learning?", "List the days of the week.", "Explain how a computer works.",
                "Write a haiku about the sea."]


def live_cycles(models, seed: int, drafter: str | None = None, max_cycles: int = 6, sampling: bool = True):
    """The prompt and a generator of the cycles of a real speculative run, deterministic by seed (prompt and
    sampling seed from it). A generator: a drill stops at the first cycle it can use (a drill on screen in
    well under a second needs one or two cycles, not six). Drafter: the token draft, or, with a pair that has no
    draft model, the target's own early exit (it works with any target)."""
    drafter = drafter or ("token" if models.draft is not None else "early-exit")
    from specviz.drafters import make_drafter
    from specviz.prompting import prompt_ids
    from specviz.sampling import SamplingConfig
    from specviz.engine.speculative import speculative_steps

    prompt = LIVE_PROMPTS[seed % len(LIVE_PROMPTS)]
    ids = prompt_ids(models.tokenizer, prompt)
    cfg = SamplingConfig(1.0 if sampling else 0.0, 0, 1.0, seed)
    # an early exit at 4 layers, or fewer on a small target
    layers = max(1, min(4, models.target.config.num_hidden_layers - 1))
    steps = speculative_steps(models.target, make_drafter(drafter, models, early_exit_layers=layers),
                              models.tokenizer, ids, 64, 4, cfg, False)

    def cycles():
        for n, cycle in enumerate(steps):
            yield cycle
            if n + 1 >= max_cycles:
                return
    return prompt, cycles()


def _draft(models) -> str:
    """Who drafted in live_cycles, in a sentence."""
    return "the token draft" if models.draft is not None else "the target's early exit"


def _tok(text: str) -> str:
    """A token's text inside a question: visible spaces and newlines."""
    return "“" + text.replace("\n", "↵") + "”"


def live_accept(models, seed: int) -> Drill:
    prompt, cycles = live_cycles(models, seed)
    for c in cycles:  # the first cycle with a verdict that does not hinge on rounding
        verdicts = [v for v in c.verdicts if abs(v.u - v.accept_prob) > 0.01]
        if verdicts:
            break
    else:
        raise SpecVizError("No verdict in this run's first cycles: try another seed.")
    v = verdicts[random.Random(seed).randrange(len(verdicts))]
    p, q, u = _r(v.p, 4), _r(v.q, 4), _r(v.u, 4)
    verdict = "accept" if u < accept_probability(p, q) else "reject"
    return Drill(
        "live-accept", seed,
        f"From a real cycle of the model (prompt “{prompt}”, cycle {c.cycle + 1}, draft position "
        f"{v.position + 1}): {_draft(models)} proposed {_tok(v.text)} with $q = {q}$, the target gives it $p = {p}$, "
        f"and the draw was $u = {u}$. Accept or reject?",
        dict(p=p, q=q, u=u, prompt=prompt, cycle=c.cycle, position=v.position), verdict, 0.0,
        f"$\\min(1, p/q) = \\min(1, {p}/{q}) = {accept_probability(p, q):.4f}$; $u = {u}$ is "
        f"{'below' if verdict == 'accept' else 'not below'} it: **{verdict}**. (The engine decided the same: "
        f"{'accepted' if v.accepted else 'rejected'}.)",
        "pages/2_Speculative_decoding.py", "choice", ("accept", "reject"))


def live_residual(models, seed: int) -> Drill:
    for attempt in range(4):  # a run whose first cycles reject nothing: the next seed's run
        prompt, cycles = live_cycles(models, seed + 1000 * attempt)
        rejected = next(((c, v) for c in cycles for v in c.verdicts if not v.accepted), None)
        if rejected:
            break
    else:
        raise SpecVizError("No rejection in this run's first cycles: try another seed.")
    c, v = rejected
    text = {t.id: t.text for t in list(v.p_top) + list(v.q_top)} | {v.token: v.text}
    pmap, qmap = {t.id: t.prob for t in v.p_top} | {v.token: v.p}, {t.id: t.prob for t in v.q_top} | {v.token: v.q}
    # the rejected token first, then tokens whose p AND q the trace holds (a token outside one top list has an
    # unknown probability there, not 0). The residual is taken token by token over the WHOLE vocabulary: lumping
    # the rest into one "other" bucket first would give max(0, sum p - sum q), which cancels mass inside the bucket.
    # So "other" gets its share of the engine's residual, sum over its tokens of max(0, p - q), from the trace.
    ids = [v.token] + [t.id for t in v.p_top if t.id in qmap and t.id != v.token][:3]
    p = [_r(pmap[i], 4) for i in ids]
    q = [_r(qmap[i], 4) for i in ids]
    listed = sum(max(0.0, pmap[i] - qmap[i]) for i in ids)
    other = _r(max(0.0, c.residual_mass - listed), 4)
    tokens = [_tok(text[i]) for i in ids]
    pos = [max(0.0, a - b) for a, b in zip(p, q)] + [other]
    answer = [_r(x / sum(pos)) for x in pos]
    return Drill(
        "live-residual", seed,
        f"A real rejection (prompt “{prompt}”, cycle {c.cycle + 1}): the draft's {_tok(v.text)} was rejected. For "
        f"the tokens {', '.join(tokens)}, target $p = ({_fmt(p)})$ and draft $q = ({_fmt(q)})$; over the rest of "
        f"the vocabulary, token by token, $\\sum \\max(0, p - q) = {other:g}$. Give the residual "
        f"$\\mathrm{{normalize}}(\\max(0, p - q))$ as {len(pos)} numbers: the {len(tokens)} tokens, then the rest "
        "of the vocabulary as one bucket.",
        dict(p=p, q=q, other=other, tokens=tokens + ["other"], token_ids=ids, prompt=prompt, cycle=c.cycle),
        answer, 0.01,
        f"$\\max(0, p - q) = ({_fmt(_r(x, 4) for x in pos[:-1])})$ and {other:g} for the rest, sum {sum(pos):.4f} "
        f"(= TV(p, q)); normalised: $({_fmt(answer)})$ — the engine's own residual, summed per bucket. The rejected "
        f"{_tok(v.text)} gets nothing: the draft over-proposed it ($q > p$). Note the rest is not "
        "$\\max(0, \\sum p - \\sum q)$: inside it some tokens have $p > q$ and others $p < q$, and only the "
        "positive parts count. The next token is drawn from the residual"
        + ((f": here the engine drew {_tok(c.new_text)}" + ("" if c.new_token in ids else ", from the rest") + ".")
           if c.new_origin == "resampled" else "."),
        "pages/2_Speculative_decoding.py", "list")


def live_greedy_verify(models, seed: int) -> Drill:
    prompt, cycles = live_cycles(models, seed, sampling=False)
    # cycle 1, 2 or 3 by seed (greedy runs of one prompt are the same run: the seed picks the cycle)
    usable = [c for c, _ in zip((c for c in cycles if c.k and len(c.target_top) == c.k + 1), range(1 + seed % 3))]
    c = usable[-1]
    drafts = [d.text for d in c.drafts]
    target = [t.text for t in c.target_top]
    return Drill(
        "live-greedy-verify", seed,
        f"A real greedy cycle (prompt “{prompt}”, cycle {c.cycle + 1}, K = {c.k}): {_draft(models)} proposed "
        f"{', '.join(_tok(t) for t in drafts)}; the target's argmax at positions 1..{c.k + 1} of its verify pass is "
        f"{', '.join(_tok(t) for t in target)}. How many drafts are accepted?",
        dict(drafts=drafts, target_argmax=target, draft_ids=[d.token for d in c.drafts],
             target_argmax_ids=[t.id for t in c.target_top], prompt=prompt, cycle=c.cycle), c.accepted, 0.0,
        f"Accepted while draft = argmax: **{c.accepted}**; then the target's {_tok(target[c.accepted])} is committed "
        f"as the {'bonus' if c.accepted == c.k else 'correction'} token: {c.accepted + 1} "
        f"token{'s' if c.accepted else ''} for one target pass.",
        "pages/2_Speculative_decoding.py", "int")


def live_beam_prune(models, seed: int) -> Drill:
    from specviz.engine.beam import beam_steps
    from specviz.prompting import prompt_ids
    rng = random.Random(seed)
    prompt = LIVE_PROMPTS[seed % len(LIVE_PROMPTS)]
    B = rng.choice([2, 3, 4])
    steps = list(beam_steps(models.target, models.tokenizer, prompt_ids(models.tokenizer, prompt), B,
                            rng.randint(2, 4), 1.0, 6))
    step = steps[-1]
    # the step's B best running candidates and a few runners-up, listed by beam, not by score: the learner adds
    # each beam's total log-prob and the token's log p, as beam search does, then ranks
    shown = sorted([c for c in step.candidates if c.status in ("kept", "pruned")][: B + 3],
                   key=lambda c: (c.parent, c.token))
    beams = [step.beams_before[c.parent] for c in shown]
    scores = [_r(b.logprob, 3) + _r(c.logprob, 3) for b, c in zip(beams, shown)]
    order = sorted(range(len(shown)), key=lambda i: -scores[i])
    keep = sorted(order[:B])
    letters = [chr(65 + i) for i in range(len(shown))]
    lines = "; ".join(f"{x}: beam {c.parent + 1} (total log-prob {b.logprob:.3f}) + {_tok(c.text)} (log p "
                      f"{c.logprob:.3f})" for x, b, c in zip(letters, beams, shown))
    return Drill(
        "live-beam-prune", seed,
        f"A real beam step (prompt “{prompt}”, B = {B}, step {step.step + 1}). Candidates, each a running beam "
        f"extended by one token: {lines}. Which {B} survive the prune (letters, comma-separated)?",
        dict(parent_scores=[_r(b.logprob, 3) for b in beams], token_logprobs=[_r(c.logprob, 3) for c in shown],
             beams=B, names=letters, prompt=prompt), [letters[i] for i in keep], 0.0,
        "Each candidate's cumulative log-prob = its beam's total + the token's log p: "
        + ", ".join(f"{letters[i]} {scores[i]:.3f}" for i in order)
        + f". Keep the {B} highest (running beams compete on total log-prob; the length penalty ranks finished "
          f"hypotheses): **{', '.join(letters[i] for i in keep)}**. A likely token on a weak beam can lose to a "
          "less likely token on a strong one.",
        "pages/1_Beam_search.py", "list")


DRILLS: dict[str, DrillKind] = {k.name: k for k in [
    DrillKind("accept", "Accept or reject (p, q, u)", accept, page="pages/2_Speculative_decoding.py"),
    DrillKind("residual", "The residual after a rejection", residual, page="pages/4_Lossless_lab.py"),
    DrillKind("tokens-per-pass", "Expected tokens per verify pass", tokens_per_pass, page="pages/3_Speedup_lab.py"),
    DrillKind("walltime", "Walltime improvement", walltime, page="pages/3_Speedup_lab.py"),
    DrillKind("best-k", "The best K (or don't speculate)", best_k_drill, page="pages/3_Speedup_lab.py"),
    DrillKind("acceptance-rate", "Acceptance rate from p and q", acceptance_rate, page="pages/4_Lossless_lab.py"),
    DrillKind("kv-gib", "KV-cache memory", kv_gib, page="pages/8_Serving_lab.py"),
    DrillKind("greedy-verify", "Greedy verification", greedy_verify, page="pages/2_Speculative_decoding.py"),
    DrillKind("roofline-batch", "Where the roofline turns compute-bound", roofline_batch,
              page="pages/8_Serving_lab.py"),
    DrillKind("beam-rank", "Length penalty: which hypothesis wins", beam_rank, page="pages/1_Beam_search.py"),
    DrillKind("tree-walk", "Greedy walk of a draft tree", tree_walk, page="pages/7_Tree_speculation.py"),
    DrillKind("live-accept", "Live: accept or reject a real draft token", live_accept, True,
         "pages/2_Speculative_decoding.py"),
    DrillKind("live-residual", "Live: the residual of a real rejection", live_residual, True,
         "pages/2_Speculative_decoding.py"),
    DrillKind("live-greedy-verify", "Live: greedy verification of a real cycle", live_greedy_verify, True,
         "pages/2_Speculative_decoding.py"),
    DrillKind("live-beam-prune", "Live: which real beam candidates survive", live_beam_prune, True,
         "pages/1_Beam_search.py"),
]}


def make(kind: str, seed: int, models=None) -> Drill:
    """The drill of `kind` for `seed` (the same drill every time); live kinds need the loaded models."""
    if kind not in DRILLS:
        raise SpecVizError(f"Unknown drill kind {kind[:40]!r}: use one of {', '.join(DRILLS)}.")
    if not 0 <= seed < 2 ** 31:
        raise SpecVizError(f"The seed must be in 0..2^31 - 1; got {seed}.")
    k = DRILLS[kind]
    if k.live:
        if models is None:
            raise SpecVizError(f"The {kind} drill reads a real run: it needs the embedded model loaded.")
        return k.make(models, seed)
    return k.make(random.Random(f"{kind}:{seed}"), seed)


# ---------------------------------------------------------------- grading
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?$")


def _number(text: str) -> float | None:
    text = text.strip().rstrip("×x").strip()
    if text.endswith("%"):
        v = _number(text[:-1])
        return None if v is None else v / 100
    if not NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None  # 1e400 is inf: not an answer


def grade(drill: Drill, response: str) -> Grade:
    """Grade a typed response (bounded, parsed without eval or recursion)."""
    text = str(response)[:MAX_RESPONSE].strip()
    if not text:
        return Grade(False, "Type an answer first.", readable=False)
    if drill.form == "choice":
        pick = text.lower()
        match = [c for c in drill.choices if c.lower() == pick or c.lower().startswith(pick) and len(pick) >= 1]
        if len(match) != 1:
            return Grade(False, f"Answer one of: {', '.join(drill.choices)}.", readable=False)
        right = match[0] == drill.answer  # the messages never give the answer away: the learner may try again
        return Grade(right, "" if right else f"You said {match[0]}.")
    if drill.form == "list":
        parts = [p for p in re.split(r"[,\s;]+", text.strip("()[] ")) if p]
        if isinstance(drill.answer[0], str):  # letters: a set, any order
            got = sorted(p.upper() for p in parts)
            right = got == sorted(drill.answer)
            return Grade(right, "" if right else f"You chose {', '.join(got)}.")
        values = [_number(p) for p in parts]
        if any(v is None for v in values) or len(values) != len(drill.answer):
            return Grade(False, f"Give {len(drill.answer)} numbers separated by commas.", readable=False)
        off = [i for i, (v, a) in enumerate(zip(values, drill.answer)) if abs(v - a) > drill.tolerance + 1e-9]
        return Grade(not off, "" if not off else f"Off by more than {drill.tolerance:g} at position(s) "
                     + ", ".join(str(i + 1) for i in off) + ".")
    value = _number(text)
    if value is None:
        return Grade(False, "Give a number (e.g. 2.31).", readable=False)
    if drill.form == "int" and value != int(value):
        return Grade(False, "Give a whole number.", readable=False)
    right = abs(value - float(drill.answer)) <= drill.tolerance + 1e-9
    tol = f"more than ±{drill.tolerance:g} from the answer" if drill.tolerance else "not the answer"
    return Grade(right, "" if right else f"You said {value:g}: {tol}.")
