"""The Tree speculation page under AppTest: one step draws the tree (hover: the root-to-node path, p, q, the
verdict) and the mask (position ids under it); chain vs tree measured at a small budget draws v(n), the side
by side bars and the break-even curve with the data the engine measured; the tree chi-square shows its fit."""
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def figures(at) -> dict:
    """Each chart's figure JSON by its title (or its first trace's name)."""
    out = {}
    for e in at.get("plotly_chart"):
        fig = json.loads(e.proto.spec)
        title = fig["layout"].get("title", {}).get("text") or fig["data"][0].get("name", "")
        out[title] = fig
    return out


def page(prompt=None):
    at = AppTest.from_file(APP, default_timeout=600)
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
    charts = at.get("plotly_chart")
    assert len(charts) >= 2
    assert any(m.label == "Tokens per target pass" for m in at.metric)
    figs = figures(at)
    mask = figs["tree attention mask (rows attend to columns)"]["data"][0]
    # every column's position id under it (12 nodes + 4 context columns: the compact "index<br>position id")
    assert all(x.split("<br>")[1].removeprefix("pos ").isdigit() for x in mask["x"]) and all("(pos " in y for y in mask["y"])
    tree = next(f for f in figs.values() if any(t.get("name") == "root" for t in f["data"]))
    hovers = [h for t in tree["data"] if t.get("hovertext") and t["name"] in ("accepted", "rejected", "not reached")
              for h in t["hovertext"]]  # the drafted nodes (the star after the path is the target's own token)
    assert hovers and all("path: " in h and "<br>p " in h and ", q " in h for h in hovers)
    assert any("<b>accepted</b>" in h or "<b>rejected</b>" in h for h in hovers)

    at.button(key="tree_end").click().run()  # the defaults' last cycle has one token left: no tree to draft
    last = at.session_state["tree"][1].current()
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
    assert any("p-value" in m.value for m in at.markdown)


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
    at.button(key="tree_step").click().run()
    assert not at.exception, at.exception
    assert any(m.label == "Tokens per target pass" for m in at.metric)
