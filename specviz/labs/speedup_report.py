"""`python -m specviz where`: the Where the speedup goes page at the command line (issue 38). One greedy speculative
run on the prompt, then each part asked for (metrics, timeline, policies, rules, precision) from the same lab
functions the page calls, as a dict (run) and as text (text). The parts, the arguments and their checks are in
specviz/__main__.py (WHERE_HELP), answered before torch loads."""
from __future__ import annotations

from specviz.drafters import drafter_choices, make_drafter
from specviz.errors import SpecVizError
from specviz.labs import acceptance_rules as AR
from specviz.labs import knobs
from specviz.labs import policies as PO
from specviz.labs import timeline as TL
from specviz.labs.precision import bf16_target, precision_runs
from specviz.loading import load_models
from specviz.prompting import context_size, encode_prompt

def run(a, asked: list[str]) -> dict:
    """Each asked part's figures (a: the parsed `where` arguments, checked), keyed by part, plus the recorded run's
    summary under "run"."""
    models = load_models(a.target, a.draft, a.device)
    tok, target = models.tokenizer, models.target
    ids = encode_prompt(tok, a.prompt, a.chat, context_size(target), a.max_new_tokens)
    kind = a.drafter or next(iter(drafter_choices(models).values()))
    rec = knobs.record(target, make_drafter(kind, models), tok, ids, a.max_new_tokens, a.k)
    c = rec["counters"]
    out = {"run": {"drafter": kind, "k": a.k, "tokens": c.tokens, "verify_passes": c.verify_passes,
                   "drafted": c.drafted, "accepted": c.accepted, "text": tok.decode(rec["output"])}}
    needs_draft = [p for p in ("policies", "rules", "precision") if p in asked]
    if needs_draft and models.draft is None:
        raise SpecVizError(f"{', '.join(needs_draft)} need a token draft model; this pair has none (--draft).")
    for part in asked:
        if part == "metrics":
            keys = ("system", "metric", "value", "shown", "bonus")
            out[part] = [{k: r[k] for k in keys} for r in knobs.metrics_on(c)]
        elif part == "timeline":
            lanes = TL.measure(models, ids, min(a.max_new_tokens, 64), a.k, a.tree_budget, chain=kind)
            out[part] = TL.summary(lanes)
        elif part == "policies":
            cost = PO.costs(target, models.draft, ids)
            pols = PO.default_policies(a.k, a.threshold)
            rows = PO.compare_policies(pols, target, models.draft, tok, rec["prompt"], rec["output"],
                                       a.max_new_tokens, cost)
            out[part] = {"costs": {"t_draft_ms": 1000 * cost["t_draft_s"], "t1_ms": 1000 * cost["t1_s"],
                                   "noisy": cost["noisy"]},
                         "rows": [{k: r[k] for k in ("policy", "passes", "tokens_per_pass", "drafted", "accepted",
                                                     "predicted_speedup")} for r in rows]}
            if a.measure:
                measured = PO.measure_policies(pols, target, models.draft, tok, rec["prompt"], a.max_new_tokens)
                for row in out[part]["rows"]:
                    row["measured_speedup"] = measured["plain_s"] / measured[row["policy"]]["seconds"]
                out[part]["replay_matches_engine"] = PO.replay_matches(rows, measured)
        elif part == "rules":
            live = AR.live_rules(target, models.draft, tok, rec["prompt"], rec["output"], a.temperature, a.positions)
            out[part] = {"temperature": a.temperature, "positions": len(live["rows"]), "mean": live["mean"],
                         "typical_beyond_bound": live.get("typical_beyond_bound", [])}
        else:
            res = precision_runs(target, bf16_target(a.target, a.device), lambda: make_drafter("token", models), tok,
                                 ids, min(a.max_new_tokens, 48), a.k)
            out[part] = {"seconds": res["seconds"],
                         "pairs": [{k: v for k, v in pr.items() if k in ("a", "b", "position", "token_a", "token_b",
                                                                         "margin")} for pr in res["pairs"]]}
    return out


def text(out: dict) -> str:
    """The figures as lines of text, part by part."""
    r = out["run"]
    lines = [f"{r['drafter']}, K = {r['k']}, greedy: {r['tokens']} tokens in {r['verify_passes']} verify passes, "
             f"{r['accepted']} of {r['drafted']} drafts accepted."]
    for row in out.get("metrics", []):
        lines.append(f"  {row['system']:13} {row['metric']}: {row['shown']} (bonus token counted: {row['bonus']})")
    for row in out.get("timeline", {}).get("lanes", []):
        stages = ", ".join(f"{s} {ms:.1f}" for s, ms in row["stage_ms"].items() if ms)
        lines.append(f"timeline · {row['name']}: {row['tokens']} tokens in {row['cycles']} cycles, "
                     f"{row['total_ms']:.0f} ms ({row['ms_per_token']:.1f} ms/token); target forward median "
                     f"{row['forward_ms']:.1f} ms over {row['positions']:.0f} positions = "
                     f"{row['forward_vs_plain']:.2f}x plain greedy's; same text as plain greedy: {row['identical']}"
                     f"\n    ms by stage: {stages}")
    if "policies" in out:
        p = out["policies"]
        lines.append(f"policies (draft step {p['costs']['t_draft_ms']:.1f} ms, target step {p['costs']['t1_ms']:.1f} ms"
                     + (", noisy" if p["costs"]["noisy"] else "") + "):")
        for row in p["rows"]:
            lines.append(f"  {row['policy']}: {row['passes']} passes, {row['tokens_per_pass']:.2f} tokens/pass, "
                         f"predicted {row['predicted_speedup']:.2f}x"
                         + (f", measured {row['measured_speedup']:.2f}x" if "measured_speedup" in row else ""))
    if "rules" in out:
        ru = out["rules"]
        lines.append(f"acceptance rules at T = {ru['temperature']:g}, mean over {ru['positions']} positions: "
                     + ", ".join(f"{name} {v:.3f}" for name, v in ru["mean"].items()))
    if "precision" in out:
        for pr in out["precision"]["pairs"]:
            where = "never (bit-identical)" if pr["position"] is None else \
                f"at token {pr['position'] + 1} ({pr['token_a']!r} vs {pr['token_b']!r})"
            margin = ", ".join(f"{k} {v:.4f}" for k, v in pr.get("margin", {}).items())
            lines.append(f"precision · {pr['a']} vs {pr['b']}: part {where}" + (f"; top-2 margin {margin}"
                                                                               if margin else ""))
    return "\n".join(lines)
