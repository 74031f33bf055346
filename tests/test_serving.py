"""The serving lab: KV-cache arithmetic, the roofline calculation and measured forward costs, and the page."""
import json
from pathlib import Path

import pytest

from specviz import roofline as R
from specviz.labs import serving as S

ROOT = Path(__file__).resolve().parent.parent
SMOL = R.ModelShape("smol", 30, 9, 3, 64, 1.35e8, "test")


@pytest.mark.fast
def test_kv_bytes_per_token_is_two_layers_heads_dim_bytes():
    assert R.kv_bytes_per_token(SMOL, 2) == 2 * 30 * 3 * 64 * 2 == 23040
    llama70 = R.KNOWN_SHAPES[1]
    assert R.kv_bytes_per_token(llama70, 2) == 327680  # 320 KiB per token in bf16
    # a 32k-token request of the 70B shape: 10 GiB of KV
    assert R.kv_cache_bytes(llama70, 1, 32768, 2) / R.GIB == pytest.approx(10.0)


@pytest.mark.fast
def test_beams_multiply_the_generated_tokens_and_prefix_sharing_holds_the_prompt_once():
    per = R.kv_bytes_per_token(SMOL, 2)
    assert R.kv_cache_bytes(SMOL, 1, 100, 2, beams=4, prompt=60, share_prompt=True) == (60 + 40 * 4) * per
    assert R.kv_cache_bytes(SMOL, 1, 100, 2, beams=4, prompt=60, share_prompt=False) == 100 * 4 * per
    assert R.kv_cache_bytes(SMOL, 3, 100, 2) == 3 * 100 * per


@pytest.mark.fast
def test_linear_layers_reach_the_ridge_at_a_batch_attention_never_does():
    # H100 ridge ~295 FLOP/byte; bf16 linear layers: 2·B·T / 2 FLOP/byte -> B·T ~ 295
    assert R.compute_bound_batch(R.H100_SXM, 1) == 296
    assert R.compute_bound_batch(R.H100_SXM, 5) == 60  # a verify of 5 tokens gets there 5x sooner
    shape = R.KNOWN_SHAPES[0]
    assert R.attention_intensity(shape, 1) == 4.0  # GQA 32/8: 4 FLOP/byte, far below the ridge, any batch
    assert R.attention_intensity(R.KNOWN_SHAPES[2], 1) == 1.0  # no GQA: 1


@pytest.mark.fast
def test_speculation_stops_paying_at_large_batch_on_the_roofline():
    sp = R.roofline_speedups(R.KNOWN_SHAPES[0], R.H100_SXM, a=0.7, k=4, c=0.05, batches=[1, 8, 64, 512, 2048],
                             context=128)
    assert sp[0] > 2.0  # memory-bound: verify is ~free
    assert sp[-1] < 1.0  # compute-bound: verify costs ~(K+1) steps
    assert sp == sorted(sp, reverse=True)
    # at long context attention over each sequence's KV dominates the step and stays memory-bound: it pays again
    long = R.roofline_speedups(R.KNOWN_SHAPES[0], R.H100_SXM, a=0.7, k=4, c=0.05, batches=[2048], context=131072)
    assert long[0] > 2.0


def test_measured_forward_grid_on_a_tiny_model(tiny_llama):
    model, _ = tiny_llama
    grid = S.forward_grid(model, model, [1, 2], k=3, context=8)
    assert [r["batch"] for r in grid["rows"]] == [1, 2]
    for r in grid["rows"]:
        assert r["target_ms"] > 0 and r["verify_ms"] > 0 and r["c"] > 0


def test_serving_page_draws_the_calculations_and_measures():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/8_Serving_lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    kv = figs[0]["data"]
    assert any("70B" in t["name"] for t in kv)
    seventy = next(t for t in kv if "70B" in t["name"])
    # batch 16 (the default) x 512 tokens x 320 KiB = 2.5 GiB
    assert seventy["x"][0] == 512 and seventy["y"][0] == pytest.approx(2.5)
    at.button(key="sv_measure_cpu").click().run()
    assert not at.exception
    roof = [json.loads(e.proto.spec) for e in at.get("plotly_chart")][1]
    assert any("this CPU" in (t.get("name") or "") for t in roof["data"])
    labels = [x for t in roof["data"] for x in (t.get("text") or []) if "B=" in x and "ridge" not in x]
    assert labels and all(x[0] in "●◆" for x in labels)  # decode or verify: said on each label
    assert roof["layout"]["yaxis"]["exponentformat"] == "power"  # one notation (SI stops at T: 10^15 beside 100T)
    assert any("compute-bound at batch" in m.value for m in at.markdown)


def test_serving_page_puts_the_measured_batched_runs_on_the_speedup_chart():
    """Without running anything the chart carries the committed batched measurement (docs/batched-*.json):
    measured points at B = 1, 4, 16 beside the curve predicted with the same a and K; a run in this session
    (session_state) replaces them."""
    from streamlit.testing.v1 import AppTest

    from specviz.labs import batched as BT

    committed = BT.load_measured()
    assert committed is not None and [r["batch"] for r in committed["runs"]] == [1, 4, 16]
    assert all(r["identical"] for r in committed["runs"])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/8_Serving_lab.py").run()
    assert not at.exception, [e.value for e in at.exception]

    def speed_chart():
        figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
        return next(f for f in figs if "batch size" in f["layout"]["title"]["text"])["data"]

    data = speed_chart()
    points = next(t for t in data if t["name"].startswith("measured: batched speculative"))
    assert points["x"] == [1, 4, 16]
    assert points["y"] == pytest.approx([r["speedup"] for r in committed["runs"]])
    curve = next(t for t in data if t["name"].startswith("predicted for the batched run"))
    assert f"K = {committed['k']}" in curve["name"] and f"a = {committed['a']:.2f}" in curve["name"]
    assert curve["x"] == [r["batch"] for r in committed["grid"]["rows"]]
    assert any("Why the points sit where they do" in m.value for m in at.markdown)
    assert at.button(key="sv_batched_run").label == "Run batched speculative greedy (B = 1, 4, 16)"

    fake = json.loads(json.dumps(committed))
    for r in fake["runs"]:
        r["speedup"] = 0.5
    at.session_state["sv_batched"] = fake
    at.run()
    assert next(t for t in speed_chart() if t["name"].startswith("measured:"))["y"] == [0.5, 0.5, 0.5]
    assert any("run just now in this session" in m.value for m in at.markdown)


def test_loaded_weights_count_packed_linear_layers_and_tied_embeddings_once(tiny_llama):
    """Packed linear layers keep their weights in buffers, not parameters: the count must not fall when a model
    is packed, the tied LM head counts once, and a draft that borrows the target's embedding counts only its own."""
    import copy

    from specviz.drafters.build import assemble
    from specviz.packed import pack_linears

    model = copy.deepcopy(tiny_llama[0])
    layer, norm = copy.deepcopy(model.model.layers[:1]), copy.deepcopy(model.model.norm)  # a draft's, below
    plain = sum(p.numel() for p in model.parameters())  # parameters() yields the tied embedding once
    assert S.loaded_weights(model) == plain
    assert pack_linears(model) > 0
    assert S.loaded_weights(model) == plain
    assert S.shape_of(model, "tiny").params == plain
    # a one-layer draft on it: its own layer and norm, the embedding and head the target's
    draft = assemble(model, layer, norm)
    assert pack_linears(draft) > 0
    own = S.loaded_weights(draft, shared_with=model)
    per_layer = (plain - model.model.embed_tokens.weight.numel() - model.model.norm.weight.numel()) // 2
    assert own == per_layer + norm.weight.numel()
    assert S.loaded_weights(draft) > own  # alone it counts the borrowed embedding too


@pytest.mark.fast
def test_gpus_for_the_weights_alone():
    llama70 = R.KNOWN_SHAPES[1]
    assert R.gpus_for(llama70.params * 2) == 2  # 141 GB of bf16 weights: more than one 80 GB GPU
    assert R.gpus_for(llama70.params * 1) == 1  # fp8: 71 GB fits one
    assert R.gpus_for(1) == 1


def _serving_table(at) -> dict:
    df = at.table[0].value
    return {row["model"]: row for row in df.to_dict("records")}


def test_serving_page_weights_follow_their_own_dtype_and_count_the_loaded_target():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/8_Serving_lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = _serving_table(at)
    weights = next(c for c in at.table[0].value.columns if c.startswith("weights"))
    assert weights == "weights, bf16 (GiB)"
    target = next(v for k, v in table.items() if "target" in k)
    draft = next(v for k, v in table.items() if "draft" in k)
    assert target[weights] == pytest.approx(134.5e6 * 2 / R.GIB, rel=0.02)  # ~0.25 GiB, not the embedding alone
    assert draft[weights] < target[weights] / 5
    seventy = next(v for k, v in table.items() if "70B" in k)
    at.radio(key="sv_dtype").set_value("fp32 (4 B)").run()  # the KV dtype moves the KV columns, not the weights
    table2 = _serving_table(at)
    assert next(v for k, v in table2.items() if "70B" in k)["weights, bf16 (GiB)"] == seventy[weights]
    kv = next(c for c in at.table[0].value.columns if c.startswith("KV at"))
    assert "fp32" in kv
    at.radio(key="sv_wdtype").set_value("fp8 (1 B)").run()
    table3 = _serving_table(at)
    assert next(v for k, v in table3.items() if "70B" in k)["weights, fp8 (GiB)"] == pytest.approx(seventy[weights] / 2)
    text = " ".join(m.value for m in at.markdown)
    assert "at least **2 GPUs**" in text and "more than an 80 GB GPU has left" not in text
    assert "static batch" in text and "continuous batching" in text


@pytest.mark.fast
def test_past_the_ridge_speculation_still_pays_until_the_verify_costs_more_than_it_commits():
    """Issue 45 A6: the gain falls below 1 only once v + Kc > tokens per pass, not as soon as the batch is large or
    the verify's linear layers turn compute-bound (the bank's spec-at-batch-64 answer: ≈ 1.08 steps there)."""
    from specviz.theory import expected_tokens
    shape, dev, a, k, c = R.KNOWN_SHAPES[0], R.H100_SXM, 0.7, 4, 0.05
    ridge_batch = R.compute_bound_batch(dev, k + 1)
    batches = [b for b in (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)]
    gains = R.roofline_speedups(shape, dev, a, k, c, batches, context=128)
    for b, g in zip(batches, gains):
        v = R.step_seconds(shape, dev, b, k + 1, 128) / R.step_seconds(shape, dev, b, 1, 128)
        assert (g < 1.0) == (v + k * c > expected_tokens(a, k))
    past = [g for b, g in zip(batches, gains) if b > ridge_batch]
    assert past and past[0] > 1.0  # compute-bound verify, and speculation still pays
    page = (ROOT / "pages" / "8_Serving_lab.py").read_text()
    assert "stops paying at large batch" not in page and "the gain falls below 1:" not in page
