"""Recording only what is watched (issue 48.3): with details=False the engines run the same algorithm and record
only what the counters read, for the benchmark and the CLI. The tokens and every counter must be the same as with
the pages' full recording, greedy and sampled, chain (token-wise and block) and tree."""
import pytest

from conftest import chat
from specviz.drafters import make_drafter
from specviz.engine.loop import run_steps
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.tree import tree_speculative_steps
from specviz.sampling import SamplingConfig

PROMPT = "Explain how a hash table works."
N = 24
RUNS = {
    "plain greedy": lambda m, ids, d: plain_steps(m.target, m.tokenizer, ids, N, details=d),
    "plain sampled": lambda m, ids, d: plain_steps(m.target, m.tokenizer, ids, N, SamplingConfig(1.0, 0, 1.0, 3),
                                                   details=d),
    "feature K=4 greedy": lambda m, ids, d: speculative_steps(m.target, make_drafter("feature", m), m.tokenizer, ids,
                                                              N, 4, details=d),
    "token K=4 sampled": lambda m, ids, d: speculative_steps(m.target, make_drafter("token", m), m.tokenizer, ids, N,
                                                             4, SamplingConfig(0.8, 0, 0.9, 5), details=d),
    "token K=4 block": lambda m, ids, d: speculative_steps(m.target, make_drafter("token", m), m.tokenizer, ids, N,
                                                           4, SamplingConfig(1.0, 0, 1.0, 7), acceptance="block",
                                                           details=d),
    "eagle2 tree sampled": lambda m, ids, d: tree_speculative_steps(m.target, make_drafter("eagle2", m), m.tokenizer,
                                                                    ids, N, 12, 4, cfg=SamplingConfig(1.0, 0, 1.0, 2),
                                                                    details=d),
}


@pytest.mark.parametrize("name", RUNS)
def test_the_same_run_with_or_without_details(models, name):
    ids = chat(models.tokenizer, PROMPT)
    full_events, full = run_steps(RUNS[name](models, ids, True))
    lean_events, lean = run_steps(RUNS[name](models, ids, False))
    assert lean.token_ids == full.token_ids and lean.counters == full.counters
    assert [getattr(e, "emitted", None) for e in lean_events] == [getattr(e, "emitted", None) for e in full_events]
    # the lean run really is lean: no token text was decoded for it
    assert all(getattr(e, "text", "") == "" and getattr(e, "new_text", "") == "" for e in lean_events)
    assert any(getattr(e, "text", "") or getattr(e, "new_text", "") for e in full_events)
