"""A lesson anyone can open (issue 40): a recorded run of any step page (Beam search, Speculative decoding, Tree
speculation, Lookahead decoding) as ONE self-contained HTML file that steps through offline — no Python, no install,
no network. It draws the page's own Events (specviz.views: one function per step page turns the trace into the
items each phase shows), so the charts are the page's figure builders' output (as the page hands them to the
browser) and the sentences the page's own, with nothing written twice. One player (TEMPLATE):
Plotly's JavaScript and the run's data inlined, gzip-compressed and base64-encoded (the browser inflates them with
DecompressionStream), so a 64-token run stays a few MB.

Every piece of text is escaped here (html.escape, via _markdown) or inserted by the player with textContent."""
from __future__ import annotations

import base64
import gzip
import html
import json
import pathlib
import re

import plotly
from plotly.utils import PlotlyJSONEncoder

from specviz.figures import for_browser
from specviz.views import Event

PLOTLY_JS = pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
METHODS = {  # the page each method's lesson comes from: its title and the line under it
    "beam": ("Beam search", "Keep the B best partial sequences by total log-probability; expand each over the "
             "vocabulary, prune back to B, set aside those that end. A search for a likelier sequence, not a speedup."),
    "speculative": ("Speculative decoding", "A small draft guesses K tokens; the big target checks all of them in one "
                    "forward pass and keeps the longest prefix it agrees with, plus one token of its own. The output "
                    "is exactly the target's."),
    "tree": ("Tree speculation", "The draft proposes a TREE of candidates; the target scores every node in ONE "
             "forward pass (each node attends to the context and its own ancestors), and the walk keeps a path down "
             "from the root, then one token of the target's own."),
    "lookahead": ("Lookahead decoding", "Speculation with no draft model: the target guesses ahead by Jacobi "
                  "iteration over a 2-D window, pools the n-grams it produces, and verifies the pool's matching "
                  "n-grams in the SAME forward pass. Greedy: the output is exactly plain greedy's."),
}


def _packed(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii")


def _markdown(text: str) -> str:
    """The few Markdown marks the pages' sentences use, as HTML, after escaping everything else. A character the
    page escaped (md_escape: a token's "\\*") stays that character, never a mark."""
    text = re.sub(r"\\([^A-Za-z0-9\s])", lambda m: f"\0{ord(m[1])}\0", text)
    text = html.escape(text, quote=True)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", text)
    text = re.sub(r" {2,}\n", "<br>", re.sub(r"\n[ \t]*\n", "<br><br>", text))  # hard breaks, paragraphs
    return re.sub(r"\0(\d+)\0", r"&#\1;", text)


def figure_json(fig) -> dict:
    """A figure as the page sends it to the browser (ui.charts.chart draws for_browser(fig)), as plain JSON."""
    return json.loads(json.dumps(for_browser(fig).to_plotly_json(), cls=PlotlyJSONEncoder))


class View:
    """One event of the run: a title per phase and the parts each phase shows (a part shows from phase `at` up to,
    not including, `until`). Values go into the lesson's shared pool once (a chip row repeats from one cycle into
    the next)."""

    def __init__(self, pool: "Pool", titles: list[str]):
        self.pool, self.titles, self.parts = pool, [_markdown(t) for t in titles], []

    def _add(self, kind: str, value, at: int, until, **extra) -> None:
        self.parts.append(dict(kind=kind, ref=self.pool.ref(value), at=at, until=until, **extra))

    def fig(self, fig, at: int = 0, until: int | None = None, **grid) -> None:
        self._add("fig", figure_json(fig), at, until, **grid)

    def text(self, markdown: str, at: int = 0, until: int | None = None, style: str = "text") -> None:
        self._add("html", _markdown(markdown), at, until, style=style)

    def html(self, safe_html: str, at: int = 0, until: int | None = None) -> None:
        """HTML made here, every piece of text in it escaped (a chip row, a heading over the output)."""
        self._add("html", safe_html, at, until, style="text", raw=True)

    def metrics(self, rows: list[tuple], at: int = 0, until: int | None = None) -> None:
        """rows: (label, value, help[, delta]) as the page's st.metric gets them."""
        self._add("metrics", [[name, value, about or "", *delta] for name, value, about, *delta in rows], at, until)

    def as_dict(self) -> dict:
        return dict(titles=self.titles, parts=self.parts)


class Pool:
    def __init__(self):
        self.values, self.index = [], {}

    def ref(self, value) -> int:
        key = json.dumps(value, sort_keys=True)
        if key not in self.index:
            self.index[key] = len(self.values)
            self.values.append(value)
        return self.index[key]


# ---------------------------------------------------------------- the views layer's Events -> the player's views
def lesson_view(pool: Pool, event: Event) -> View:
    """One Event of a step page (specviz.views: the items the page draws) as the player's View. A row of charts
    becomes a grid, a fold's title a bold line over its items; the page's own interactive parts (slots) stay out."""
    v, fold = View(pool, event.titles), ""
    for item in event.items:
        at, until = item.at, item.until
        if item.fold and item.fold != fold:
            v.html(f"<b>{html.escape(item.fold)}</b>", at, until)
        fold = item.fold
        if item.kind == "chart":
            grid = dict(group=item.row[0], cols=item.row[2]) if item.row else {}
            v.fig(item.value.figure(), at, until, **grid)
        elif item.kind in ("markdown", "caption", "info"):
            v.text(item.value, at, until, style="text" if item.kind == "markdown" else item.kind)
        elif item.kind == "heading":
            v.html(f"<h3>{html.escape(item.value)}</h3>", at, until)
        elif item.kind == "html":
            v.html(item.value, at, until)
        elif item.kind == "pre":
            v.html(f"<pre>{html.escape(item.value)}</pre>", at, until)
        elif item.kind == "metrics":
            v.metrics([row[:4] for row in item.value], at, until)
    return v


# ---------------------------------------------------------------- the one player
def lesson_page(method: str, events: list, prompt: str, settings: dict) -> str:
    """The whole run (events: one step page's, specviz.views.whole_run; or the player's Views) as one self-contained
    HTML page: the player below with the run's data and Plotly inlined."""
    name, intro = METHODS[method]
    pool = Pool()
    views = [lesson_view(pool, e) if isinstance(e, Event) else e for e in events]
    data = {"views": [v.as_dict() for v in views], "pool": views[0].pool.values if views else []}
    setting = " · ".join(f"{k} = {v}" for k, v in settings.items())
    return TEMPLATE.format(
        title=html.escape(f"SpecViz lesson: {name.lower()}"), intro=html.escape(intro), prompt=html.escape(prompt),
        settings=html.escape(setting), plotly=_packed(PLOTLY_JS.read_bytes()), data=_packed(json.dumps(data).encode()))


def unpack(page: str) -> dict:
    """The run's data back out of a lesson file (tests; a tool that reads lessons)."""
    packed = page.split('const DATA = "', 1)[1].split('"', 1)[0]
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def shown(data: dict, view: int, phase: int) -> list[dict]:
    """The parts the player shows at (view, phase), each {kind, value, ...}: the rule the player's show() applies."""
    return [dict(p, value=data["pool"][p["ref"]]) for p in data["views"][view]["parts"]
            if p["at"] <= phase and (p["until"] is None or phase < p["until"])]


TEMPLATE = ("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem; color: #222; }}
#controls {{ position: sticky; top: 0; background: #fff; padding: .5rem 0; z-index: 5; display: flex; gap: .4rem;
            align-items: center; flex-wrap: wrap; border-bottom: 1px solid #eee; }}
button {{ padding: .3rem .7rem; font-size: 1rem; }}
#stage {{ margin: .6rem 0; font-size: 1.05rem; }} .text {{ margin: .5rem 0; }} """
""".chart {{ margin: .3rem 0; min-width: 0; }}
.caption {{ margin: .4rem 0; color: #666; font-size: .88rem; }}
.info {{ margin: .5rem 0; padding: .6rem .8rem; background: #e8f1fb; border-radius: 6px; }}
.grid {{ display: grid; gap: .3rem; }} pre {{ white-space: pre-wrap; margin: .2rem 0 .6rem; }}
.metrics {{ display: flex; flex-wrap: wrap; gap: 1.5rem; margin: .6rem 0; }}
.metric small {{ display: block; color: #555; }} .metric span {{ font-size: 1.5rem; }}
#prompt {{ white-space: pre-wrap; background: #f6f6f6; padding: .5rem; border-radius: 4px; }}
</style></head><body>
<h1>{title}</h1>
<p>{intro}</p>
<p>A recorded run of the embedded model, step by step, drawn as the SpecViz page draws it. Keys: → step, ← back,
Space play; <code>?step=</code> in the address opens the step an app link names.</p>
<p><b>Prompt</b></p><div id="prompt">{prompt}</div><p><small>{settings}</small></p>
<div id="controls"><button id="back">◀ Back</button><button id="step">Step ▶</button><button id="play">Play ▶▶</button>
<input id="slider" type="range" min="0" value="0" style="flex:1" aria-label="step"><span id="where"></span></div>
<div id="stage"></div><div id="view"></div>
<script>
const PLOTLY = "{plotly}";
const DATA = "{data}";
async function inflate(b64) {{
  const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
  return await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
}}
(async () => {{
  const s = document.createElement("script"); s.textContent = await inflate(PLOTLY); document.head.appendChild(s);
  const data = JSON.parse(await inflate(DATA));
  const steps = [];
  data.views.forEach((v, i) => v.titles.forEach((_, p) => steps.push([i, p])));
  // the app's ?step= value for (view, phase): "3.2" where an event has phases, else "3" (specviz.replay.Replay)
  const position = (i, p) => data.views[i].titles.length > 1 ? (i + 1) + "." + (p + 1) : String(i + 1);
  let at = 0, timer = null;
  const slider = document.getElementById("slider"), playButton = document.getElementById("play");
  slider.max = steps.length - 1;
  window.lessonDraws = 0;
  let onScreen = new Map();  // what is on screen, by part ("view:index") and grid ("view:group"): kept while shown
  function make(part, value) {{
    const div = document.createElement("div");
    if (part.kind === "html") {{ div.className = part.style; div.innerHTML = value; }}
    else if (part.kind === "metrics") {{
      div.className = "metrics";
      for (const [name, shown, about, delta] of value) {{
        const m = document.createElement("div"), label = document.createElement("small"),
              number = document.createElement("span");
        m.className = "metric"; m.title = about; label.textContent = name; number.textContent = shown;
        m.append(label, number);
        if (delta) {{ const d = document.createElement("small"); d.textContent = delta; m.appendChild(d); }}
        div.appendChild(m);
      }}
    }} else div.className = "chart";
    return div;
  }}
  function show(n) {{
    at = Math.max(0, Math.min(steps.length - 1, n)); slider.value = at;
    const [vi, phase] = steps[at], v = data.views[vi];
    document.getElementById("stage").innerHTML = v.titles[phase];
    document.getElementById("where").textContent = "step " + position(vi, phase) + " (" + (at + 1) + " of "
      + steps.length + ")";
    // this step's charts: window.lessonStep.drawn === .charts once each has fired plotly_afterplot
    const drawing = window.lessonStep = {{charts: 0, drawn: 0, at: position(vi, phase)}};
    const next = new Map(), top = [], fresh = [];
    let grid = null;
    v.parts.forEach((part, k) => {{
      if (part.at > phase || (part.until !== null && phase >= part.until)) return;
      const key = vi + ":" + k, value = data.pool[part.ref];
      let div = onScreen.get(key);
      if (!div) {{ div = make(part, value); if (part.kind === "fig") fresh.push([div, value]); }}
      else if (part.kind === "fig" && div.dataset.drawn) drawing.drawn++;
      if (part.kind === "fig") drawing.charts++;
      next.set(key, div);
      if (part.group) {{  // charts side by side (the draft's positions, as on the page)
        const gkey = vi + ":" + part.group;
        if (!grid || grid !== next.get(gkey)) {{
          grid = onScreen.get(gkey) || document.createElement("div");
          grid.className = "grid"; grid.style.gridTemplateColumns = "repeat(" + part.cols + ", minmax(0, 1fr))";
          grid.replaceChildren(); next.set(gkey, grid); top.push(grid);
        }}
        grid.appendChild(div);
      }} else {{ grid = null; top.push(div); }}
    }});
    for (const [key, div] of onScreen) if (!next.has(key) && div.classList.contains("chart")) Plotly.purge(div);
    document.getElementById("view").replaceChildren(...top);  // kept charts move, not redrawn
    onScreen = next;
    for (const [div, value] of fresh) {{  // drawn once in place (Plotly sizes a chart from where it sits)
      const fig = structuredClone(value);  // Plotly writes into what it is given
      Plotly.newPlot(div, fig.data, fig.layout, {{displaylogo: false, responsive: true}});
      div.on("plotly_afterplot", () => {{
        if (!div.dataset.drawn) {{ div.dataset.drawn = "1"; drawing.drawn++; window.lessonDraws++; }}
      }});
    }}
  }}
  const stop = () => {{ clearInterval(timer); timer = null; playButton.textContent = "Play ▶▶"; }};
  const play = () => {{
    if (timer) return stop();
    playButton.textContent = "Pause ❚❚";
    timer = setInterval(() => {{ if (at >= steps.length - 1) stop(); else show(at + 1); }}, 800);
  }};
  document.getElementById("step").onclick = () => show(at + 1);
  document.getElementById("back").onclick = () => show(at - 1);
  playButton.onclick = play;
  slider.oninput = () => show(+slider.value);
  document.addEventListener("keydown", e => {{
    if (e.target === slider && (e.key === "ArrowRight" || e.key === "ArrowLeft")) return;  // the slider moves itself
    if (e.key === "ArrowRight") show(at + 1); else if (e.key === "ArrowLeft") show(at - 1);
    else if (e.key === " ") {{ e.preventDefault(); play(); }}
  }});
  // ?step=3.2 (event 3, phase 2) or ?step=3 (event 3), as in the app's links; the phase clamped to the event's
  const [event, phase] = ((new URLSearchParams(location.search).get("step") || "") + ".1").split(".").map(Number);
  const first = steps.findIndex(([i, p]) => i === event - 1
    && p === Math.max(0, Math.min(phase - 1, data.views[i].titles.length - 1)));
  show(first >= 0 ? first : 0);
  window.lessonReady = true;
}})();
</script></body></html>
""")
