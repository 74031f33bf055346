"""The one timer (specviz/labs/timing.py) every lab, the benchmark and training use: a forward of n new tokens on
a cached context, median with its spread, the cache rolled back after each so every size sees the same context."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.labs.timing import Forward, Timing, draft_step_ms, forward_ms, settled, time_forwards


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).eval()


pytestmark = pytest.mark.fast


def test_every_size_is_timed_on_the_same_cached_context(small):
    fwd = Forward(small, list(range(10, 30)))
    assert fwd.cache.get_seq_length() == 20
    for n in (1, 5, 3):
        assert fwd.run(n) > 0
        assert fwd.cache.get_seq_length() == 20  # cropped back: the next size sees the same context


def test_median_and_spread_per_size_and_batches(small):
    t = time_forwards(small, list(range(10, 30)), [1, 4, 1, 8], repeats=3)
    assert list(t) == [1, 4, 8]  # each size once, in the order asked
    for timing in t.values():
        assert isinstance(timing, Timing) and timing.rounds == 3
        assert 0 < timing.lo <= timing.median <= timing.hi
    batched = Forward(small, 12, batch=3)  # an int context: fixed pseudo-random ids, one row per sequence
    assert tuple(batched.ids.shape) == (3, 12) and torch.equal(batched.ids[0], Forward(small, 12, batch=1).ids[0])
    assert forward_ms(small, 12, 2, repeats=2, batch=3) > 0


def test_a_draft_step_is_timed_right_after_a_target_step(small):
    # c's numerator as the loop meets it: each timed draft forward follows one untimed target decode step
    torch.manual_seed(1)
    target = LlamaForCausalLM(small.config).eval()
    order = []
    hooks = [small.register_forward_hook(lambda *_: order.append("draft")),
             target.register_forward_hook(lambda *_: order.append("target"))]
    try:
        assert draft_step_ms(small, target, list(range(10, 30)), repeats=2) > 0
    finally:
        for h in hooks:
            h.remove()
    # both contexts cached first, then one untimed round and 2 timed ones, each draft step after a target step
    assert order == ["draft", "target"] + ["target", "draft"] * 3


def test_the_timer_waits_for_a_cuda_device_and_not_for_the_cpu(monkeypatch):
    """A CUDA forward returns once its kernels are queued: the timer synchronises that device before reading the
    clock (an H100 run timed launch time only without it), and never touches CUDA for CPU tensors."""
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(device))

    class OnGPU:  # a stand-in for a CUDA tensor: only its device is read
        device = torch.device("cuda", 0)

    settled(torch.zeros(1))
    assert calls == []
    settled(OnGPU())
    assert calls == [torch.device("cuda", 0)]
