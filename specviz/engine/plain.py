"""Plain autoregressive decoding: one target forward per token. Temperature 0 is greedy (argmax);
above 0 it samples from the processed distribution with the run's own seeded generator.

The baseline every speedup is measured against, and the exact reference speculative decoding must
reproduce.
"""
from __future__ import annotations

import math
from collections.abc import Generator

from specviz.sampling import SamplingConfig, choose, distribution, new_generator, warpers
from specviz.engine.loop import Decoding, record_token, run_cycles
from specviz.stepper import Stepper
from specviz.tokens import token_text, top_probs
from specviz.trace import Result, TokenStep


def plain_steps(model, tokenizer, prompt_ids: list[int], max_new_tokens: int,
                 cfg: SamplingConfig = SamplingConfig(), top_n: int = 5,
                 laps: list | None = None, details: bool = True) -> Generator[TokenStep, None, Result]:
    """laps: a list to receive the end time of each stage of each step (Decoding.lap), for the timeline.
    details=False: each step records its token and log-prob only, no text or top tokens (the benchmark, the CLI:
    nobody draws the steps; the tokens are the same)."""
    cfg.validate()
    stepper, gen, procs = Stepper(model), new_generator(cfg.seed), warpers(cfg)
    logprob = 0.0

    def cycle(d: Decoding) -> tuple[TokenStep, list[int]]:
        nonlocal logprob
        probs = distribution(stepper.logits(d.ids, 1), cfg, procs)[0].cpu()
        d.lap("verify")  # the one target forward (the stage a speculative cycle calls verify)
        token = choose(probs, cfg, gen)
        d.lap("accept")  # choosing the token: the only decision plain decoding makes
        lp = math.log(max(float(probs[token]), 1e-45))
        logprob += lp
        if not details:
            return TokenStep(d.cycle, token, "", lp, ()), [token]
        return TokenStep(d.cycle, token, token_text(tokenizer, token), lp,
                         top_probs(tokenizer, probs, top_n, token)), [token]

    d = Decoding.of(model, tokenizer, prompt_ids, max_new_tokens, laps)
    yield from run_cycles(d, cycle, record_token)
    return d.result("greedy" if cfg.greedy else "sample", logprob=logprob)
