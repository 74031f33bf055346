"""Plain autoregressive decoding: one target forward per token. Temperature 0 is greedy (argmax);
above 0 it samples from the processed distribution with the run's own seeded generator.

The baseline every speedup is measured against, and the exact reference speculative decoding must
reproduce.
"""
from __future__ import annotations

import math
from collections.abc import Generator

from specviz.sampling import SamplingConfig, choose, distribution, new_generator, warpers
from specviz.engine.step import Stepper, eos_ids, token_text, top_probs
from specviz.trace import Counters, Result, TokenStep


def plain_steps(model, tokenizer, prompt_ids: list[int], max_new_tokens: int,
                 cfg: SamplingConfig = SamplingConfig(), top_n: int = 5) -> Generator[TokenStep, None, Result]:
    cfg.validate()
    stepper = Stepper(model)
    gen = new_generator(cfg.seed)
    procs = warpers(cfg)
    stop = eos_ids(model, tokenizer)
    ids = list(prompt_ids)
    new: list[int] = []
    logprob = 0.0
    for step in range(max_new_tokens):
        probs = distribution(stepper.logits(ids, 1), cfg, procs)[0].cpu()
        token = choose(probs, cfg, gen)
        lp = math.log(max(float(probs[token]), 1e-45))
        logprob += lp
        ids.append(token)
        new.append(token)
        yield TokenStep(step, token, token_text(tokenizer, token), lp, top_probs(tokenizer, probs, top_n, token))
        if token in stop:
            break
    counters = Counters(target_passes=stepper.passes, tokens=len(new))
    return Result("greedy" if cfg.greedy else "sample", list(prompt_ids), new,
                  tokenizer.decode(new, skip_special_tokens=True), counters, logprob=logprob)

