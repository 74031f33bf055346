"""Suffix decoding: the index finds the longest earlier suffix and walks the most frequent continuation;
on the model its greedy output is plain greedy's, and on a repeated request it drafts more than n-gram
prompt lookup can."""
import pytest

from conftest import chat
from specviz.drafters import NgramDrafter, SuffixDrafter
from specviz.drafters.suffix import SuffixIndex
from specviz.engine.plain import plain_steps
from specviz.labs.repeated import REQUESTS
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps


@pytest.mark.fast
def test_longest_suffix_then_most_frequent_continuation():
    index = SuffixIndex(max_match=8)
    for seq in ([1, 2, 3, 4, 5, 6], [9, 2, 3, 4, 5, 7], [8, 3, 4, 5, 7, 0]):
        index.extend(len(index.seqs), seq)
    # [2, 3, 4] matches twice; 5 follows both; then 6 once, 7 once -> a tie, first seen wins at share 0.5
    assert index.continuations([0, 2, 3, 4], 2, min_share=0.3) == [5, 6]
    # [3, 4, 5] (no 2 before it) matches three times: 7 follows two of them, frequency picks it
    assert index.continuations([3, 4, 5], 1, min_share=0.3) == [7]
    # a continuation held by fewer than min_share of the matches stops the walk
    assert index.continuations([3, 4, 5], 1, min_share=0.9) == []
    assert index.continuations([42], 3, min_share=0.3) == []


@pytest.mark.fast
def test_the_running_request_is_indexed_as_it_grows():
    d = SuffixDrafter()
    d.reset()
    cfg = SamplingConfig()
    assert d.propose([1, 2, 3], 3, cfg, None) == ([], None)
    assert d.propose([1, 2, 3, 1, 2], 3, cfg, None) == ([3, 1, 2], None)  # found in its own past, like prompt lookup


def test_suffix_decoding_is_exact_and_beats_prompt_lookup_on_a_repeated_request(embedded):
    model, tok = embedded
    first, second = chat(tok, REQUESTS[0]), chat(tok, REQUESTS[1])
    first_out = run_steps(plain_steps(model, tok, first, 64))[1].token_ids
    plain = run_steps(plain_steps(model, tok, second, 64))[1]
    suffix = run_steps(speculative_steps(model, SuffixDrafter([first + first_out]), tok, second, 64, 4))[1]
    ngram = run_steps(speculative_steps(model, NgramDrafter(), tok, second, 64, 4))[1]
    assert suffix.token_ids == plain.token_ids == ngram.token_ids
    assert suffix.counters.mean_acceptance_length > ngram.counters.mean_acceptance_length
