"""python -m specviz decode ... : run one decoding method from the command line; `specviz app` serves the app."""
from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import pathlib
import socket
import subprocess
import sys

from specviz import ROOT, missing_file
from specviz.errors import SpecVizError
from specviz.medusa_choices import parse_choices
from specviz.prompting import check_text

MAX_HEADS = 64  # the syntax check before the model loads; the heads' own count is checked after


def parse_typical(text: str) -> tuple[float, float]:
    """'0.09,0.3' -> (epsilon, delta), each in (0, 1]: epsilon caps the threshold min(epsilon, delta e^-H(p)), a
    probability; delta scales e^-H(p), itself at most 1, so a larger delta only leaves epsilon in charge."""
    parts = text.split(",")
    try:
        if len(parts) != 2 or len(text) > 64:
            raise ValueError
        eps, delta = (float(x) for x in parts)
    except ValueError:
        raise SpecVizError(f"--typical must be EPS,DELTA such as 0.09,0.3; got {text[:64]!r}.") from None
    if not (0 < eps <= 1 and 0 < delta <= 1):  # NaN fails both comparisons
        raise SpecVizError(f"--typical: EPS and DELTA must each be in (0, 1]; got {eps}, {delta}.")
    return eps, delta


WHERE_HELP = """the Where the speedup goes page at the command line (issue 38). One greedy speculative
run on the prompt, then the parts asked for, each from the same lab functions the page calls:

  metrics    the run's counters as vLLM, SGLang, llama.cpp and transformers report them (item 7)
  timeline   a few cycles' milliseconds by stage: plain greedy, the chain, the EAGLE-2 tree (item 4)
  policies   dynamic-K policies replayed on the run, predicted from measured costs; --measure runs them (item 3)
  rules      five acceptance rules at the run's first positions, at --temperature (item 5)
  precision  fp32 and bf16, plain and speculative: where the outputs part and the top-2 margin there (item 6)

Text by default; --json prints one object with a key per part."""


WHERE_PARTS = ("metrics", "timeline", "policies", "rules", "precision")


def _where_args(w) -> None:
    w.add_argument("--prompt", required=True)
    w.add_argument("--chat", action="store_true", help="wrap the prompt in the tokenizer's chat template")
    w.add_argument("--show", default="metrics,timeline",
                   help=f"comma-separated parts: {', '.join(WHERE_PARTS)} or all (default: metrics,timeline)")
    w.add_argument("--max-new-tokens", type=int, default=48)
    w.add_argument("--k", type=int, default=4, help="draft tokens per cycle")
    w.add_argument("--drafter", choices=["feature", "token", "ngram", "early-exit"], default=None,
                   help="the recorded run's drafter (default: the best the models have)")
    w.add_argument("--tree-budget", type=int, default=16, help="timeline: the EAGLE-2 tree's nodes")
    w.add_argument("--threshold", type=float, default=0.75, help="policies: the confidence stop's threshold")
    w.add_argument("--measure", action="store_true", help="policies: also run each policy in the engine, timed")
    w.add_argument("--temperature", type=float, default=1.0, help="rules: p and q processed at this temperature")
    w.add_argument("--positions", type=int, default=16, help="rules: how many of the run's positions")
    w.add_argument("--target", default=None, help="a local model folder or a Hub id in the local cache")
    w.add_argument("--draft", default=None, help="a draft model with the target's tokenizer")
    w.add_argument("--device", default=None)
    w.add_argument("--json", action="store_true")


def _where_parts(a) -> list[str]:
    """The parts asked for, every argument checked before any model loads."""
    if not a.prompt.strip():
        raise SpecVizError("The prompt is empty: type something for the model to continue.")
    asked = [p.strip() for p in a.show.split(",") if p.strip()][:8]
    asked = list(WHERE_PARTS) if asked == ["all"] else asked
    bad = [p for p in asked if p not in WHERE_PARTS]
    if bad or not asked:
        raise SpecVizError(f"--show takes {', '.join(WHERE_PARTS)} or all; got {a.show[:80]!r}.")
    if not 1 <= a.max_new_tokens <= 256 or not 1 <= a.k <= 16:
        raise SpecVizError(f"--max-new-tokens must be 1..256 and --k 1..16; got {a.max_new_tokens}, {a.k}.")
    if not 1 <= a.tree_budget <= 64 or not 0 < a.threshold < 1 or not 1 <= a.positions <= 64:
        raise SpecVizError("--tree-budget must be 1..64, --threshold in (0, 1) and --positions 1..64; got "
                           f"{a.tree_budget}, {a.threshold}, {a.positions}.")
    if not 0.05 <= a.temperature <= 4:
        raise SpecVizError(f"--temperature must be 0.05..4 (the rules compare sampled distributions); got "
                           f"{a.temperature}.")
    return asked


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m specviz")
    sub = ap.add_subparsers(dest="command", required=True)
    _decode_args(sub.add_parser("decode", help="decode one prompt with greedy, sampling, beam, speculative or "
                                               "lookahead decoding"))
    e = sub.add_parser("export", help="a recorded run of a step page as ONE self-contained HTML lesson (offline)")
    e.error = _one_line  # bad input: one line and exit 2 (argparse would print its usage first)
    _export_args(e)
    _practice_args(sub)
    s = sub.add_parser("app", help="serve the app (Streamlit) on the embedded model, from any folder")
    s.error = _one_line
    s.add_argument("--port", type=int, default=8501, help="the port to listen on (default 8501)")
    s.add_argument("--host", default="127.0.0.1",
                   help="the address to bind (default 127.0.0.1: this machine only; learners' names have no password)")
    _where_args(sub.add_parser("where", help="where the speedup goes: one run's metrics in serving systems' units, "
                                            "its cycle timeline, dynamic-K policies, acceptance rules, fp32 vs bf16",
                               description=WHERE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter))
    return ap


def _decode_args(d) -> None:
    d.add_argument("--method", choices=["greedy", "sample", "beam", "speculative", "lookahead"], default="greedy")
    d.add_argument("--prompt", required=True)
    d.add_argument("--chat", action="store_true", help="wrap the prompt in the tokenizer's chat template")
    d.add_argument("--max-new-tokens", type=int, default=64)
    d.add_argument("--num-beams", type=int, default=4)
    d.add_argument("--length-penalty", type=float, default=1.0)
    d.add_argument("--k", type=int, default=4, help="draft tokens per cycle")
    d.add_argument("--dynamic-k", action="store_true")
    d.add_argument("--acceptance", choices=["token", "block"], default="token",
                   help="speculative, sampling: token-wise rejection sampling or block verification (Sun et al.); "
                        "both exact, greedy runs are plain greedy either way")
    d.add_argument("--drafter", choices=["feature", "token", "ngram", "early-exit", "suffix", "staged", "int8", "int4",
                                         "int8-bf16", "int4-bf16"], default=None,
                   help="default: the feature draft (embedded target), else the draft model, else n-gram lookup; "
                        "int8 / int4: the target itself quantized (-bf16: with bf16 activations)")
    d.add_argument("--early-exit-layers", type=int, default=4)
    d.add_argument("--tree", choices=["none", "chain", "eagle2", "medusa"], default="none",
                   help="verify a token tree in one target pass: 'chain' = the drafter's chain of --tree-depth tokens "
                        "(+ --tree-width - 1 runner-ups per depth), 'eagle2' = EAGLE-2 dynamic tree from the feature "
                        "draft, 'medusa' = the shipped Medusa heads' static tree; 'none' = the chain loop with --k")
    d.add_argument("--tree-budget", type=budget_or_auto, default=16,
                   help="nodes per tree (EAGLE-2); 'auto': size the EAGLE-2 tree for this machine (budget AND depth "
                        "from greedy acceptance by rank and the verify cost v(n) measured here, ~1 min)")
    d.add_argument("--tree-depth", type=int, default=6, help="deepest drafted position of a tree")
    d.add_argument("--tree-width", type=int, default=1,
                   help="a chain tree's tokens per depth (the chain's + runner-ups)")
    d.add_argument("--medusa-choices", default=None, metavar="LIST",
                   help="--tree medusa: the tree as a medusa_choices list, e.g. '[(0,), (1,), (0, 0)]' (default: the "
                        "shipped heads' list)")
    d.add_argument("--typical", default=None, metavar="EPS,DELTA",
                   help="--tree medusa: Medusa's typical acceptance (LOSSY under sampling), e.g. 0.09,0.3; at "
                        "temperature 0 Medusa takes its exact-match branch, so the output is plain greedy's")
    d.add_argument("--window", type=int, default=5, help="lookahead: window W (columns of the Jacobi window)")
    d.add_argument("--ngram", type=int, default=4, help="lookahead: n-gram size N (the window has N - 1 levels)")
    d.add_argument("--guesses", type=int, default=5, help="lookahead: pool n-grams verified per step G")
    d.add_argument("--temperature", type=float, default=None,
                   help="0 = greedy; default 0 for greedy/beam/speculative, 1 for sample")
    d.add_argument("--top-k", type=int, default=0)
    d.add_argument("--top-p", type=float, default=1.0)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--num-samples", type=int, default=1, help="independent seeded draws (seed, seed+1, ...)")
    d.add_argument("--target", default=None, help="Hugging Face id or local folder (default: embedded SmolLM2)")
    d.add_argument("--draft", default=None, help="Hugging Face id or local folder of a draft model")
    d.add_argument("--device", default=None, help="cpu, cuda, mps or auto (default: CUDA, else MPS, else CPU)")
    d.add_argument("--json", action="store_true", help="print one JSON object")


def _export_args(e) -> None:
    e.add_argument("--method", choices=["beam", "speculative", "tree", "lookahead"], default="speculative")
    e.add_argument("--prompt", required=True)
    e.add_argument("--chat", action="store_true", help="wrap the prompt in the tokenizer's chat template")
    e.add_argument("--max-new-tokens", type=int, default=64)
    e.add_argument("--num-beams", type=int, default=4, help="beam: beam width B")
    e.add_argument("--length-penalty", type=float, default=1.0, help="beam: score = log p / length^penalty")
    e.add_argument("--top", type=int, default=3, help="beam: pruned candidates shown per beam")
    e.add_argument("--k", type=int, default=4, help="speculative: draft tokens per cycle")
    e.add_argument("--dynamic-k", action="store_true",
                   help="speculative: K grows after full acceptance, shrinks after a rejection")
    e.add_argument("--drafter", choices=["feature", "token", "ngram", "early-exit"], default=None,
                   help="speculative: default the feature draft (embedded target)")
    e.add_argument("--early-exit-layers", type=int, default=4)
    e.add_argument("--tree", choices=["eagle2", "medusa", "chain"], default="eagle2",
                   help="tree: EAGLE-2, the Medusa heads, or the feature draft's chain")
    e.add_argument("--tree-budget", type=int, default=16, help="tree: verify budget N (nodes)")
    e.add_argument("--tree-depth", type=int, default=6, help="tree: deepest drafted position")
    e.add_argument("--typical", default=None, metavar="EPS,DELTA", help="tree --tree medusa: typical acceptance")
    e.add_argument("--window", type=int, default=5, help="lookahead: window W")
    e.add_argument("--ngram", type=int, default=4, help="lookahead: n-gram size N")
    e.add_argument("--guesses", type=int, default=5, help="lookahead: candidates verified per pass G")
    e.add_argument("--temperature", type=float, default=0.0, help="speculative, tree: 0 = greedy verification")
    e.add_argument("--top-p", type=float, default=1.0, help="speculative: nucleus sampling")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--out", required=True, help="the .html file to write")


def _practice_args(sub) -> None:
    r = sub.add_parser("drill", help="an exercise with an exact answer (formulas, or the embedded model's own numbers)")
    r.add_argument("--list", action="store_true", help="list the drill kinds")
    r.add_argument("--kind", default=None, help="the drill kind (see --list)")
    r.add_argument("--seed", type=int, default=0, help="the same seed gives the same drill")
    r.add_argument("--answer", default=None, help="grade this answer instead of printing the solution")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    g = sub.add_parser("grade", help="grade a free-text answer against a card's rubric, point by point (offline)")
    g.add_argument("--list", action="store_true", help="list the gradable cards")
    g.add_argument("--card", default=None, help="the card id (see --list); a mock step is MOCK_ID:N")
    g.add_argument("--answer", default=None, help="the answer text, or - to read it from standard input")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    g.add_argument("--timing", action="store_true", help="also time the grading (load once, then median of 5)")
    g.add_argument("--eval", action="store_true",
                   help="measure the grader on the hand-labelled held-out parts (cards, fresh answers, mock steps)")
    g.add_argument("--train", action="store_true", help="refit the head and second reader on the tuning part")
    g.add_argument("--cv", action="store_true",
                   help="4-fold cross-validation by card over the tuning part: agreement, kappa, answers outside the "
                   "targets per second-reader weight and threshold; the choice (~22 min)")
    g.add_argument("--overrules", action="store_true",
                   help="where learners and the grader disagree: the overrules in the progress database (SPECVIZ_DB)")
    g.add_argument("--learner", default=None, help="with --overrules: one learner's, by name (default: everyone's)")
    g.add_argument("--start", type=pathlib.Path, default=None,
                   help="with --cv: the second reader starts from these tuned layers (stage one, specviz.training.nli)")
    g.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="with --cv: where each fold's second reader trains and reads (cuda: minutes on a GPU)")
    g.add_argument("--no-contrasts", action="store_true",
                   help="with --cv: the second reader without the stance contrasts "
                   "(specviz/practice/grading_contrasts.yaml), as trained before 2026-11-27 (later)")


def _one_line(message: str):
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _check_listen(host: str, port: int) -> None:
    """Can the server listen on host:port? One sentence when not, before Streamlit starts (it would print more)."""
    if not 1 <= port <= 65535:
        raise SpecVizError(f"--port must be 1..65535; got {port}.")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise SpecVizError(f"--host {host[:80]!r} is not an address or a name this machine can resolve.") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: a closed port is free
        try:
            sock.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise SpecVizError(f"Port {port} on {host} is already in use: pick another with --port.") from None
            if e.errno == errno.EACCES:
                raise SpecVizError(f"Port {port} needs administrator rights here: pick one above 1023.") from None
            raise SpecVizError(f"Cannot listen on {host}:{port}: {e.strerror}.") from None


def app(a) -> int:
    """specviz app: `streamlit run` on the installed app.py (specviz.ROOT), headless, from whatever folder. Streamlit
    reads ROOT/.streamlit/config.toml beside app.py, and puts ROOT on sys.path, so `import ui` is the shipped ui/."""
    script = ROOT / "app.py"
    if not script.is_file():
        raise SpecVizError(missing_file(script))
    if importlib.util.find_spec("streamlit") is None:
        raise SpecVizError("Streamlit is not installed: pip install specviz with its dependencies (pip install .).")
    _check_listen(a.host, a.port)
    # -P: the working folder is not put on sys.path, so a specviz/ or ui/ folder there never shadows the shipped ones
    cmd = [sys.executable, "-P", "-m", "streamlit", "run", str(script), "--server.port", str(a.port),
           "--server.address", a.host, "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]  # installed files do not change: no watcher threads
    sys.stdout.flush()  # exec replaces the process: nothing buffered may be lost
    sys.stderr.flush()
    if os.name == "posix":  # become the server: one process, so a signal to `specviz app` reaches Streamlit
        os.execv(sys.executable, cmd)
    return subprocess.call(cmd)


def _check_export(a) -> None:
    """Every option checked before the model loads: bad input fails fast, in one line."""
    check_text(a.prompt)
    if not 1 <= a.max_new_tokens <= 512:
        raise SpecVizError(f"--max-new-tokens must be 1..512; got {a.max_new_tokens}.")
    if a.method == "beam" and not (1 <= a.num_beams <= 16 and 1 <= a.top <= 6 and -5 <= a.length_penalty <= 5):
        raise SpecVizError(f"--num-beams must be 1..16, --top 1..6 and --length-penalty -5..5; got {a.num_beams}, "
                           f"{a.top}, {a.length_penalty}.")
    if a.method == "speculative" and not (1 <= a.k <= 16 and 1 <= a.early_exit_layers <= 29):
        raise SpecVizError(f"--k must be 1..16 and --early-exit-layers 1..29; got {a.k}, {a.early_exit_layers}.")
    if a.method == "tree" and not (1 <= a.tree_budget <= 64 and 1 <= a.tree_depth <= 16):
        raise SpecVizError(f"--tree-budget must be 1..64 and --tree-depth 1..16; got {a.tree_budget}, {a.tree_depth}.")
    if a.typical is not None and not (a.method == "tree" and a.tree == "medusa"):
        raise SpecVizError("--typical applies to --method tree --tree medusa only.")
    if a.typical is not None:
        parse_typical(a.typical)
    if a.method == "lookahead" and not (1 <= a.window <= 10 and 2 <= a.ngram <= 6 and 0 <= a.guesses <= 10):
        raise SpecVizError(f"--window must be 1..10, --ngram 2..6 and --guesses 0..10; got {a.window}, {a.ngram}, "
                           f"{a.guesses}.")
    if a.temperature and a.method in ("beam", "lookahead"):
        raise SpecVizError(f"--method {a.method} is greedy here: leave out --temperature (or pass 0).")
    out = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(out) or os.path.isdir(a.out):
        raise SpecVizError(f"--out {a.out!r}: not a file in an existing folder.")


def export(a) -> int:
    """python -m specviz export: record a whole run of one step page's method and write it as one offline lesson."""
    _check_export(a)  # before torch loads: bad input answers at once
    from specviz import lesson
    from specviz.drafters import drafter_choices, make_drafter
    from specviz.engine.beam import beam_steps
    from specviz.engine.lookahead import jacobi_steps, lookahead_steps
    from specviz.engine.plain import plain_steps
    from specviz.engine.speculative import speculative_steps
    from specviz.engine.loop import run_steps
    from specviz.engine.tree import tree_speculative_steps
    from specviz.loading import load_models
    from specviz.prompting import context_size, encode_prompt
    from specviz.sampling import SamplingConfig
    from specviz.views import whole_run
    from specviz.views.beam_search import beam_event
    from specviz.views.lookahead_decoding import lookahead_event
    from specviz.views.speculative_decoding import speculative_event
    from specviz.views.tree_speculation import tree_event

    cfg = SamplingConfig(a.temperature, 0, a.top_p if a.temperature else 1.0, a.seed).validate()
    models = load_models()
    model, tok, n = models.target, models.tokenizer, a.max_new_tokens
    ids = encode_prompt(tok, a.prompt, a.chat, context_size(model), n)
    verification = "greedy" if not a.temperature else f"sampling T={a.temperature}"
    if a.method == "beam":
        steps, _ = run_steps(beam_steps(model, tok, ids, a.num_beams, n, a.length_penalty, a.top))
        greedy = run_steps(plain_steps(model, tok, ids, n))[1]
        views = whole_run(beam_event, steps, tok, greedy.token_ids, greedy.logprob, a.num_beams, a.length_penalty)
        settings = dict(beams=a.num_beams, length_penalty=a.length_penalty, max_new_tokens=n, top_per_beam=a.top)
    elif a.method == "speculative":
        kind = a.drafter or next(iter(drafter_choices(models).values()))
        drafter = make_drafter(kind, models, early_exit_layers=a.early_exit_layers)
        steps, _ = run_steps(speculative_steps(model, drafter, tok, ids, n, a.k, cfg, a.dynamic_k, k_max=16))
        views = whole_run(speculative_event, steps, tok, ids, kind)
        settings = dict(drafter=kind, K=a.k, verification=verification, max_new_tokens=n, dynamic_K=a.dynamic_k,
                        **(dict(top_p=a.top_p, seed=a.seed) if a.temperature else {}))
    elif a.method == "tree":
        kind = "feature" if a.tree == "chain" else a.tree
        drafter = make_drafter(kind, models)
        typical = parse_typical(a.typical) if a.typical is not None else None
        steps, _ = run_steps(tree_speculative_steps(model, drafter, tok, ids, n, budget=a.tree_budget,
                                                    depth=a.tree_depth, cfg=cfg, typical=typical))
        views = whole_run(tree_event, steps, tok, ids, n, typical)
        settings = dict(drafter=a.tree, budget=a.tree_budget, depth=a.tree_depth, verification=verification,
                        max_new_tokens=n, **(dict(typical=a.typical) if typical else {}))
    else:
        steps, _ = run_steps(lookahead_steps(model, tok, ids, n, a.window, a.ngram, a.guesses))
        jacobi, _ = run_steps(jacobi_steps(model, tok, ids, n, a.window))
        views = whole_run(lookahead_event, steps, jacobi)
        settings = dict(window=a.window, ngram=a.ngram, guesses=a.guesses, max_new_tokens=n)
    page = lesson.lesson_page(a.method, views, a.prompt, settings)
    try:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise SpecVizError(f"--out {a.out!r}: {e.strerror}.") from None
    print(f"wrote {a.out}: {len(page.encode()) / 1e6:.2f} MB, {len(steps)} events, "
          f"{sum(len(v.titles) for v in views)} steps", file=sys.stderr)
    return 0


def where(a) -> int:
    """python -m specviz where: the Where the speedup goes page's figures (specviz/labs/speedup_report.py)."""
    asked = _where_parts(a)  # before torch loads: bad input answers at once
    from specviz.labs import speedup_report as W

    out = W.run(a, asked)
    print(json.dumps(out) if a.json else W.text(out))
    return 0


def drill(a) -> int:
    """python -m specviz drill: --list, or one drill as {kind, question, given, answer, tolerance, solution}."""
    from specviz.practice.drills import DRILLS, grade, make

    if a.list:
        kinds = [dict(kind=k.name, title=k.title, live=k.live, page=k.page) for k in DRILLS.values()]
        print(json.dumps(kinds) if a.json else "\n".join(f"{k['kind']:20} {k['title']}" + (" (live model)" if k["live"]
                                                                                            else "") for k in kinds))
        return 0
    if not a.kind:
        raise SpecVizError("drill needs --kind KIND (see --list) or --list.")
    models = None
    if a.kind in DRILLS and DRILLS[a.kind].live:
        from specviz.loading import load_models
        models = load_models()
    d = make(a.kind, a.seed, models)
    if a.answer is not None:
        g = grade(d, a.answer)
        out = dict(right=g.right, message=g.message, answer=d.answer, solution=d.solution)
        print(json.dumps(out) if a.json else ("right" if g.right else f"not right: {g.message}\n{d.solution}"))
        return 0 if g.right else 1
    print(json.dumps(d.as_dict()) if a.json else f"{d.question}\n\nanswer: {d.answer}\n{d.solution}")
    return 0


def _start_state(a) -> dict | None:
    """--start FILE: stage one's tuned layers (specviz.training.nli) for --cv, checked before anything runs: a file
    that is not one, or does not fit the reader, is one line, not a traceback minutes into the first fold."""
    if a.start is None:
        return None
    if not a.cv:
        raise SpecVizError("--start is read by --cv only (the second reader's starting point in each fold).")
    from specviz.practice import grade as G
    from specviz.practice import reader as R
    if not a.start.is_file():
        raise SpecVizError(f"--start {str(a.start)[:200]}: no such file.")
    try:
        state = R.load_state(a.start)
        R.Reader(G.encoder_dir(), state)  # every key a parameter of the reader, every shape its shape
    except Exception as e:
        raise SpecVizError(f"--start {str(a.start)[:200]} is not a reader's tuned layers ({type(e).__name__}: "
                           f"{str(e)[:120]}).") from None
    return state


def _cv_flags(a) -> None:
    """--no-contrasts and --device belong to --cv: elsewhere, or a device not here, is one line before any work."""
    if a.no_contrasts and (a.train or not a.cv):
        raise SpecVizError("--no-contrasts is read by --cv alone (the second reader's stance examples in each fold).")
    if a.device != "cpu":
        import torch
        if not a.cv:
            raise SpecVizError("--device is read by --cv alone (the shipped reader is trained on the CPU: --train).")
        if not torch.cuda.is_available():
            raise SpecVizError("--device cuda: no CUDA device is visible to PyTorch here.")


def grade_cmd(a) -> int:
    """python -m specviz grade: --list; --card ID --answer TEXT|- [--json] [--timing]; --eval; --train;
    --cv [--start FILE] [--no-contrasts] [--device cuda]; --overrules."""
    from specviz.practice import grade as G

    _cv_flags(a)
    if a.list:
        cards = [dict(card=c.id, question=c.question, points=len(c.rubric)) for c in G.gradable_cards().values()]
        print(json.dumps(cards) if a.json else "\n".join(f"{c['card']:40} {c['question']}" for c in cards))
        return 0
    if a.overrules:
        return overrules(a)
    if a.train or a.eval or a.cv:
        from specviz.training import grader as T
        start = _start_state(a)
        tune, _ = T.split(*T.load_labels())
        if a.train:
            h = T.train(tune)
            print(json.dumps(h["trained_on"] | {"threshold": h["threshold"]}))
        if a.cv:
            print(json.dumps(T.cross_validate(tune, start=start, contrasts={} if a.no_contrasts else None,
                                              device=a.device)))
        if a.eval:
            r = T.held_out_report()
            print(json.dumps(r, indent=1) if a.json else _eval_text(r))
        return 0
    if not a.card:
        raise SpecVizError("grade needs --card ID (see --list) and --answer TEXT, or --list, --eval or --train.")
    c = G.card(a.card)
    if a.answer is None:
        raise SpecVizError("grade needs --answer TEXT (or --answer - to read standard input).")
    text = sys.stdin.read(G.MAX_ANSWER + 1) if a.answer == "-" else a.answer
    G.check_answer(text)  # bad input answers in one line before the model loads
    if not G.available():  # the encoder's package, or the shipped head (models/grader/head.json), is not there
        raise SpecVizError(G.MISSING if G.encoder_dir() is None else missing_file(G.HEAD_FILE))
    import time
    t0 = time.perf_counter()
    enc = G.default_encoder()
    G.default_reader()  # the second reader loads with the encoder, not inside the first grade timed
    load_s = time.perf_counter() - t0
    g = G.grade(c, text, enc)
    out = g.as_json()
    if a.timing:
        times = []
        for _ in range(5):
            G.stance.cache_clear()  # each timed grade reads the answer afresh, as a new answer would be
            t0 = time.perf_counter()
            G.grade(c, text, enc)
            times.append(time.perf_counter() - t0)
        out["timing"] = {"load_s": round(load_s, 2), "grade_ms_median": round(1000 * sorted(times)[2], 1),
                         "words": len(text.split()), "points": len(c.rubric)}
    if a.json:
        print(json.dumps(out))
    else:
        for p in g.points:
            print(("✓ " if p.made else "✗ ") + p.point + (f"\n    “{p.evidence}”" if p.evidence else ""))
        print(f"score {g.score:.2f}" + (f"  ({out['timing']['grade_ms_median']} ms)" if a.timing else ""))
    return 0


def overrules(a) -> int:
    """python -m specviz grade --overrules [--learner NAME] [--json]: where learners and the grader disagree, from
    the overrules in the progress database (a cohort's PostgreSQL: the grader's errors in use, point by point)."""
    from specviz.practice.progress import Progress, default_target

    target = default_target()
    if not isinstance(target, str) and not target.exists():  # a report never makes a database (a mistyped path)
        raise SpecVizError(f"No progress database at {str(target)[:200]} (SPECVIZ_DB): nothing graded there yet.")
    p = Progress(target)
    try:
        who = None if a.learner is None else p.known(a.learner)
        if a.learner is not None and who is None:
            raise SpecVizError(f"No learner named {a.learner[:40]!r} in the {p.where}.")
        # JSON, for tools: every point overruled; the text: the ten most overruled
        d = p.disagreements(who, limit=None if a.json else 10) | {"database": p.where}
    finally:
        p.close()
    if a.json:
        print(json.dumps(d))
        return 0
    if not d["graded"]:
        print(f"No graded answers yet in the {d['database']}.")
        return 0
    share = f" ({100 * d['overruled'] / d['graded']:.1f} %)"
    print(f"{d['overruled']} of {d['graded']} graded points overruled{share}, by "
          f"{'one learner' if who is not None or d['learners'] == 1 else str(d['learners']) + ' learners'} "
          f"({d['database']})\n"
          f"  the grader said missed, the learner made it count: {d['to_made']}\n"
          f"  the grader said made, the learner declined it: {d['to_missed']}")
    if d["points"]:
        print("points overruled most often (overruled of graded; ✗→✓ the grader said missed):")
        for x in d["points"]:
            print(f"  {x['card']} #{x['point'] + 1}  {x['overruled']} of {x['graded']}  "
                  f"({x['to_made']} ✗→✓, {x['to_missed']} ✓→✗)  {x['text'][:90]}")
    return 0


# the second to sixth held-out parts, as grader.held_out_report names them: answers to tuning cards held out by
# answer; cards labelled later; mock-interview steps; new answers to held-out cards and steps, read once; hard answers
_PARTS = (("fresh_answers", "fresh answers to tuning cards (held out by answer)"),
          ("new_cards", "new held-out cards (labelled and first read 2026-11-27)"),
          ("mock_steps", "mock-interview steps (held out by card; labelled 2026-11-28)"),
          ("late_answers", "late answers to held-out cards and steps (written 2026-11-28)"),
          ("hard_answers", "hard answers to tuning cards (held out by answer; 2026-11-29)"))


def _eval_text(r: dict, title: str = "held-out cards") -> str:
    lines = [f"{title}: {r['answers']} answers, {r['labels']} labels, {r['cards']} cards",
             f"agreement {r['agreement']:.3f}  kappa {r['kappa']:.3f}  precision(made) {r['precision_made']:.3f}  "
             f"recall(made) {r['recall_made']:.3f}  median {r['ms_per_answer_median']} ms/answer",
             "worst cards: " + ", ".join(f"{w['card']} {w['agreement']:.2f}" for w in r["worst_cards"]),
             "wrong and off-topic answers (grader score / hand score):"]
    lines += [f"  {w['kind']:9} {w['card']:32} {w['score']:.2f} / {w['hand_score']:.2f}"
              for w in r["wrong_or_off_topic_scores"]]
    lines.append(f"strong answers under 0.6: {len(r['strong_under_limit'])}; wrong or off-topic over 0.25: "
                 f"{len(r['wrong_over_limit'])}; targets met: {r['targets_met']}")
    for key, title in _PARTS:  # the held-out parts after the first, each under its own key when the set has it
        if key in r:
            lines += ["", _eval_text(r[key], title)]
    return "\n".join(lines)


def _check(a) -> None:
    check_text(a.prompt)  # before the model loads: bad input fails fast
    if a.max_new_tokens < 1 or a.max_new_tokens > 4096:
        raise SpecVizError(f"--max-new-tokens must be between 1 and 4096; got {a.max_new_tokens}.")
    if a.method == "lookahead" and not (1 <= a.window <= 64 and 2 <= a.ngram <= 16 and 0 <= a.guesses <= 64):
        raise SpecVizError(f"--window must be 1..64, --ngram 2..16 and --guesses 0..64; got {a.window}, {a.ngram}, "
                           f"{a.guesses}.")
    if a.method == "lookahead" and a.temperature:
        raise SpecVizError("Lookahead decoding here is greedy only: leave out --temperature (or pass 0).")
    if a.method == "beam" and not 1 <= a.num_beams <= 64:
        raise SpecVizError(f"--num-beams must be between 1 and 64; got {a.num_beams}.")
    if a.method == "speculative" and not 1 <= a.k <= 64:
        raise SpecVizError(f"--k must be between 1 and 64; got {a.k}.")
    if a.tree_budget == "auto" and not (a.method == "speculative" and a.tree == "eagle2"):
        raise SpecVizError("--tree-budget auto sizes the EAGLE-2 tree: use it with --method speculative --tree eagle2.")
    budget = 16 if a.tree_budget == "auto" else a.tree_budget
    if a.method == "speculative" and a.tree != "none" and not (1 <= budget <= 256 and 1 <= a.tree_depth <= 32
                                                                and 1 <= a.tree_width <= 16):
        raise SpecVizError("--tree-budget must be 1..256, --tree-depth 1..32 and --tree-width 1..16; "
                           f"got {a.tree_budget}, {a.tree_depth}, {a.tree_width}.")
    if (a.medusa_choices is not None or a.typical is not None) and not (a.method == "speculative"
                                                                        and a.tree == "medusa"):
        raise SpecVizError("--medusa-choices and --typical apply to --method speculative --tree medusa only.")
    if a.medusa_choices is not None:  # the syntax now, before the model loads; the head count once it has
        parse_choices(a.medusa_choices, num_heads=MAX_HEADS)
    if a.typical is not None:
        parse_typical(a.typical)
    if not 1 <= a.num_samples <= 10_000:
        raise SpecVizError(f"--num-samples must be between 1 and 10000; got {a.num_samples}.")


def budget_or_auto(text: str):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number or 'auto', not {text!r}") from None


def decode(a) -> dict:
    # imported here, not at the top: `--help` and bad input answer before torch and transformers load
    from specviz.engine.beam import beam_steps
    from specviz.drafters import drafter_choices, make_drafter
    from specviz.engine.lookahead import lookahead_steps
    from specviz.engine.plain import plain_steps
    from specviz.loading import load_models, load_target
    from specviz.prompting import context_size, encode_prompt
    from specviz.sampling import SamplingConfig
    from specviz.engine.speculative import speculative_steps
    from specviz.engine.loop import run_steps
    from specviz.engine.tree import tree_speculative_steps

    _check(a)
    temperature = a.temperature if a.temperature is not None else (1.0 if a.method == "sample" else 0.0)
    cfg = SamplingConfig(temperature, a.top_k, a.top_p, a.seed).validate()
    if not a.json:
        print("loading model (the first run converts the embedded GGUF, ~20 s)...", file=sys.stderr, flush=True)
    if a.method == "speculative":
        models = load_models(a.target, a.draft, a.device)
        model, tok = models.target, models.tokenizer
    else:
        model, tok = load_target(a.target, a.device)
    ids = encode_prompt(tok, a.prompt, a.chat, context_size(model), a.max_new_tokens)
    sizing = _size_tree(a, models) if a.tree_budget == "auto" else None

    def one(seed: int):
        c = SamplingConfig(cfg.temperature, cfg.top_k, cfg.top_p, seed)
        if a.method in ("greedy", "sample"):
            return run_steps(plain_steps(model, tok, ids, a.max_new_tokens, c, details=False))[1]
        if a.method == "beam":
            return run_steps(beam_steps(model, tok, ids, a.num_beams, a.max_new_tokens, a.length_penalty))[1]
        if a.method == "lookahead":
            return run_steps(lookahead_steps(model, tok, ids, a.max_new_tokens, a.window, a.ngram, a.guesses))[1]
        kind = a.drafter or next(iter(drafter_choices(models).values()))  # the best these models have
        choices = (parse_choices(a.medusa_choices, models.medusa.num_heads)
                   if a.tree == "medusa" and a.medusa_choices is not None else None)
        drafter = make_drafter(a.tree if a.tree in ("eagle2", "medusa") else kind, models,
                               early_exit_layers=a.early_exit_layers, choices=choices)
        if a.tree != "none":
            typical = parse_typical(a.typical) if a.typical is not None else None
            return run_steps(tree_speculative_steps(model, drafter, tok, ids, a.max_new_tokens, a.tree_budget,
                                                    a.tree_depth, a.tree_width, c, typical=typical, details=False))[1]
        # details=False: the output is the tokens and the counters, so no cycle records what only a page draws
        return run_steps(speculative_steps(model, drafter, tok, ids, a.max_new_tokens, a.k, c, a.dynamic_k,
                                           acceptance=a.acceptance, details=False))[1]

    results = [one(a.seed + i) for i in range(a.num_samples)]
    out = results[0].as_dict()
    out["prompt_tokens"] = len(ids)
    out["tokens_per_target_pass"] = results[0].counters.tokens_per_target_pass
    if a.method == "speculative" and a.tree != "none":
        out.update(_tree_fields(a, models, sizing, cfg.temperature))
    if a.num_samples > 1:
        out["samples"] = [r.token_ids for r in results]
    return out


def _size_tree(a, models) -> dict:
    """--tree-budget auto: the EAGLE-2 tree's budget and depth for this machine (labs/tree_sizing.py), set on `a`."""
    from specviz.drafters import make_drafter
    from specviz.labs.tree_sizing import size

    make_drafter("eagle2", models)  # the embedded target's feature draft, or its one sentence, before a minute
    if not a.json:
        print("sizing the EAGLE-2 tree for this machine (about a minute)...", file=sys.stderr, flush=True)
    sizing = size(models)
    a.tree_budget, a.tree_depth = sizing["choice"].budget, sizing["choice"].depth
    return sizing


def _tree_fields(a, models, sizing: dict | None, temperature: float) -> dict:
    """The JSON's tree fields: the tree asked for, the sizing's choice and its figures, Medusa's list and rule."""
    out = dict(tree=a.tree, tree_budget=a.tree_budget, tree_depth=a.tree_depth, tree_width=a.tree_width)
    if sizing is not None:
        c = sizing["choice"]
        out["tree_sizing"] = {"budget": c.budget, "depth": c.depth, "expected_tokens_per_cycle": c.tokens,
                              "expected_ms_per_cycle": c.ms, "expected_tokens_per_s": c.tokens_per_s,
                              "draft_pass_ms": sizing["draft_pass_ms"], "recorded_cycles": sizing["cycles"],
                              "verify_ms": {n: v["median"] for n, v in sizing["verify_ms"].items()}}
    if a.tree == "medusa":
        out.update(medusa_choices=[list(p) for p in (parse_choices(a.medusa_choices, models.medusa.num_heads)
                                                     if a.medusa_choices is not None else models.medusa.choices)],
                   typical=list(parse_typical(a.typical)) if a.typical is not None else None,
                   verify_mode=("typical" if a.typical is not None and temperature else
                                "greedy" if not temperature else "sampling"))
    return out


_TEXT_OPTIONS = ("--answer", "--prompt")


def _glued(argv: list[str]) -> list[str]:
    """A text starting with one "-" (a terse answer's bullet list: "- target scores all K ...") passed after
    --answer or --prompt is that option's value, not an unknown option (argparse would refuse it)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in _TEXT_OPTIONS and i + 1 < len(argv) and argv[i + 1][:1] == "-" and argv[i + 1][:2] != "--" \
                and argv[i + 1] != "-":
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv=None) -> int:
    a = _parser().parse_args(_glued(list(sys.argv[1:] if argv is None else argv)))
    try:
        if a.command == "drill":
            return drill(a)
        if a.command == "export":
            return export(a)
        if a.command == "where":
            return where(a)
        if a.command == "grade":
            return grade_cmd(a)
        if a.command == "app":
            return app(a)
        out = decode(a)
    except SpecVizError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if a.json:
        print(json.dumps(out))
    else:
        print(out["text"])
        extra = f"  score {out['score']:.4f}" if out.get("score") is not None else ""
        print(f"\n[{a.method}: {len(out['token_ids'])} tokens, {out['target_passes']} target passes, "
              f"{out['draft_passes']} draft passes, {out['mean_acceptance_length']:.2f} tokens/verify pass{extra}]",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
