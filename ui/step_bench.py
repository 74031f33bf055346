"""Server-side cost of one Step on the speculative page, and what the classroom levers save:
`python -m ui.step_bench` (prints medians in ms). Stepping through every phase of every cycle, it times

- engine: computing the next cycle (what a first session pays; a second session on the same settings walks
  the shared Recording and pays nothing),
- figures: building the charts shown at that phase, all of them (as a page does without figure()) or only
  the new one (figure() returns the charts already built for the same events).
"""
from __future__ import annotations

import statistics
import sys
import time

import plotly.io as pio
import torch


def main(cycles: int = 6) -> None:
    from specviz.drafters import make_drafter
    from specviz.figures import spec_cycle as F
    from specviz.views.speculative_decoding import spec_phases, spec_stages
    from specviz.loading import load_models
    from specviz.prompting import context_size, encode_prompt
    from specviz.replay import Recording, Replay
    from specviz.sampling import SamplingConfig
    from specviz.engine.speculative import speculative_steps
    from ui.charts import Figures

    torch.set_num_threads(2)
    m = load_models()
    ids = encode_prompt(m.tokenizer, "Explain beam search in two sentences.", True, context_size(m.target), 48)
    rec = Recording(speculative_steps(m.target, make_drafter("feature", m), m.tokenizer, ids, 48, 4,
                                      SamplingConfig(0.0, 0, 1.0, 0), False, k_max=16))
    engine = []
    for n in range(1, cycles + 1):
        t = time.perf_counter()
        rec.fetch_until(n)
        engine.append(time.perf_counter() - t)
    shared = Replay(rec, spec_phases)  # a second session: same settings, same recording
    t = time.perf_counter()
    shared.to_end(limit=cycles)
    second = time.perf_counter() - t

    def charts(cycle, upto):
        out = [(F.draft_proposal, (cycle, i), {}) for i in range(upto.count("draft"))]
        for stage, builder in (("verify", F.verify_pass), ("decide", F.verdicts), ("resolve", F.resolution),
                               ("cache", F.cache_strip)):
            if stage in upto:
                out.append((builder, (cycle,), {}))
        return out

    every, only_new, cache = [], [], Figures()
    for cycle in rec.events[:cycles]:
        stages = spec_stages(cycle)
        for phase in range(len(stages)):
            todo = charts(cycle, stages[: phase + 1])
            t = time.perf_counter()
            for b, a, kw in todo:
                fig = b(*a, **kw)
                if fig is not None:
                    pio.to_json(fig, validate=False)
            every.append(time.perf_counter() - t)
            t = time.perf_counter()
            for b, a, kw in todo:
                fig = cache.get(b, a, kw)
                if fig is not None:
                    pio.to_json(fig, validate=False)
            only_new.append(time.perf_counter() - t)
    ms = lambda xs: f"{statistics.median(xs) * 1000:.0f}"
    print(f"engine per cycle (first session): median {ms(engine)} ms over {cycles} cycles")
    print(f"engine for a second session on the same settings: {second * 1000:.1f} ms for all {cycles} cycles")
    print(f"figures per Step, all charts rebuilt: median {ms(every)} ms; with figure() (only the new chart): "
          f"median {ms(only_new)} ms ({len(every)} Steps)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
