"""Issue 38, item 4: a cycle's timeline. The engines mark the end of every stage of a cycle (Decoding.lap) only when
asked; the lab turns the marks into spans; the figures draw them where they happened. Spans are checked against the
engine's own cycles (the stages a chain, a tree and plain greedy have, in order), the figures against the spans."""
import pytest

from specviz.drafters.ngram import NgramDrafter
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.engine.tree import tree_speculative_steps
from specviz.figures.timeline import COLORS, per_token_bars, timeline_chart
from specviz.labs.timeline import spans_of, summary
from specviz.trace import LABELS, STAGES, Lane, Span

REPEATS = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8, 5, 6]  # n-gram lookup finds matches in it


def stages_by_cycle(laps):
    """Each cycle's stage marks in order; a start mark repeated (the prefill's, none made) counted once."""
    out = {}
    for cycle, stage, _ in laps:
        marks = out.setdefault(cycle, [])
        if not (stage == "start" and marks[-1:] == ["start"]):
            marks.append(stage)
    return out


@pytest.mark.fast
def test_spans_from_marks_skip_the_time_between_cycles():
    laps = [(0, "start", 1.000), (0, "draft", 1.002), (0, "verify", 1.010), (0, "accept", 1.0101),
            (0, "rollback", 1.0102), (0, "overhead", 1.0110), (1, "start", 1.5), (1, "draft", 1.501),
            (1, "verify", 1.509), (1, "accept", 1.5091), (1, "rollback", 1.5092), (1, "overhead", 1.5100)]
    spans = spans_of(laps)
    assert [s.stage for s in spans] == ["draft", "verify", "accept", "rollback", "overhead"] * 2
    assert spans[0] == Span(0, "draft", 0.0, pytest.approx(2.0))
    assert spans[1].ms == pytest.approx(8.0)
    # cycle 1 starts at 500 ms: the 489 ms the caller spent between cycles belongs to no stage
    assert spans[5].start_ms == pytest.approx(500.0) and spans[5].cycle == 1
    assert sum(s.ms for s in spans) == pytest.approx(11.0 + 10.0)
    assert spans_of([]) == []


def lane(name, spans, emitted, tokens):
    return Lane(name, spans, emitted, [1] * len(emitted), tokens)


@pytest.mark.fast
def test_summary_and_figures_carry_the_spans():
    plain = lane("plain greedy", [Span(0, "verify", 0, 30), Span(0, "accept", 30, 30.1), Span(0, "overhead", 30.1, 31),
                                  Span(1, "verify", 31, 61), Span(1, "accept", 61, 61.1),
                                  Span(1, "overhead", 61.1, 62)], [1, 1], [4, 5])
    chain = Lane("chain K = 2 <b>", [Span(0, "draft", 0, 4), Span(0, "verify", 4, 37), Span(0, "accept", 37, 37.2),
                                     Span(0, "rollback", 37.2, 37.4), Span(0, "overhead", 37.4, 38)],
                 [2], [3], [4, 5])
    s = summary([plain, chain])
    p, c = s["lanes"]
    assert p["forward_ms"] == 30 and c["forward_ms"] == 33 and c["forward_vs_plain"] == pytest.approx(1.1)
    assert c["ms_per_token"] == pytest.approx(19.0) and p["ms_per_token"] == pytest.approx(31.0)
    assert c["identical"] and c["stage_ms"]["draft"] == 4 and c["accept_rollback_ms"] == pytest.approx(0.4)
    assert c["verify_share"] == pytest.approx(33 / 38)

    fig = timeline_chart([plain, chain]).to_plotly_json()
    bars = {d["name"]: d for d in fig["data"] if d["type"] == "bar"}
    assert set(bars) == {LABELS[st] for st in ("draft", "verify", "accept", "rollback", "overhead")}
    verify = bars[LABELS["verify"]]
    assert list(verify["base"]) == [0, 31, 4] and list(verify["x"]) == [30, 30, 33]
    assert verify["marker"]["color"] == COLORS["verify"]
    assert "chain K = 2 &lt;b&gt;" in verify["y"]  # a lane's name is escaped
    notes = fig["layout"]["annotations"]  # the speculative lane's cycles only: plain greedy's are all +1
    assert [(n["text"], n["x"], n["y"]) for n in notes] == [("+2", 38, "chain K = 2 &lt;b&gt;")]
    assert fig["layout"]["xaxis"]["range"][1] == pytest.approx(62 * 1.02)

    per = per_token_bars(s).to_plotly_json()
    stacked = [d for d in per["data"] if d["type"] == "bar"]
    for i, row in enumerate(s["lanes"]):
        assert sum(d["x"][i] for d in stacked) == pytest.approx(row["ms_per_token"])


def test_engines_mark_every_stage_in_order_only_when_asked(tiny_llama):
    model, tok = tiny_llama
    ids = REPEATS
    plain_laps, chain_laps, tree_laps = [], [], []
    plain = run_steps(plain_steps(model, tok, ids, 6, laps=plain_laps))[1]
    assert run_steps(plain_steps(model, tok, ids, 6))[1].token_ids == plain.token_ids
    for stages in stages_by_cycle(plain_laps).values():
        assert stages == ["start", "verify", "accept", "overhead"]
    assert len(stages_by_cycle(plain_laps)) == len(plain.token_ids)

    chain = run_steps(speculative_steps(model, NgramDrafter(), tok, ids, 8, 3, laps=chain_laps))[1]
    assert chain.token_ids == plain.token_ids[:6] + chain.token_ids[6:]
    by_cycle = stages_by_cycle(chain_laps)
    assert len(by_cycle) == chain.counters.verify_passes
    for stages in by_cycle.values():
        assert stages == ["start", "draft", "verify", "accept", "rollback", "overhead"]
    times = [t for _, _, t in chain_laps]
    assert times == sorted(times)

    tree = run_steps(tree_speculative_steps(model, NgramDrafter(), tok, ids, 8, 8, 3, 2, laps=tree_laps))[1]
    assert tree.token_ids == chain.token_ids
    for stages in stages_by_cycle(tree_laps).values():
        assert stages == ["start", "draft", "verify", "accept", "rollback", "overhead"]
    assert {st for _, st, _ in chain_laps} <= set(STAGES) | {"start"}


def test_embedded_timeline_three_methods_same_text(models):
    from specviz.labs.timeline import measure
    from specviz.prompting import prompt_ids

    ids = prompt_ids(models.tokenizer, "Explain how a hash table works.")
    lanes = measure(models, ids, 12, 4, 16, 6, warm=False, rounds=1)
    assert [ln.name.split(" (")[0].split(",")[0] for ln in lanes] == ["plain greedy", "chain K = 4", "EAGLE-2 tree"]
    s = summary(lanes)
    for ln, row in zip(lanes, s["lanes"]):
        assert row["identical"] and row["tokens"] == 12 == sum(ln.emitted)
        stages = {sp.stage for sp in ln.spans}
        assert "verify" in stages and "overhead" in stages
        assert sum(sp.ms for sp in ln.spans) <= ln.total_ms + 1e-6  # spans never overlap
        assert all(a.end_ms <= b.start_ms + 1e-9 for a, b in zip(ln.spans, ln.spans[1:]))
    plain, chain, tree = s["lanes"]
    assert plain["cycles"] == 12 and chain["cycles"] < 12 and tree["cycles"] <= chain["cycles"] + 2
    assert chain["stage_ms"]["prefill"] > 0 and chain["stage_ms"]["draft"] > 0  # the feature draft's states
    assert tree["positions"] > chain["positions"] == 5  # the ONE forward scores every node (+ the pending root)
