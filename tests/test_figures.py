"""Figure builders and page helpers on synthetic trace events: no model needed."""
import dataclasses

import plotly.graph_objects as go
import pytest

from specviz.figures.beam_tree import beam_vs_greedy, length_penalty_note
from specviz.figures import spec_cycle as F
from specviz.figures.beam_tree import distinct_labels, final_ranking, readable
from specviz.labs.measure import per_position_tests
from specviz.trace import CacheState, Cycle, DraftToken, Hypothesis, TokenProb, Verdict

pytestmark = pytest.mark.fast  # synthetic events only: no model


def cycle(k=16, mode="greedy", origin="correction", new_p=0.3):
    drafts = tuple(DraftToken(i, 100 + i, f"t{i}", 0.5,
                              (TokenProb(100 + i, f"t{i}", 0.5), TokenProb(0, "<|endoftext|>", 0.0)))
                   for i in range(k))
    verdicts = (Verdict(0, 100, "t0", 0.09, 0.10, 0.9, 0.95 if mode == "sampling" else None, False,
                        (TokenProb(7, "x", 0.6), TokenProb(100, "t0", 0.09)), (TokenProb(100, "t0", 0.10),)),)
    return Cycle(cycle=0, context_len=30, k=k, drafts=drafts, verify_positions=k + 1, verdicts=verdicts, accepted=0,
                 new_token=7, new_text="x", new_origin=origin,
                 residual_top=(TokenProb(7, "x", 0.7), TokenProb(8, "<b>", 0.3)),
                 residual_fallback=False, target_cache=CacheState(30 + k, 30), draft_cache=CacheState(29 + k, 30),
                 emitted=(7,), origins=(origin,), verify_mode=mode, draft_passes=k,
                 target_top=tuple(TokenProb(7, "x", 0.6) for _ in range(k + 1)), p_draft=tuple(0.09 for _ in range(k)),
                 new_p=new_p)


def test_a_draft_position_shows_only_tokens_with_mass_on_a_fitted_axis():
    fig = F.draft_proposal(cycle(), 3).to_dict()
    assert len(fig["data"]) == 1 and fig["layout"]["title"]["text"] == "4: t3"
    assert "<|endoftext|>" not in fig["data"][0]["x"]  # zero-probability tokens dropped
    assert fig["data"][0]["text"] == ["0.50"] and fig["layout"]["yaxis"]["range"][1] < 1  # q = 0.5: fits, not 0-1
    rows = {k: [list(r) for r in F.draft_rows(k)] for k in range(17)}  # at most 4 charts a row, balanced
    assert rows[0] == [] and rows[1] == [[0]] and rows[4] == [[0, 1, 2, 3]] and rows[6] == [[0, 1, 2], [3, 4, 5]]
    assert [len(r) for r in rows[13]] == [4, 3, 3, 3] and [len(r) for r in rows[16]] == [4] * 4
    for k, r in rows.items():
        sizes = [len(x) for x in r]
        assert (sum(r, []) == list(range(k)) and all(s <= 4 for s in sizes)
                and max(sizes, default=0) - min(sizes, default=0) <= 1)


def test_verify_pass_shows_top_choice_and_p_draft():
    fig = F.verify_pass(cycle(k=4)).to_dict()
    top = next(d for d in fig["data"] if d["name"].startswith("target's top choice"))
    pd = next(d for d in fig["data"] if d["name"] == "p(draft token)")
    assert len(top["x"]) == 5 and len(pd["x"]) == 4 and pd["y"][0] == 0.09


def test_verdicts_have_a_cue_beside_red_and_green():
    """A colour-blind learner tells a match from a mismatch by ✓/✗ and a hatch, and the chips' origins by the
    underline's style, not by colour alone."""
    fig = F.verify_pass(cycle(k=4)).to_dict()  # every draft differs from the target's top choice here
    pd = next(d for d in fig["data"] if d["name"] == "p(draft token)")
    assert pd["marker"]["pattern"]["shape"] == ["x"] * 4 and all(t.startswith("✗") for t in pd["text"])
    fig = F.verdicts(cycle(k=4, mode="sampling")).to_dict()
    test = next(d for d in fig["data"] if d["name"] == "min(1, p/q)")
    assert test["marker"]["pattern"]["shape"] == "x"  # rejected
    chips = F.token_chips([("a", "accepted"), ("b", "correction"), ("c", "bonus"), ("d", "resampled")])
    styles = {s.split("border-bottom:3px ")[1].split(" ")[0] for s in chips.split('class="chip"')[1:]}
    assert len(styles) == 4  # four origins, four line styles
    assert len({s.split("border-bottom:3px ")[1].split(" ")[0] for s in F.chip_legend().split("<span")[1:]}) >= 4


def test_greedy_verdicts_have_no_accept_row_and_fit_the_axis():
    fig = F.verdicts(cycle(k=4)).to_dict()
    assert not any(d["name"] in ("u", "min(1, p/q)") for d in fig["data"])
    assert fig["layout"]["yaxis"]["range"][1] < 1  # p = 0.6 at most: the axis fits, not 0-1
    assert F.resolution(cycle(k=4)) is None and F.resolution_text(cycle(k=4)).startswith("**4 ·")
    fig = F.verdicts(cycle(k=4, mode="sampling")).to_dict()
    assert any(d["name"] == "u" for d in fig["data"])


def test_rare_residual_draw_is_explained_and_escaped():
    c = cycle(k=4, mode="sampling", origin="resampled", new_p=0.0004)
    note = F.rare_draw_note(c)
    assert note and "0.0004" in note and "exactly" in note
    assert F.rare_draw_note(cycle(k=4, mode="sampling", origin="resampled", new_p=0.3)) is None
    fig = F.resolution(c).to_dict()
    assert "&lt;b&gt;" in " ".join(fig["data"][0]["x"])  # token text escaped
    assert "yet it got 70% of the residual" in note  # the residual made it likelier than p did
    thin = dataclasses.replace(c, residual_top=(TokenProb(9, "y", 0.99997), TokenProb(7, "x", 0.00003)))
    note = F.rare_draw_note(thin)
    assert "only 0.003 % of the residual" in note and "0%" not in note and "yet" not in note
    assert F.resolution(thin).to_dict()["data"][0]["text"] == ["1.000", "3e-05"]  # not "0.000"
    tiny = dataclasses.replace(cycle(k=2, mode="sampling"), p_draft=(0.0043, 0.5))
    labels = next(d for d in F.verify_pass(tiny).to_dict()["data"] if d["name"] == "p(draft token)")["text"]
    assert labels[0].endswith("p 0.0043 · q 0.5") and labels[1].endswith("p 0.5 · q 0.5")  # not "p 0.00"


def test_cache_strip_has_rows_and_token_text():
    fig = F.cache_strip(cycle(k=4), ["a", "b", "c"]).to_dict()
    hm = fig["data"][0]
    assert hm["type"] == "heatmap" and list(hm["y"]) == ["draft", "target"]
    assert "t0" in hm["text"][1] and "c" in hm["text"][1]
    c = cycle(k=4)
    title = fig["layout"]["title"]["text"]  # the numbers say what they are: filled, kept, and what was rolled back
    gone = c.target_cache.before - c.target_cache.after
    assert f"target {c.target_cache.before}→{c.target_cache.after} " in title and "filled → kept" in title
    assert (f"({gone} rolled back)" if gone else "(nothing rolled back)") in title


def test_final_ranking_shows_where_hypotheses_differ():
    base = "Beam search is a non-deterministic search algorithm used in computer science to find the"
    texts = [base + " shortest", base + " best", "Something else entirely<|im_end|>"]
    labels = distinct_labels([readable(t) for t in texts])
    assert len(set(labels)) == 3 and labels[0].endswith("shortest") and "<|im_end|>" not in labels[2]
    hyps = [Hypothesis((1,) * 12, t, -6.0, -0.5) for t in texts]
    fig = final_ranking(hyps).to_dict()
    assert "&lt;|im_end|&gt;" not in " ".join(fig["data"][0]["y"])
    assert length_penalty_note(hyps, 1.0) and "same length" in length_penalty_note(hyps, 1.0)
    assert length_penalty_note(hyps[:2] + [Hypothesis((1,) * 8, "x", -4.0, -0.5)], 1.0) is None


def test_per_position_chi_square_with_expected_counts():
    spec = [(1, 2, 3)] * 30 + [(4, 5, 6)] * 30
    plain = [(1, 2, 3)] * 28 + [(4, 5, 6)] * 32
    tests = per_position_tests(spec, plain, 3)
    assert [t["position"] for t in tests] == [0, 1, 2]
    assert all(t["pvalue"] > 0.05 for t in tests)
    assert abs(sum(tests[0]["expected"][0]) - 60) < 1e-9


@pytest.mark.parametrize("k, mode, origin", [(1, "greedy", "correction"), (4, "greedy", "bonus"),
                                             (16, "greedy", "correction"), (3, "sampling", "resampled"),
                                             (12, "sampling", "resampled"), (0, "greedy", "target")])
def test_unvalidated_figures_pass_plotlys_validation(k, mode, origin):
    """The speculative page's charts are built unchecked, for speed (figures.build): plotly's full validation of
    each one must still pass, so a misspelt or misplaced property fails here (e.g. an axis title given as a bare
    string, which the browser's Plotly no longer draws)."""
    c = cycle(k=k, mode=mode, origin=origin)
    figs = [F.draft_proposal(c, 0) if k else None, F.draft_proposal(c, k - 1) if k else None,
            F.verify_pass(c), F.verdicts(c), F.resolution(c),
            F.cache_strip(c, ["a", "b"])]
    for fig in filter(None, figs):
        d = fig.to_dict()
        checked = go.Figure(d).to_dict()  # raises ValueError on an invalid property
        assert d["layout"].pop("template") == "none"  # validation turns the name into the (empty) template itself
        checked["layout"].pop("template")
        assert checked["data"] == d["data"] and checked["layout"] == d["layout"]  # nothing was coerced


@pytest.mark.parametrize("k, mode", [(4, "greedy"), (12, "sampling")])
def test_step_charts_have_fixed_margins_and_the_specviz_look(k, mode):
    """Plotly's automargin lays a new chart out a second time: the Speculative page's charts give their margins
    instead (every axis automargin=False, room left for the tick labels) and carry the specviz look."""
    c = cycle(k=k, mode=mode, origin="resampled")
    for fig in [F.draft_proposal(c, 0), F.verify_pass(c), F.verdicts(c), F.resolution(c), F.cache_strip(c, ["a"])]:
        layout = fig.to_dict()["layout"]
        axes = [v for key, v in layout.items() if key.startswith(("xaxis", "yaxis"))]
        assert axes and all(a["automargin"] is False for a in axes), layout["title"]["text"]
        assert layout["margin"]["l"] >= 30 and layout["margin"]["b"] >= 50  # room for the tick labels
        assert layout["font"]["family"].startswith('"Source Sans"') and layout["template"] == "none"


def test_token_labels_read_in_charts():
    from specviz.figures import label, short_label
    assert label("\xa0") == "␣" and label(" \u2009") == "␣␣"  # a non-breaking or thin space is not drawn as nothing
    assert short_label("<|im_end|>", 6) == "&lt;|im_…"  # cut before escaping: no half entity
    c = cycle(k=4)
    c = dataclasses.replace(c, drafts=tuple(dataclasses.replace(d, text="0") for d in c.drafts))
    # "0": a token
    assert all(F.draft_proposal(c, i).to_dict()["layout"]["xaxis"]["type"] == "category" for i in range(4))


def test_verdict_legend_sits_above_the_subplot_titles():
    for k in (3, 12):
        fig = F.verdicts(cycle(k=k, mode="sampling")).to_dict()["layout"]
        titles = [a for a in fig["annotations"] if a["text"]]
        assert fig["legend"]["y"] > max(a["y"] for a in titles) and fig["legend"]["yanchor"] == "bottom"


def test_what_k_buys_names_each_curve_where_it_leaves_the_chart():
    from specviz.figures.speedup import what_k_buys
    from specviz.theory import expected_tokens

    fig = what_k_buys(4).to_dict()
    curves, top = fig["data"], fig["layout"]["yaxis"]["range"][1]
    assert [d["hovertemplate"].split(",")[0] for d in curves] == ["K = 1", "K = 2", "K = 8", "K = 16", "K = 4"]
    for d in curves:
        k = int(d["hovertemplate"].split(",")[0][4:])
        assert d["y"] == pytest.approx([expected_tokens(a, k) for a in d["x"]])
    notes = {n["text"]: n for n in fig["layout"]["annotations"]}
    assert notes["<b>K = 4 (yours)</b>"]["y"] == pytest.approx(expected_tokens(0.99, 4))  # at the right end
    assert notes["K = 16"]["y"] <= top and notes["K = 16"]["x"] < 0.99  # left through the top: named there
    assert fig["layout"]["shapes"][0]["y0"] == 5 and "ceiling K + 1 = 5" in notes
    assert not any(ax.get("automargin") for key, ax in fig["layout"].items() if key[1:5] == "axis")  # drawn once
    assert what_k_buys(16).to_dict()["layout"]["yaxis"]["range"][1] > 17  # the page's K always fits


def test_speedup_charts_colour_each_a_alike():
    from specviz.figures.speedup import improvement, tokens_per_pass
    colors = lambda fig: {t.name: t.line.color for t in fig.data if t.name and t.name.startswith("a = ")}
    left, right = colors(tokens_per_pass(0.75)), colors(improvement(0.75, 0.1))
    assert len(left) == 6 and left == right and len(set(left.values())) == 6


def test_tokens_that_differ_only_by_a_space_are_told_apart():
    from specviz.figures import token_labels
    assert token_labels([" hash", "hash", " beam", "<b>"]) == ["␣hash", "hash", " beam", "&lt;b&gt;"]  # only the pair
    assert token_labels([" <b>", "<b>"]) == ["␣&lt;b&gt;", "&lt;b&gt;"]  # escaped in both branches
    assert token_labels(["\n", " \n"]) == ["↵", "␣↵"]
    c = cycle(k=2)
    top = (TokenProb(100, " hash", 0.5), TokenProb(101, "hash", 0.3), TokenProb(102, " the", 0.2))
    c = dataclasses.replace(c, drafts=(dataclasses.replace(c.drafts[0], q_top=top),) + c.drafts[1:],
                            verdicts=(dataclasses.replace(c.verdicts[0], p_top=top, q_top=top[:2]),),
                            new_origin="resampled", residual_top=top, new_token=101)
    assert F.draft_proposal(c, 0).to_dict()["data"][0]["x"] == ["␣hash", "hash", " the"]
    assert F.verdicts(c).to_dict()["data"][0]["x"] == ["▶␣hash", "hash", " the"]  # ▶: the draft token ruled on
    assert F.resolution(c).to_dict()["data"][0]["x"] == ["␣hash", "▶hash", " the"]


def test_for_browser_writes_the_template_into_the_layout():
    """Streamlit hands Plotly.react a JSON copy of each new chart; a template object or array copies make react draw
    the chart a second time (specviz.figures, "drawn once, not twice"). for_browser writes the template's values into
    the layout wherever the figure left them unset (the figure's own values win), sets template "none" and a fixed
    datarevision, and leaves what the chart shows unchanged."""
    from plotly.subplots import make_subplots

    from specviz.figures import TEMPLATE, for_browser

    fig = make_subplots(rows=1, cols=2, subplot_titles=["left", "right"])
    fig.add_bar(y=[1, 2], row=1, col=1)
    fig.add_scatter(y=[3, 1], row=1, col=2)
    fig.update_layout(title="a bare title", xaxis2=dict(showgrid=True), xaxis3=dict(showline=True), template=TEMPLATE)
    before = fig.to_dict()
    layout = for_browser(fig).to_dict()["layout"]
    look = TEMPLATE.to_plotly_json()["layout"]
    assert layout["template"] == "none" and layout["datarevision"] == 1
    assert layout["font"] == look["font"] and layout["paper_bgcolor"] == "white"
    assert layout["title"]["text"] == "a bare title" and layout["title"]["font"]["weight"] == 600
    for axis in ("xaxis", "xaxis2"):  # every axis the traces use gets the template's axis look
        assert layout[axis]["title"]["standoff"] == 12 and layout[axis]["zeroline"] is False
    # ... but a colour that would switch its feature on only where the feature is shown anyway (Plotly's coerce2)
    assert "linecolor" not in layout["xaxis"] and "tickcolor" not in layout["xaxis"]  # no axis line, no ticks
    assert layout["xaxis3"]["linecolor"] == look["xaxis"]["linecolor"]  # this axis draws its line itself
    assert layout["yaxis2"]["gridcolor"] == look["yaxis"]["gridcolor"]
    assert layout["xaxis"]["showgrid"] is False and layout["xaxis2"]["showgrid"] is True  # the figure's own value wins
    assert layout["xaxis2"]["domain"] == before["layout"]["xaxis2"]["domain"]
    assert layout["yaxis"]["gridcolor"] == look["yaxis"]["gridcolor"]  # a value axis: its grid is on by default
    assert [a["font"]["color"] for a in layout["annotations"]] == [look["annotationdefaults"]["font"]["color"]] * 2
    assert [a["font"]["size"] for a in layout["annotations"]] == [16, 16]  # make_subplots' own title size kept
    assert for_browser(fig).to_dict()["data"] == before["data"]
    go.Figure(for_browser(fig).to_dict())  # still a valid figure
    built = F.verify_pass(cycle(k=4))
    assert for_browser(built) is built  # build() made it ready: nothing to redo per chart


def test_beam_vs_greedy_says_b1_is_greedy_and_claims_no_global_optimum():
    one = beam_vs_greedy(None, [1, 2], -4.4, [1, 2], -4.4, beams=1)
    assert "B = 1" in one and "greedy" in one and "globally" not in one
    same = beam_vs_greedy(None, [1, 2], -4.4, [1, 2], -4.4, beams=3)
    assert "3 hypotheses" in same and "globally best" not in same  # beam search is not exhaustive


def test_the_breakdown_waterfall_ends_at_the_measured_speedup():
    import math

    from specviz.figures.breakdown import breakdown_waterfall
    from specviz.theory import speedup_breakdown

    parts = speedup_breakdown(2.4, 1.15, k=4, c=0.1, v=1.3)
    fig = breakdown_waterfall(parts).to_dict()
    bars = fig["data"][0]
    assert bars["measure"][-1] == "total" and bars["text"][-1] == "1.15×"
    assert sum(bars["y"][:-1]) == pytest.approx(math.log10(1.15))  # the steps add up (in log) to the measured
    assert bars["x"][0].startswith("if drafting") and len(bars["x"]) == 5


def test_beam_vs_greedy_names_pruning_or_the_length_penalty_by_the_scores():
    """Issue 45 A5: at α = 0, or with equal lengths, the length penalty cannot be why beam returned a less likely
    sequence than greedy: beam pruned greedy's path. With α and different lengths, it can be."""
    class _Tok:
        def decode(self, ids):
            return " ".join(f"t{i}" for i in ids)

    at_zero = beam_vs_greedy(_Tok(), [1, 2, 3], -4.0, [1, 5, 6, 7], -5.0, beams=3, length_penalty=0.0)
    same_len = beam_vs_greedy(_Tok(), [1, 2, 3], -4.0, [1, 5, 6], -5.0, beams=3, length_penalty=1.0)
    for text in (at_zero, same_len):
        assert "pruned" in text and "length penalty chose" not in text
    # greedy 3 tokens at -4.0 (score -1.333), beam 8 tokens at -5.0 (score -0.625): the penalty chose beam's
    penalised = beam_vs_greedy(_Tok(), [1, 2, 3], -4.0, [1, 5, 6, 7, 8, 9, 10, 11], -5.0, beams=3, length_penalty=1.0)
    assert "length penalty chose" in penalised and "pruned" not in penalised
    # different lengths but greedy still scores higher after the penalty: pruning again
    still = beam_vs_greedy(_Tok(), [1, 2, 3, 4], -4.0, [1, 5, 6], -5.0, beams=3, length_penalty=1.0)
    assert "pruned" in still


def test_a_speedup_that_prints_as_1_00_is_even_not_a_slowdown():
    # a learner's walk: "1.00×, a slowdown" contradicted its own number (the rule used the unrounded 0.996)
    from specviz.figures.drafters import slowdown, speedup_bars
    rows = [{"drafter": d, "speedup vs plain greedy": v, "speedup range": (v, v), "acceptance rate": 0.15}
            for d, v in (("ngram", 0.996), ("early-exit", 0.994), ("feature", 1.3))]
    assert [slowdown(r["speedup vs plain greedy"]) for r in rows] == [False, True, False]
    bar = speedup_bars(rows).data[0]
    assert bar.text[0].startswith("1.00×, even") and "slowdown" not in bar.text[0]
    assert bar.text[1].startswith("0.99×, a slowdown") and list(bar.marker.pattern.shape) == ["", "/", ""]
