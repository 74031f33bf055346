"""The Tree speculation page under AppTest: one step draws the tree (hover: the root-to-node path, p, q, the
verdict) and the mask (position ids under it); chain vs tree measured at a small budget draws v(n), the side
by side bars and the break-even curve with the data the engine measured; the tree chi-square shows its fit."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.labs.tree_lossless import load_typical_tv

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def figures(at) -> dict:
    """Each chart's figure JSON by its title (or its first trace's name)."""
    out = {}
    for e in at.get("plotly_chart"):
        fig = json.loads(e.proto.spec)
        title = fig["layout"].get("title", {}).get("text") or fig["data"][0].get("name", "")
        out[title] = fig
    return out


def page(prompt=None, **query):
    at = AppTest.from_file(APP, default_timeout=600)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if prompt:
        at.session_state["s_prompt"] = prompt
    at.switch_page("pages/7_Tree_speculation.py").run()
    assert not at.exception, at.exception
    return at


def test_tree_page_steps_and_draws():
    at = page()
    at.button(key="tree_step").click().run()
    assert not at.exception, at.exception
    # first impression: on its own defaults and the app's default prompt, cycle 1 shows speculation working
    first = at.session_state["tree"].replay.current()
    assert first.cycle == 0 and first.verify_mode == "greedy" and first.accepted >= 2, first.accepted
    assert any(c.value.startswith("Colour and shape: the verdict") for c in at.caption)
    # the walk keeps a path from the root, usually ending at an inner node: not "one root-to-leaf path"
    intro = at.caption[0].value
    assert "root-to-leaf" not in intro and "usually ending at an inner node" in intro
    charts = at.get("plotly_chart")
    assert len(charts) >= 2
    assert any(m.label == "Tokens per target pass" for m in at.metric)
    figs = figures(at)
    mask = figs["tree attention mask (rows attend to columns)"]["data"][0]
    # every column's position id under it (12 nodes + 4 context columns: the compact "index<br>position id")
    assert (all(x.split("<br>")[1].removeprefix("pos ").isdigit() for x in mask["x"])
            and all("(pos " in y for y in mask["y"]))
    tree = next(f for f in figs.values() if any(t.get("name") == "root" for t in f["data"]))
    hovers = [h for t in tree["data"] if t.get("hovertext") and t["name"] in ("accepted", "rejected", "not reached")
              for h in t["hovertext"]]  # the drafted nodes (the star after the path is the target's own token)
    assert hovers and all("path: " in h and "<br>p " in h and ", q " in h for h in hovers)
    assert any("<b>accepted</b>" in h or "<b>rejected</b>" in h for h in hovers)



def test_a_cycle_with_one_token_left_draws_no_tree():
    at = page("Explain how a hash table works.")  # at the page's defaults its last cycle has one token left
    at.button(key="tree_end").click().run()
    last = at.session_state["tree"].replay.current()
    assert not at.exception and not last.nodes
    assert any(m.value.startswith(f"**Cycle {last.cycle + 1}** · no tree · ") for m in at.markdown)
    assert any(c.value.startswith("No tree this cycle") for c in at.caption)
    assert "tree attention mask (rows attend to columns)" not in figures(at)  # no empty grid of axes


def test_chain_vs_tree_measured_and_drawn():
    at = page("What is 2+2?")  # a short answer: the timed runs end in a few cycles
    at.slider(key="tr_budget").set_value(4).run()
    at.slider(key="tr_depth").set_value(2).run()
    at.button(key="tr_compare").click().run()
    assert not at.exception, at.exception
    figs = figures(at)
    v = figs["v(n): the cost of verifying n positions in one target forward"]["data"]
    assert v[0]["x"] == [1, 2, 4, 8, 16, 32, 64] and all(y > 0 for y in v[0]["y"])
    assert v[1]["y"] == [v[0]["y"][0]] * 7  # the flat (GPU-like) line at v(1)
    side = next(f for f in figs.values() if f["data"][0].get("name") == "tokens per verify pass")["data"]
    names = side[0]["x"]  # Medusa heads too when they are shipped
    assert names[:4] == ["plain greedy", "chain K=2", "chain K=4", "EAGLE-2 tree N=4"]
    assert names[4:] in ([], ["Medusa heads N=4"])
    assert side[0]["y"][0] == 1.0 and all(t >= 1.0 for t in side[0]["y"])  # plain: one token per pass
    assert all(s > 0 for s in side[4]["y"])  # wall clock
    table = at.dataframe[0].value
    assert table["identical to greedy"].all()
    # the verdict is this run's: the fastest row named is the one with the least wall clock in the table
    fastest = table.loc[table["seconds"].idxmin(), "name"]
    says = next(m.value for m in at.markdown if "What this machine says" in m.value)
    assert f"Fastest by wall clock in this run: **{fastest}**" in says and "This measurement took" in says
    assert not any("Which is faster on this CPU: the chain" in c.value for c in at.caption)  # no dated claim
    bench = next((c.value for c in at.caption if c.value.startswith("The project's benchmark of ")), None)
    if bench is not None:  # its figures come from the JSON it names
        from specviz.labs.tree_compare import tree_benchmark
        b = tree_benchmark()
        assert f"`docs/{b['file']}`" in bench and f"{b['tree']['tau']:.2f} tokens per verify pass" in bench
        assert f"found the **{b['faster']}** faster" in bench
    assert at.button(key="tr_compare").label == "Measure again"  # kept for these settings, measured on demand
    # other settings: the old figures stay, marked stale and drawn at the settings they were measured at
    at.slider(key="tr_depth").set_value(3).run()
    assert not at.exception, at.exception
    assert any("Stale figures" in w.value for w in at.warning)
    stale = next(m.value for m in at.markdown if "What this machine says" in m.value)
    assert "chain at K = 2" in stale and "A tree sized for this machine" in [h.value for h in at.subheader]
    even = next(f for t, f in figs.items() if t.startswith("Where a tree stops paying"))["data"]
    assert even[0]["x"][0] == 2 and even[2]["x"] == [4]
    assert any("What this machine says" in m.value for m in at.markdown)


def test_tree_chi_square_on_the_page():
    at = page()
    at.button(key="tr_chi").click().run()
    assert not at.exception, at.exception
    figs = figures(at)
    fits = [f for t, f in figs.items() if "observed vs n·p" in t]
    assert len(fits) == 2
    first = fits[0]["data"]
    assert abs(sum(first[0]["y"]) - 12_000) == 0 and abs(sum(first[1]["y"]) - 12_000) < 1e-6
    # each tab's sentence is worded from its own p-value (ui.measured keeps the result for the server)
    from ui.measured import results
    res = next(value for (section, _), (_, value) in results().items.items() if section == "tr_chi")
    texts = [m.value for m in at.markdown if "p-value" in m.value]
    assert len(texts) == 2
    for fit, text in zip((res["first"], res["pairs"]), texts):
        assert ("no detectable difference" in text) == (fit["pvalue"] >= 0.025), text
        assert ("differ from n·p by more than sampling noise" in text) == (fit["pvalue"] < 0.025), text
    assert any(c.value.startswith("This run took") for c in at.caption)


def test_medusa_choice_editor_and_typical_toggle():
    """Medusa heads: the medusa_choices editor refuses bad input with a clear message (or, in a build without
    shipped heads, the page says so and shows the EAGLE-2 tree); typical acceptance steps without error."""
    at = page()
    at.radio(key="tr_drafter").set_value("Medusa heads").run()
    assert not at.exception, at.exception
    if any("not shipped" in i.value for i in at.info):
        assert "tr_choices" not in [t.key for t in at.text_area]
    else:
        at.text_area(key="tr_choices").set_value("[(0,), (1, 0)]").run()
        assert any("which is not in the list" in e.value and "Using the shipped list" in e.value for e in at.error)
    at.toggle(key="tr_typical").set_value(True).run()
    # greedy: typical acceptance is exact match, as in Medusa at temperature 0, and the page says so
    assert any(c.value.startswith("Greedy: typical acceptance is exact match") for c in at.caption)
    at.button(key="tree_step").click().run()
    assert not at.exception, at.exception
    assert any(m.label == "Tokens per target pass" for m in at.metric)
    assert at.session_state["tree"].replay.current().verify_mode == "greedy"
    at.radio(key="tr_mode").set_value("sampling (T = 1)").run()
    at.button(key="tree_step").click().run()
    assert not at.exception, at.exception
    assert at.session_state["tree"].replay.current().verify_mode == "typical"
    measured = load_typical_tv()
    assert measured is not None, "models/medusa/typical_tv.json is missing"
    said = next(c.value for c in at.caption if "typical_tv.json" in c.value)
    assert f"**{measured['typical_tv_mean']:.3f}**" in said and measured["date"] in said


def test_hostile_medusa_choices_text_and_link_keep_the_page():
    """'-' x 5,000 then '1' (RecursionError in ast.literal_eval) or x 100,000 (MemoryError) crashed the page and
    its controls vanished, typed or in a link; now one line says what is wrong and the shipped list is used."""
    at = page(drafter="medusa", choices="-" * 100_000 + "1")
    assert not at.exception, at.exception
    if at.session_state["tr_drafter"] != "Medusa heads":
        pytest.skip("this build ships no Medusa heads")
    assert any("100,001 characters" in e.value for e in at.error)
    shipped = json.loads((Path(APP).parent / "models" / "medusa" / "config.json").read_text())["choices"]
    assert at.text_area(key="tr_choices").value == repr([tuple(c) for c in shipped])
    for text in ("-" * 3000 + "1", "(" * 3999, "[(0,), (" + "9" * 3900 + ",)]"):
        at.text_area(key="tr_choices").set_value(text).run()
        assert not at.exception, at.exception
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and "\n" not in errors[0] and "Using the shipped list" in errors[0]
    at.button(key="tree_step").click().run()  # and the page still runs on the shipped list
    assert not at.exception and at.session_state["tree"].replay.current() is not None
