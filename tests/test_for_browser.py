"""specviz.figures.for_browser writes a figure's template into its layout so that Streamlit's second Plotly.react
does not draw the chart again (tests/test_browser.py counts the draws). It must not change what is drawn: each
figure here is laid out by Plotly itself, in headless Chromium (plotly.js from the plotly package, no network),
once as the template form and once as for_browser gives it, and Plotly's full layout and full data must agree."""
import json
import os
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

import specviz.figures as figures
from conftest import browser  # noqa: F401  (the shared Chromium fixture)
from specviz.figures import TEMPLATE, _inline
from specviz.figures import spec_cycle as F
from specviz.figures.beam_tree import final_ranking
from specviz.trace import Hypothesis
from test_figures import cycle

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")]
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

# Plotly's full layout and data, less its private keys and what for_browser changes on purpose
LAID_OUT = """async (spec) => {
  const d = document.createElement('div'); document.body.appendChild(d);
  await Plotly.newPlot(d, spec.data, Object.assign({}, spec.layout, {width: 800}), {});
  const clean = (v) => {
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === 'object') {
      const o = {};
      for (const k of Object.keys(v)) if (k[0] !== '_' && typeof v[k] !== 'function' && k !== 'uid') o[k] = clean(v[k]);
      return o;
    }
    return v;
  };
  const layout = clean(d._fullLayout), data = clean(d._fullData);
  delete layout.template; delete layout.datarevision;
  Plotly.purge(d); d.remove();
  return {layout, data};
}"""


def synthetic():
    """Each case where Plotly's defaults depend on the traces: category axes of vertical and horizontal bars (no
    grid along them), a heatmap (ticks on), subplots with titles, a second y axis, axes that switch a line or grid
    on themselves, a bare title string."""
    t = dict(template=TEMPLATE)
    yield go.Figure(go.Bar(x=["a", "b"], y=[0.2, 0.7]), layout=t)
    yield go.Figure(go.Bar(y=["first", "second"], x=[-3.0, -1.5], orientation="h"), layout=dict(title="bare", **t))
    yield go.Figure(go.Scatter(x=[0, 1, 2], y=[-1, 0, 2], mode="lines+markers"), layout=t)
    yield go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], x=["p", "q"], y=["r", "s"]), layout=t)
    sub = make_subplots(rows=1, cols=2, subplot_titles=["left", "right"])
    sub.add_bar(x=["a", "b"], y=[1, 2], row=1, col=1)
    sub.add_scatter(y=[3, 1], row=1, col=2)
    yield sub.update_layout(template=TEMPLATE, xaxis2=dict(showline=True), yaxis2=dict(showgrid=False, zeroline=True))
    twin = go.Figure([go.Bar(x=[1, 2], y=[3, 4]), go.Scatter(x=[1, 2], y=[10, 20], yaxis="y2")])
    yield twin.update_layout(template=TEMPLATE, yaxis2=dict(overlaying="y", side="right"))


def step_charts():
    """The Speculative page's charts (built unchecked, by figures.build) and Beam search's ranking."""
    for c in (cycle(k=4), cycle(k=12, mode="sampling", origin="resampled"), cycle(k=0, origin="target")):
        yield from (F.draft_proposal(c, i) for i in range(min(c.k, 2)))
        yield from filter(None, [F.verify_pass(c), F.verdicts(c), F.resolution(c), F.cache_strip(c, ["a", "b"])])
    yield final_ranking([Hypothesis((1, 2, 3), "a hash table stores", -2.0, -0.66),
                         Hypothesis((1, 2), "a hash map", -1.8, -0.9)])


def test_for_browser_draws_what_the_template_drew(browser, monkeypatch):  # noqa: F811
    monkeypatch.setattr(figures, "_inline", lambda data, layout: layout)  # build() keeps its template: the old form
    monkeypatch.setattr(pio.templates, "default", "specviz")  # as ui.state sets it (importing streamlit changes it)
    specs = [json.loads(f.to_json()) for f in [*synthetic(), *step_charts()]]
    monkeypatch.undo()
    page = browser.new_page()
    page.add_script_tag(path=str(PLOTLY_JS))
    for spec in specs:
        assert isinstance(spec["layout"]["template"], dict)
        inlined = dict(spec, layout=_inline(spec["data"], spec["layout"]))
        assert inlined["layout"]["template"] == "none" and "template" not in json.dumps(inlined["layout"]["xaxis"])
        before, after = page.evaluate(LAID_OUT, spec), page.evaluate(LAID_OUT, inlined)
        assert after == before, spec["layout"].get("title")
    page.close()
