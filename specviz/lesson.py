"""A lesson anyone can open (issue 40): a recorded run of any step page (Beam search, Speculative decoding, Tree
speculation, Lookahead decoding) as ONE self-contained HTML file that steps through offline — no Python, no install,
no network. One function per method turns the run's trace into its views (one per event: its phases' titles and the
parts each phase shows); the charts are the page's own figure builders' output (as the page hands them to the
browser) and the sentences the page's own (specviz.figures.*: heading, captions, metrics). One player (TEMPLATE):
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

from specviz.engine.step import output_pieces, token_text
from specviz.figures import for_browser
from specviz.figures import lookahead as L
from specviz.figures import spec_cycle as F
from specviz.figures import tree as T
from specviz.figures.beam_tree import LEGEND, beam_tree, final_ranking, heading, readable
from specviz.labs.compare import beam_vs_greedy, length_penalty_note
from specviz.metrics import spec_stages, spec_summary

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


# ---------------------------------------------------------------- one function per method: trace -> views
def speculative_views(cycles, tokenizer, prompt_ids: list[int], kind: str) -> list[View]:
    """The Speculative page, cycle by cycle and stage by stage (draft 1..K, verify, decide, resolve, cache)."""
    pool = Pool()
    views, context = [], list(prompt_ids)
    chips = ["<i>nothing yet</i>"]
    for n, c in enumerate(cycles):
        stages = spec_stages(c)
        v = View(pool, [F.heading(c, stages[: p + 1], kind, n == len(cycles) - 1
                                  and p == len(stages) - 1) for p in range(len(stages))])
        if c.k:
            v.text(f"**{F.DRAFT_TITLE}** ({F.DRAFT_CAPTION})")
            rows = F.draft_rows(c.k)
            for r, row in enumerate(rows):
                for i in row:
                    v.fig(F.draft_proposal(c, i), at=i, group=f"draft{r}", cols=len(rows[0]))
        else:
            v.text(F.NOTHING_DRAFTED)
        at = stages.index
        v.fig(F.verify_pass(c), at=at("verify"))
        if c.k:
            v.fig(F.verdicts(c), at=at("decide"))
        else:
            v.text(F.NOTHING_JUDGED, at=at("resolve"))
        resolution = F.resolution(c)
        if resolution is not None:
            v.fig(resolution, at=at("resolve"))
        else:
            v.text(F.resolution_text(c), at=at("resolve"))
        if F.rare_draw_note(c):
            v.text(F.rare_draw_note(c), at=at("resolve"), style="info")
        v.fig(F.cache_strip(c, [token_text(tokenizer, t) for t in context[-24:]]), at=at("cache"))
        if kind == "feature":
            v.text(F.FEATURE_CACHE, at=at("cache"), style="caption")
        if kind == "feature" and c.prefill:
            v.text(F.FEATURE_PREFILL, style="caption")
        context += list(c.emitted)
        out = [(t, o) for d in cycles[: n + 1] for t, o in zip(d.emitted, d.origins)]
        # decoded as a whole, as on the page: an emoji's byte tokens one by one would read "��"
        now = F.token_chips([(p, o, t) for p, (t, o) in zip(output_pieces(tokenizer, [t for t, _ in out]), out)])
        v.html("<b>Output so far</b> " + F.chip_legend())
        for done, shown, since, until in ((cycles[:n], chips[-1], 0, at("resolve")),
                                          (cycles[: n + 1], now, at("resolve"), None)):
            s = spec_summary(done)
            v.html(shown, since, until)
            v.text(F.totals_caption(len(done), n + 1, c), since, until, style="caption")
            v.metrics(F.summary_metrics(s), since, until)
            if F.positions_caption(s):
                v.text(F.positions_caption(s), since, until, style="caption")
        chips.append(now)
        views.append(v)
    return views


def beam_views(steps, tokenizer, greedy_ids: list[int], greedy_logprob: float, beams: int,
               penalty: float) -> list[View]:
    """The Beam search page, step by step: the tree, the finished ranking, beam beside greedy."""
    pool = Pool()
    views, greedy_text = [], tokenizer.decode(list(greedy_ids), skip_special_tokens=True)
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        v = View(pool, [heading(step)])
        v.fig(beam_tree(steps, i))
        v.text(LEGEND, style="caption")
        if step.beams_after and not last:
            v.html(f"<details><summary>Running beams after step {step.step + 1} (cumulative log-prob)</summary><pre>"
                   + html.escape("\n".join(f"{h.logprob:8.3f}  {readable(h.text)}" for h in step.beams_after))
                   + "</pre></details>")
        if step.finished:
            v.fig(final_ranking(step.finished))
            if length_penalty_note(step.finished, penalty):
                v.text(length_penalty_note(step.finished, penalty), style="caption")
        else:
            v.text("No finished hypothesis yet.", style="caption")
        v.html("<h3>Beam vs greedy on the same prompt</h3>")
        v.html(f"<b>Greedy</b><pre>{html.escape(greedy_text)}</pre>")
        v.metrics([("Total log-prob", f"{greedy_logprob:.3f}", None)])
        v.html("<b>Beam (best finished so far)</b>")
        if step.finished:
            best = step.finished[0]
            v.html(f"<pre>{html.escape(tokenizer.decode(list(best.tokens), skip_special_tokens=True))}</pre>")
            same = list(best.tokens) == list(greedy_ids)
            v.metrics([("Total log-prob", f"{best.logprob:.3f}", None, "same sequence as greedy" if same else
                        f"{best.logprob - greedy_logprob:+.3f} vs greedy")])
        else:
            v.text("Step until a hypothesis finishes (EOS or max new tokens).", style="caption")
        if step.finished and last:
            v.text(beam_vs_greedy(tokenizer, greedy_ids, greedy_logprob, list(step.finished[0].tokens),
                                  step.finished[0].logprob, beams, penalty), style="info")
        views.append(v)
    return views


def tree_views(cycles, tokenizer, prompt_ids: list[int], max_new: int, typical) -> list[View]:
    """The Tree speculation page, cycle by cycle: the tree, its attention mask, the KV cache, the counts."""
    pool = Pool()
    views, context = [], list(prompt_ids)
    for n, c in enumerate(cycles):
        v = View(pool, [T.heading(c, n == len(cycles) - 1)])
        if c.nodes:
            v.fig(T.tree_figure(c, token_text(tokenizer, context[-1])))
            v.fig(T.mask_figure(c))
        else:
            v.text(T.no_tree_caption(max_new), style="caption")
        v.text(T.cache_caption(c), style="caption")
        v.metrics(T.metrics(cycles[: n + 1]))
        v.text(T.legend_caption(c, typical), style="caption")
        context += list(c.emitted)
        views.append(v)
    return views


def lookahead_views(steps, jacobi) -> list[View]:
    """The Lookahead page, target pass by target pass, with plain Jacobi after as many passes beside it."""
    pool = Pool()
    views = []
    for n, step in enumerate(steps):
        j = min(step.step, len(jacobi) - 1)  # as the page's jacobi.seek(step.step): clamped to what the run has
        v = View(pool, [L.heading(step, n == len(steps) - 1)])
        v.fig(L.window_figure(step))
        v.fig(L.candidates_figure(step))
        v.text(L.cache_caption(step), style="caption")
        v.metrics(L.metrics(steps[: n + 1], jacobi[: j + 1]))
        if j >= 0:
            v.fig(L.jacobi_figure(jacobi[j]))
            v.text(L.JACOBI_CAPTION, style="caption")
        v.fig(L.progress_figure(steps[: n + 1], jacobi[: j + 1]))
        v.html("<b>The attention mask of this pass</b>")
        v.fig(L.mask_figure(step))
        v.text(L.MASK_CAPTION, style="caption")
        v.text(L.CPU_CAPTION, style="caption")
        views.append(v)
    return views


# ---------------------------------------------------------------- the one player
def lesson_page(method: str, views: list[View], prompt: str, settings: dict) -> str:
    """The whole run (views: one method's, from the functions above) as one self-contained HTML page: the player
    below with the run's data and Plotly inlined."""
    name, intro = METHODS[method]
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
