"""Block verification on the pages (issue 48, item 1). The numbers the views draw (engine.speculative.block_odds: each
draft's chance to be kept under token-wise and under block verification, from verify's block_weights) on the paper's
own example and against verify's samplers; the figures on synthetic cycles; the engine's trace of a block run; the
Where page's block rows (labs.acceptance_rules.block_rows) against the exact rejection-sampling row; and the
Speculative page's third verification choice under AppTest."""
import dataclasses
import itertools
import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from specviz.engine.speculative import block_odds
from specviz.figures import spec_cycle as F
from specviz.figures.acceptance_rules import block_bars, rules_bars
from specviz.labs.acceptance_rules import BLOCK, RULES, TOKENWISE
from specviz.trace import CacheState, Cycle, DraftToken, TokenProb, Verdict
from specviz.verify import verify, verify_block

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- the numbers (no model)
@pytest.mark.fast
def test_block_odds_on_the_papers_example():
    """Sun et al.'s motivating example: a target with p(a) = 1/3, p(b) = 2/3 and a draft with q(a) = 2/3, q(b) = 1/3,
    both context-free, K = 2. Token-wise verification keeps 10/9 drafts per block in expectation, block verification
    11/9; and for the one block (a, a) block verification keeps FEWER (0.5 against 0.75): the gain is an average."""
    p1, q1 = torch.tensor([1 / 3, 2 / 3], dtype=torch.float64), torch.tensor([2 / 3, 1 / 3], dtype=torch.float64)
    p, q = torch.stack([p1] * 3), torch.stack([q1] * 2)
    token = block = 0.0
    for drafts in itertools.product(range(2), repeat=2):
        odds = block_odds(list(drafts), q, p)
        chance = float(q1[drafts[0]] * q1[drafts[1]])
        token += chance * sum(odds.kept_token)
        block += chance * sum(odds.kept_block)
    assert token == pytest.approx(10 / 9, abs=1e-12) and block == pytest.approx(11 / 9, abs=1e-12)
    aa = block_odds([0, 0], q, p)
    assert aa.accept == (0.5, 0.5) and aa.ratio == (0.5, 0.25)
    assert sum(aa.kept_block) == pytest.approx(0.5) and sum(aa.kept_token) == pytest.approx(0.75)
    ab = block_odds([0, 1], q, p)  # a, then b: the target likes b more than the draft did, which keeps a too
    assert ab.kept_token == pytest.approx((0.5, 0.5)) and ab.kept_block == pytest.approx((1.0, 1.0))


@pytest.mark.fast
def test_block_odds_are_what_the_samplers_keep():
    """Given one block, how often verify_block keeps at least i drafts (over its uniforms) is kept_block[i - 1], and
    how often verify (token-wise) does is kept_token[i - 1]: the numbers drawn are the rules' own."""
    g = torch.Generator().manual_seed(5)
    vocab, k, n = 5, 3, 6000
    p = torch.softmax(2 * torch.randn(k + 1, vocab, generator=g), -1)
    q = torch.softmax(2 * torch.randn(k, vocab, generator=g), -1)
    drafts = [int(torch.multinomial(q[i], 1, generator=g)) for i in range(k)]
    odds = block_odds(drafts, q, p)
    def token_wise(drafts, q, p, g):
        return verify(drafts, q, p, False, g)
    for rule, want in ((verify_block, odds.kept_block), (token_wise, odds.kept_token)):
        counts = [0] * k
        for _ in range(n):
            kept = rule(drafts, q, p, g).accepted
            for i in range(kept):
                counts[i] += 1
        assert [c / n for c in counts] == pytest.approx(list(want), abs=0.025)
    assert odds.weight == pytest.approx(tuple(v.accept_prob for v in verify_block(drafts, q, p, g).rulings))


def block_cycle(accepted=2, tokenwise=0, k=4, origin="resampled", kept_token=(0.13, 0.13, 0.003, 0.0),
                kept_block=(0.2, 0.2, 0.0, 0.0)):
    """A block-verified cycle as the engine records one (numbers from a real run: drafts 1 and 2 rescued)."""
    drafts = tuple(DraftToken(i, 100 + i, f"t{i}" if i else "<b>", 0.5, (TokenProb(100 + i, f"t{i}", 0.5),))
                   for i in range(k))
    weights, us = (0.0, 0.2, 0.0, 0.0), (0.63, 0.02, 0.41, 0.86)
    verdicts = tuple(Verdict(i, 100 + i, d.text, 0.4, 0.5, weights[i], us[i], i < accepted,
                             (TokenProb(7, "x", 0.6), TokenProb(100 + i, d.text, 0.4)),
                             (TokenProb(100 + i, d.text, 0.5),))
                     for i, d in enumerate(drafts))
    return Cycle(cycle=0, context_len=30, k=k, drafts=drafts, verify_positions=k + 1, verdicts=verdicts,
                 accepted=accepted, new_token=7, new_text="x", new_origin=origin,
                 residual_top=(TokenProb(7, "x", 0.7), TokenProb(8, "<i>", 0.3)), residual_fallback=False,
                 target_cache=CacheState(30 + k, 30 + accepted), draft_cache=CacheState(29 + k, 30 + accepted),
                 emitted=tuple(range(100, 100 + accepted)) + (7,), origins=("accepted",) * accepted + (origin,),
                 verify_mode="sampling", draft_passes=k,
                 target_top=tuple(TokenProb(7, "x", 0.6) for _ in range(k + 1)), p_draft=(0.4,) * k, new_p=0.3,
                 acceptance="block", block_ratio=(0.13, 0.23, 0.0, 0.0), block_weight=weights,
                 kept_token=kept_token, kept_block=kept_block, tokenwise_kept=tokenwise)


@pytest.mark.fast
def test_block_decision_draws_what_block_kept_that_token_wise_would_not():
    c = block_cycle()
    assert F.is_block(c) and F.block_outcomes(c) == ["rescued", "rescued", "dropped", "dropped"]
    fig = F.block_decision(c)
    go.Figure(fig.to_dict())  # built unchecked (build): Plotly's full validation here
    d = fig.to_dict()
    names = [t["name"] for t in d["data"]]
    assert names == ["token-wise test min(1, p/q)", "block weight h", "running ratio p_i", "η (the uniform drawn)",
                     "P(kept), token-wise", "P(kept), block"]
    by = {t["name"]: t for t in d["data"]}
    assert list(by["block weight h"]["y"]) == [0.0, 0.2, 0.0, 0.0]
    assert list(by["token-wise test min(1, p/q)"]["y"]) == pytest.approx([0.8] * 4)  # min(1, 0.4/0.5)
    assert list(by["η (the uniform drawn)"]["y"]) == [0.63, 0.02, 0.41, 0.86]
    assert list(by["P(kept), block"]["y"]) == [0.2, 0.2, 0.0, 0.0]
    x = by["block weight h"]["x"]
    assert "✓ rescued" in x[0] and x[0].startswith("1: &lt;b&gt;")  # token text escaped: Plotly reads HTML
    title = d["layout"]["title"]["text"]
    assert title.startswith("3b · Block verification kept 2 of 4; token-wise, with the same draws, would keep 0")
    assert "drafts 1, 2 rescued" in title
    assert all(not a.get("automargin", True) for k, a in d["layout"].items() if k.startswith(("xaxis", "yaxis")))
    # the other stages say block: the uniform against the weight, the residual scaled by p_tau
    v = F.verdicts(c).to_dict()
    assert {"h (block weight)", "η"} <= {t["name"] for t in v["data"]}
    assert "τ = the last i with η ≤ h" in v["layout"]["title"]["text"]
    # kept although its own test failed: rescued by a later draft
    assert "η=0.63>h=0 ✓ rescued" in json.dumps(v["layout"]["annotations"], ensure_ascii=False)
    r = F.resolution(c).to_dict()["layout"]["title"]["text"]
    assert "max(0, p_τ·p − q)" in r and "p_τ = 0.230" in r
    assert "judges all the drafts together" in F.verify_pass(c).to_dict()["layout"]["xaxis"]["title"]["text"]
    both = F.block_outcomes(block_cycle(accepted=1, tokenwise=2))
    assert both == ["kept", "token-wise only", "dropped", "dropped"]


@pytest.mark.fast
def test_a_token_wise_or_greedy_cycle_is_not_drawn_as_a_block():
    token = block_cycle()
    assert not F.is_block(dataclasses.replace(token, acceptance="token"))
    assert not F.is_block(dataclasses.replace(token, block_weight=(), kept_token=(), kept_block=()))


@pytest.mark.fast
def test_block_verification_has_its_own_chart_in_drafts_kept():
    """Blocks of K are a different unit from one draft's P(accept): the rules chart keeps its five rules and 1 - TV,
    and block_bars draws token-wise beside block in drafts kept per block (0..K), escaped token labels."""
    rows = [dict(position=1, token=5, text=" the", **{n: 0.5 for n in RULES}, tv=0.5, **{TOKENWISE: 0.3, BLOCK: 0.4}),
            dict(position=2, token=6, text="<a>", **{n: 0.25 for n in RULES}, tv=0.1, **{TOKENWISE: 0.1, BLOCK: 0.2})]
    block = {"k": 4, "samples": 32, "rows": [{"position": 1, "token-wise": 1.2, "block": 1.6, "gain_se": 0.1},
                                             {"position": 2, "token-wise": 0.4, "block": 0.8, "gain_se": 0.1}],
             "token-wise": 0.8, "block": 1.2, "gain_se": 0.07, "row": BLOCK, "reference": TOKENWISE}
    live = {"rows": rows, "mean": {**{n: 0.375 for n in RULES}, "tv": 0.3, TOKENWISE: 0.2, BLOCK: 0.3},
            "temperature": 1.0, "epsilon": 0.09, "delta": 0.3, "block": block}
    d = rules_bars(live, RULES).to_dict()
    assert [t["name"].split(" (")[0] for t in d["data"] if t["type"] == "bar"] == list(RULES)
    assert len([t for t in d["data"] if t["type"] == "scatter"]) == 1  # 1 − TV only
    b = block_bars(live).to_dict()
    go.Figure(b)
    bars = [t for t in b["data"] if t["type"] == "bar"]
    assert [t["name"].split(" (")[0] for t in bars] == [TOKENWISE, BLOCK]
    assert list(bars[1]["y"]) == [1.6, 0.8, 1.2] and list(bars[0]["y"]) == [1.2, 0.4, 0.8]
    assert b["layout"]["yaxis"]["title"]["text"] == "drafts kept per block (of 4)"
    assert list(b["layout"]["yaxis"]["range"]) == [0, 4]
    assert list(bars[0]["x"])[1] == "2: &lt;a&gt;"


# ---------------------------------------------------------------- the embedded model
def test_a_block_run_records_what_the_views_draw(models):
    from conftest import chat
    from specviz.drafters import make_drafter
    from specviz.engine.speculative import speculative_steps
    from specviz.engine.loop import run_steps
    from specviz.sampling import SamplingConfig
    from specviz.verify import accept_probability

    tok = models.tokenizer
    ids = chat(tok, "Explain beam search")
    events, result = run_steps(speculative_steps(models.target, make_drafter("token", models), tok, ids, 24, 4,
                                                 SamplingConfig(1.0, 0, 1.0, 3), acceptance="block"))
    assert sum(len(c.emitted) for c in events) == len(result.token_ids) == 24
    for c in (c for c in events if c.k):
        n = len(c.verdicts)
        assert c.acceptance == "block" and F.is_block(c) and len(c.block_weight) == len(c.kept_block) == c.k
        assert [v.accept_prob for v in c.verdicts] == list(c.block_weight[:n])  # the weight it was judged with
        assert [v.accepted for v in c.verdicts] == [i < c.accepted for i in range(n)]
        # tau: the last position whose uniform passes its weight
        assert c.accepted == max([0] + [i + 1 for i, v in enumerate(c.verdicts) if v.u <= v.accept_prob])
        same = next((i for i, v in enumerate(c.verdicts) if not v.u < accept_probability(v.p, v.q)), n)
        assert c.tokenwise_kept == same
        assert all(a >= b for a, b in zip(c.kept_block, c.kept_block[1:]))  # kept i + 1 means kept i
        assert all(a >= b for a, b in zip(c.kept_token, c.kept_token[1:]))
        assert all(0 <= r <= 1 for r in c.block_ratio)  # clipped at 1; it rises where the target likes a draft more
        if c.new_origin == "resampled":
            assert 0 < c.residual_mass <= 1
    assert any(c.new_origin == "resampled" for c in events)
    # token-wise and greedy runs record no block numbers (a token-wise run pays nothing for them)
    token = next(speculative_steps(models.target, make_drafter("token", models), tok, ids, 8, 4,
                                   SamplingConfig(1.0, 0, 1.0, 3)))
    greedy = next(speculative_steps(models.target, make_drafter("token", models), tok, ids, 8, 4, acceptance="block"))
    assert token.acceptance == "token" and not token.block_weight and token.tokenwise_kept is None
    assert greedy.verify_mode == "greedy" and not F.is_block(greedy)


def test_block_rows_at_a_runs_positions(models):
    """With K = 1 block verification IS rejection sampling, block for block (h_1 = p_1 = min(1, p/q)); averaged over
    the sampled drafts it estimates the rejection-sampling row, sum min(p, q), computed exactly at the same positions
    (the sampling starts from the right prefix). With the run's K, block keeps no fewer on average."""
    from conftest import chat
    from specviz.engine.plain import plain_steps
    from specviz.engine.loop import run_steps
    from specviz.labs.acceptance_rules import block_rows, live_rules

    tok = models.tokenizer
    prompt = chat(tok, "Explain beam search")
    output = run_steps(plain_steps(models.target, tok, prompt, 10))[1].token_ids
    one = block_rows(models.target, models.draft, prompt, output, 1.0, 1, positions=8, samples=32)
    assert [r["position"] for r in one] == list(range(1, 9))
    assert all(r["block"] == pytest.approx(r["token-wise"], abs=1e-9) for r in one)
    exact = live_rules(models.target, models.draft, tok, prompt, output, 1.0, positions=8)
    sampled = sum(r["token-wise"] for r in one) / 8
    assert sampled == pytest.approx(exact["mean"]["rejection sampling"], abs=0.12)  # 256 draws: ~4 standard errors
    live = live_rules(models.target, models.draft, tok, prompt, output, 1.0, positions=8, k=4)
    b = live["block"]
    assert b["k"] == 4 and len(b["rows"]) == 8 and live["mean"][BLOCK] == pytest.approx(b["block"] / 4)
    for row in live["rows"]:
        assert 0 <= row[TOKENWISE] <= 1 and 0 <= row[BLOCK] <= 1
        # a block keeps its later drafts only with its first, and 1 - TV bounds the first (sampling: a margin)
        assert row[TOKENWISE] <= 1 - row["tv"] + 0.2
    assert b["block"] >= b["token-wise"] - 3 * b["gain_se"]


# ---------------------------------------------------------------- the Speculative page
def test_the_speculative_page_offers_block_verification(models):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.run()
    at.switch_page("pages/2_Speculative_decoding.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="sp_mode").options == ["greedy match", "rejection sampling", "block verification"]
    at.radio(key="sp_mode").set_value("block verification").run()
    assert not at.exception
    assert at.toggle(key="sp_predict").disabled  # a block's verdicts hang on weights the verify chart does not show
    at.button(key="spec_whole").click().run()  # the whole first cycle
    assert not at.exception, [e.value for e in at.exception]
    charts = {e.proto.id.rsplit("-", 1)[-1]: json.loads(e.proto.spec) for e in at.get("plotly_chart")}
    assert "block_fig" in charts and "verdict_fig" in charts
    block = charts["block_fig"]
    assert block["layout"]["title"]["text"].startswith("3b · Block verification kept")
    assert {"block weight h", "η (the uniform drawn)"} <= {t["name"] for t in block["data"]}
    assert "τ = the last i with η ≤ h" in charts["verdict_fig"]["layout"]["title"]["text"]
    assert any(c.value == F.BLOCK_CAPTION for c in at.caption)
    assert at.query_params["mode"] == "block"  # a link reopens block verification
    for _ in range(8):  # on into the next cycles, Step by Step, and back
        at.button(key="spec_step").click().run()
    at.button(key="spec_back").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # token-wise again: no block figure
    at.radio(key="sp_mode").set_value("rejection sampling").run()
    at.button(key="spec_whole").click().run()
    assert not at.exception
    assert not any(e.proto.id.endswith("-block_fig") for e in at.get("plotly_chart"))


def test_a_link_reopens_block_verification(models):
    """?mode=block on a first visit selects the block choice (a copied link keeps the rule)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["mode"], at.query_params["seed"] = "block", "7"
    at.run()
    at.switch_page("pages/2_Speculative_decoding.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="sp_mode").value == "block verification" and at.number_input(key="sp_seed").value == 7


def test_a_tiny_probability_in_a_verdict_title_keeps_its_digits():
    """A test that failed at η = 3e-5 against h = 4e-6 must not read "0.00 > 0.00"."""
    from specviz.figures.spec_cycle import _odds

    assert [_odds(x) for x in (0.0, 1.0, 0.634, 0.01, 0.0099, 3.2e-5)] == ["0", "1.00", "0.63", "0.01", "9.9e-03",
                                                                          "3.2e-05"]
