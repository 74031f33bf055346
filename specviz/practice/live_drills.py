"""Live drills: numbers from a real cycle of the embedded model (p, q and u of an actual verify pass, the
candidates of an actual beam step): the learner practises on the model's own numbers, and the page that drew that
cycle is one link away. Each takes (models, seed) and returns a Drill; the same seed reads the same run.

The engine is imported inside the functions, on purpose: formula drills and `python -m specviz drill --list`
answer without loading the engine and its models (seconds on a 2-core machine)."""
from __future__ import annotations

import random

from specviz.errors import SpecVizError
from specviz.practice.drill_grading import Drill
from specviz.practice.drill_grading import numbers as _fmt
from specviz.practice.drill_grading import rounded as _r
from specviz.verify import accept_probability

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


def _clear(v) -> bool:
    """A verdict a learner can rule on from the numbers shown (4 decimals): u is not within 0.01 of min(1, p/q), q
    does not show as 0 (a draft token of probability under 0.00005: "p/0"), and the shown numbers give the engine's
    own decision (p = 0.00036, q = 0.00040 show as 0.0004 and 0.0004, which would accept what the engine rejected)."""
    p, q, u = _r(v.p, 4), _r(v.q, 4), _r(v.u, 4)
    return abs(v.u - v.accept_prob) > 0.01 and q > 0 and (u < accept_probability(p, q)) == bool(v.accepted)


def live_accept(models, seed: int) -> Drill:
    prompt, cycles = live_cycles(models, seed)
    for c in cycles:  # the first cycle with a verdict that does not hinge on rounding
        verdicts = [v for v in c.verdicts if _clear(v)]
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

