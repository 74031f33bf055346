"""Lookahead decoding (specviz/engine/lookahead.py): the mask and position ids of one pass on a known small window,
the n-gram pool, greedy output token-identical to plain greedy for several W, N, G (and plain Jacobi too),
the pool making lookahead gain over plain Jacobi on a repetitive answer, and the page under AppTest."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import chat
from specviz.errors import SpecVizError
from specviz.engine.lookahead import NgramPool, agreed, jacobi_steps, lookahead_inputs, lookahead_steps
from specviz.engine.loop import run_steps

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.mark.fast
def test_mask_and_positions_of_a_small_pass():
    # cache of 3 tokens, pending = [root]; window 2 levels x 2 columns; one candidate of 2 tokens
    tokens, positions, allowed = lookahead_inputs([[10, 11], [12, 13]], [(20, 21)], [9], 3)
    assert tokens == [9, 10, 11, 12, 13, 20, 21]
    t = 3  # the root's position
    assert positions == [t, t + 1, t + 2, t + 2, t + 3, t + 1, t + 2]
    assert allowed.shape == (7, 10) and allowed[:, :3].all()  # everything sees the cached context
    rows = allowed[:, 3:].int().tolist()
    assert rows == [
        [1, 0, 0, 0, 0, 0, 0],  # root: itself
        [1, 1, 0, 0, 0, 0, 0],  # level 0 column 0
        [1, 1, 1, 0, 0, 0, 0],  # level 0 column 1: level 0 columns 0..1
        [1, 1, 0, 1, 0, 0, 0],  # level 1 column 0: level 0 column 0, then itself
        [1, 1, 1, 0, 1, 0, 0],  # level 1 column 1: level 0 columns 0..1, then itself (not level 1 column 0)
        [1, 0, 0, 0, 0, 1, 0],  # candidate token 0
        [1, 0, 0, 0, 0, 1, 1],  # candidate token 1: its own token 0
    ]


@pytest.mark.fast
def test_agreed_counts_the_leading_tokens_the_target_confirms():
    # the root's argmax is 7; after the candidate's own tokens the pass said 8, then 9, then 4
    assert agreed((7, 8, 9), 7, [8, 9, 4]) == 3
    assert agreed((7, 8, 5), 7, [8, 9, 4]) == 2  # 5 where the target wanted 9
    assert agreed((6, 8, 9), 7, [8, 9, 4]) == 0  # wrong from the first token: nothing after it counts


@pytest.mark.fast
def test_pool_keeps_the_newest_g_per_first_token():
    pool = NgramPool(2)
    assert pool.add((1, 2, 3)) and pool.add((1, 4, 5)) and not pool.add((1, 2, 3))
    assert pool.candidates(1) == [(2, 3), (4, 5)]  # (2, 3) was seen again: newest
    assert pool.add((1, 6, 7))
    assert pool.candidates(1) == [(6, 7), (2, 3)] and len(pool) == 2
    assert pool.candidates(99) == []


@pytest.mark.fast
@pytest.mark.parametrize("w, n, g", [(0, 4, 5), (5, 1, 5), (5, 4, -1)])
def test_bad_settings_are_refused_clearly(w, n, g):
    with pytest.raises(SpecVizError, match="Lookahead needs"):
        next(lookahead_steps(None, None, [1, 2], 8, w, n, g))


PROMPTS = ["Count from one to twenty in words.", "Write a Python function that adds two numbers."]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_identity_for_several_windows(embedded, greedy, prompt):
    model, tok = embedded
    ids = chat(tok, prompt)
    ref = greedy(ids, 48)
    for w, n, g in [(5, 4, 5), (3, 2, 3), (1, 3, 1), (4, 5, 0), (6, 3, 8)]:
        events, got = run_steps(lookahead_steps(model, tok, ids, 48, w, n, g))
        assert got.token_ids == ref, (w, n, g)
        assert got.counters.target_passes == len(events)
        assert sum(len(e.emitted) for e in events) == len(ref)
        if g == 0:
            assert got.counters.target_passes == len(ref)  # nothing to verify: one token a pass
    _, jac = run_steps(jacobi_steps(model, tok, ids, 48, 5))
    assert jac.token_ids == ref


def test_pool_makes_lookahead_gain_over_plain_jacobi(embedded):
    model, tok = embedded
    ids = chat(tok, PROMPTS[0])
    events, la = run_steps(lookahead_steps(model, tok, ids, 64, 5, 4, 5))
    _, jac = run_steps(jacobi_steps(model, tok, ids, 64, 5))
    assert la.token_ids == jac.token_ids
    assert la.counters.target_passes < jac.counters.target_passes
    gained = [e for e in events if len(e.emitted) > 1]
    assert gained and all(e.best >= 0 and e.matched[e.best] == len(e.emitted) - 1 for e in gained)
    assert all(not e.new_ngrams for e in events[:2]) and events[2].new_ngrams  # N - 1 = 3 levels before n-grams
    assert events[-1].pool_size > 0
    assert all(len(e.fresh) == len(e.new_ngrams) and e.added == sum(e.fresh) for e in events)
    # the KV cache keeps the context and the accepted candidate tokens only
    for e in events:
        assert e.target_cache.after == e.context_len + len(e.emitted) - 1


def test_lookahead_page_steps_and_draws():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/9_Lookahead_decoding.py").run()
    assert not at.exception, at.exception
    for _ in range(4):  # the window fills (N - 1 = 3 levels) and collects its first n-grams
        at.button(key="lookahead_step").click().run()
        assert not at.exception, at.exception
    specs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    titles = [s["layout"]["title"]["text"] for s in specs]
    assert any(t.startswith("lookahead window") and "n-grams down the columns" in t for t in titles), titles
    assert any(t.startswith("verification") for t in titles)
    assert any(t.startswith("plain Jacobi") for t in titles)
    window = next(s for s in specs if s["layout"]["title"]["text"].startswith("lookahead window"))
    assert len(window["layout"]["annotations"]) == 5 * 4  # 3 levels + the outputs row, W = 5 cells each
    assert [m.label for m in at.metric][:2] == ["Target passes", "Tokens (lookahead)"]
    assert at.metric[0].value == "4"


def test_cli_lookahead_matches_greedy_and_refuses_bad_settings(capsys):
    from specviz.__main__ import main

    assert main(["decode", "--method", "lookahead", "--prompt", "hi", "--window", "0"]) == 2
    assert "--window" in capsys.readouterr().err
    assert main(["decode", "--method", "lookahead", "--prompt", "hi", "--temperature", "0.7"]) == 2
    assert "greedy only" in capsys.readouterr().err
    args = ["--chat", "--prompt", "Count from one to ten in words.", "--max-new-tokens", "24", "--json"]
    assert main(["decode", "--method", "lookahead", *args]) == 0
    la = json.loads(capsys.readouterr().out)
    assert main(["decode", "--method", "greedy", *args]) == 0
    greedy = json.loads(capsys.readouterr().out)
    assert la["token_ids"] == greedy["token_ids"] and la["method"] == "lookahead"
    assert la["target_passes"] <= greedy["target_passes"]


def test_a_step_with_a_full_pool_and_no_candidate_says_why():
    """It said "nothing to verify yet" while the pool held 26 n-grams: none started with the last token."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/9_Lookahead_decoding.py").run()
    seen, caption_seen = [], []
    for _ in range(12):
        at.button(key="lookahead_step").click().run()
        assert not at.exception, at.exception
        line = next(m.value for m in at.markdown if m.value.startswith("**Target pass"))
        seen.append(line)
        pool = int(line.split("· pool ")[1].split(" ")[0])
        if "nothing to verify" in line and pool > 0 and "still empty" not in line:
            assert "no n-gram in the pool starts with the last token" in line
        caches = [c.value for c in at.caption if c.value.startswith("Target KV cache")]
        for cache in caches:  # what the cache keeps is named for this pass: no "accepted candidate" when none was
            matched = line.split(" · ")[1].startswith("candidate ")
            assert ("the accepted candidate's tokens" in cache) == matched and ("context only" in cache) != matched
            caption_seen.append(cache)
    assert "nothing to verify yet: the pool is still empty" in seen[0]
    assert any("no n-gram in the pool starts with" in s for s in seen), seen
    assert caption_seen and any("context only" in c for c in caption_seen)
