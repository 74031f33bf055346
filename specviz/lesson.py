"""A lesson anyone can open (issue 40): a recorded speculative-decoding run as ONE self-contained HTML file that
steps through offline — no Python, no install, no network. The charts are the Speculative page's own figure
builders' output (specviz.figures.spec_cycle); Plotly's JavaScript and the run's data are inlined, gzip-compressed
and base64-encoded (the browser inflates them with DecompressionStream), so a 64-token run stays a few MB.

Every piece of text from the prompt or the tokens is escaped here (html.escape) or inserted with textContent."""
from __future__ import annotations

import base64
import gzip
import html
import json
import pathlib
import re

import plotly
from plotly.utils import PlotlyJSONEncoder

from specviz.figures import spec_cycle as F
from specviz.metrics import spec_stages, spec_summary
from specviz.engine.step import output_pieces, token_text

PLOTLY_JS = pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _packed(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii")


def _markdown(text: str) -> str:
    """The few Markdown marks the page's sentences use, as HTML, after escaping everything else."""
    text = html.escape(re.sub(r"\\([\\`*_{}\[\]()#+\-.!|>~<])", r"\1", text), quote=True)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", text)


def _fig(fig) -> dict:
    return json.loads(json.dumps(fig.to_plotly_json(), cls=PlotlyJSONEncoder))


def cycle_view(cycle, tokenizer, context: list[int]) -> dict:
    """One cycle as the page draws it: per stage, the figures (Plotly JSON) and sentences it adds."""
    stages = spec_stages(cycle)
    parts = []  # (stage, kind, payload)
    for i in range(cycle.k):
        parts.append(("draft", "fig", _fig(F.draft_proposal(cycle, i))))
    if not cycle.k:
        parts.append(("verify", "text", _markdown("**1 · Nothing drafted:** the target decodes one token alone, as "
                                                  "plain decoding would (still one target pass).")))
    parts.append(("verify", "fig", _fig(F.verify_pass(cycle))))
    if cycle.k:
        parts.append(("decide", "fig", _fig(F.verdicts(cycle))))
    resolution = F.resolution(cycle)
    parts.append(("resolve", "fig", _fig(resolution)) if resolution is not None else
                 ("resolve", "text", _markdown(F.resolution_text(cycle))))
    note = F.rare_draw_note(cycle)
    if note:
        parts.append(("resolve", "text", _markdown(note)))
    texts = [token_text(tokenizer, t) for t in context[-24:]]
    parts.append(("cache", "fig", _fig(F.cache_strip(cycle, texts))))
    return {"cycle": cycle.cycle, "k": cycle.k, "stages": stages,
            "parts": [{"stage": s, "kind": k, "value": v} for s, k, v in parts]}


def speculative_lesson(cycles, tokenizer, prompt_ids: list[int], prompt: str, settings: dict) -> str:
    """The whole recorded run (cycles: the Speculative page's events) as one self-contained HTML page."""
    views, chips, context = [], [], list(prompt_ids)
    for c in cycles:
        views.append(cycle_view(c, tokenizer, context))
        context += list(c.emitted)
        out = [(t, o) for d in cycles[: c.cycle + 1] for t, o in zip(d.emitted, d.origins)]
        pieces = output_pieces(tokenizer, [t for t, _ in out])
        chips.append(F.token_chips([(p, o, t) for p, (t, o) in zip(pieces, out)]))  # escaped by token_chips
    s = spec_summary(cycles)
    data = {"cycles": views, "chips": chips, "legend": F.chip_legend(),
            "summary": f"{s['tokens']} tokens in {s['target_passes']} target passes "
                       f"({s['mean_acceptance_length']:.2f} tokens per verify pass)"}
    title = "SpecViz lesson: speculative decoding"
    setting = " · ".join(f"{k} = {v}" for k, v in settings.items())
    return TEMPLATE.format(
        title=html.escape(title), prompt=html.escape(prompt), settings=html.escape(setting),
        plotly=_packed(PLOTLY_JS.read_bytes()), data=_packed(json.dumps(data).encode()))


TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem; color: #222; }}
#controls {{ position: sticky; top: 0; background: #fff; padding: .5rem 0; z-index: 5; display: flex; gap: .4rem;
            align-items: center; flex-wrap: wrap; border-bottom: 1px solid #eee; }}
button {{ padding: .3rem .7rem; font-size: 1rem; }}
#stage {{ font-weight: 600; margin: .6rem 0; }} .text {{ margin: .5rem 0; }} .chart {{ margin: .3rem 0; }}
.drafts {{ display: grid; gap: .3rem; }}
#prompt {{ white-space: pre-wrap; background: #f6f6f6; padding: .5rem; border-radius: 4px; }}
</style></head><body>
<h1>{title}</h1>
<p>A recorded run of the embedded model, step by step: the draft proposes, the target verifies in ONE pass, each
draft is accepted or rejected, the residual or bonus token, the KV caches cropped. Keys: → step, ← back, Space play.</p>
<p><b>Prompt</b></p><div id="prompt">{prompt}</div><p><small>{settings}</small></p>
<div id="controls"><button id="back">◀ Back</button><button id="step">Step ▶</button><button id="play">Play ▶▶</button>
<input id="slider" type="range" min="0" value="0" style="flex:1"><span id="where"></span></div>
<div id="stage"></div><div id="view"></div>
<p><b>Output so far</b> <span id="legend"></span></p><div id="chips"></div><p id="summary"></p>
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
  data.cycles.forEach((c, i) => c.stages.forEach((_, p) => steps.push([i, p])));
  let at = 0, timer = null;
  const slider = document.getElementById("slider"); slider.max = steps.length - 1;
  document.getElementById("legend").innerHTML = data.legend;
  document.getElementById("summary").textContent = "Whole run: " + data.summary;
  window.lessonDraws = 0;
  function show(n) {{
    at = Math.max(0, Math.min(steps.length - 1, n)); slider.value = at;
    const [ci, phase] = steps[at], c = data.cycles[ci], upto = c.stages.slice(0, phase + 1);
    const stage = upto[upto.length - 1], drafts = upto.filter(x => x === "draft").length;
    document.getElementById("stage").textContent = "Cycle " + (c.cycle + 1) + " · K = " + c.k + " · stage: " + stage
      + (stage === "draft" ? " " + drafts + "/" + c.k : "");
    document.getElementById("where").textContent = "step " + (at + 1) + " of " + steps.length;
    const view = document.getElementById("view"); view.innerHTML = "";
    let seenDrafts = 0, row = null;
    for (const part of c.parts) {{
      if (!upto.includes(part.stage)) continue;
      if (part.stage === "draft" && ++seenDrafts > drafts) continue;
      const div = document.createElement("div");
      if (part.kind === "text") {{ div.className = "text"; div.innerHTML = part.value; view.appendChild(div); continue; }}
      div.className = "chart";
      if (part.stage === "draft") {{  // the draft's positions side by side, four to a row, as on the page
        if (!row) {{ row = document.createElement("div"); row.className = "drafts";
                     row.style.gridTemplateColumns = "repeat(" + Math.min(c.k, 4) + ", 1fr)"; view.appendChild(row); }}
        row.appendChild(div);
      }} else view.appendChild(div);
      Plotly.newPlot(div, part.value.data, part.value.layout, {{displaylogo: false, responsive: true}})
        .then(() => {{ window.lessonDraws++; }});
    }}
    const done = upto.includes("resolve") ? ci : ci - 1;
    document.getElementById("chips").innerHTML = done >= 0 ? data.chips[done] : "<i>nothing yet</i>";
  }}
  const play = () => {{ if (timer) {{ clearInterval(timer); timer = null; return; }}
    timer = setInterval(() => {{ if (at >= steps.length - 1) {{ clearInterval(timer); timer = null; }} else show(at + 1); }}, 800); }};
  document.getElementById("step").onclick = () => show(at + 1);
  document.getElementById("back").onclick = () => show(at - 1);
  document.getElementById("play").onclick = play;
  slider.oninput = () => show(+slider.value);
  document.addEventListener("keydown", e => {{
    if (e.key === "ArrowRight") show(at + 1); else if (e.key === "ArrowLeft") show(at - 1);
    else if (e.key === " ") {{ e.preventDefault(); play(); }}
  }});
  // ?step=3.2 as in the app's links (cycle 3, stage 2), or ?step=7 (the 7th step of the file)
  const start = (new URLSearchParams(location.search).get("step") || "").split(".").map(Number);
  let first = 0;
  if (start.length === 2) first = steps.findIndex(([c, p]) => c === start[0] - 1 && p === start[1] - 1);
  else if (start[0] > 0) first = start[0] - 1;
  show(first >= 0 ? first : 0);
  window.lessonReady = true;
}})();
</script></body></html>
"""
