"""Distil a small draft model for the embedded target: `python -m specviz.distill`.

Recipe (seeded, CPU-friendly; uses CUDA when present):
  1. prompts: task templates x subjects -> several hundred chat prompts; held-out subjects never
     enter training and are used only for evaluation;
  2. data: the target answers each prompt `--answers-per-prompt` times, each at a different
     temperature, and one teacher-forced target forward over each answer stores its top-k next-token
     log-probs — the soft labels;
  3. train: a draft with the target's own config but `--layers` decoder layers (initialised from
     target layers `--init`), sharing the target's frozen embedding and rotary table; the
     loss is the cross-entropy of the draft's distribution against the target's top-k distribution
     (renormalised over the draft's reduced head), `--steps` AdamW steps with a cosine-decayed rate;
  4. export: only the draft's own weights (layers, final norm, reduced head) as bf16 safetensors in
     models/draft.
`--kind feature` trains the feature draft (specviz/eagle.py) instead: it starts from the token draft in
models/draft, reads the target's hidden states (one teacher-forced pass per answer, cached next to the
data), and is trained on the same soft labels, with a second pass fed its own outputs (what drafting positions 2..K see); it exports to
models/feature_draft.
Evaluate on held-out prompts with `python -m specviz.distill eval [--draft models/feature_draft]`.
"""
from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import random
import time

import torch

from .models import REPO_ROOT, load_target

TASKS = [
    "Explain {s} to a beginner.",
    "What are three common misconceptions about {s}?",
    "Write a short story that involves {s}.",
    "Write a Python function related to {s}, with a docstring.",
    "Give me a bulleted list of five facts about {s}.",
    "Write a polite email asking a colleague for help with {s}.",
    "Summarize the history of {s} in a paragraph.",
    "What is the difference between {s} and something often confused with it?",
    "Write a haiku about {s}.",
    "How would you teach {s} to a ten-year-old?",
    "List the pros and cons of {s}.",
    "Write a math word problem about {s} and solve it step by step.",
]
SUBJECTS = [
    "photosynthesis", "the French Revolution", "binary search", "climate change", "the water cycle",
    "compound interest", "black holes", "the immune system", "machine learning", "volcanoes",
    "the Roman Empire", "recursion", "healthy sleep", "electric cars", "the stock market",
    "gardening tomatoes", "the Pythagorean theorem", "coffee brewing", "public speaking", "honeybees",
    "the internet", "time management", "earthquakes", "sorting algorithms", "the human heart",
    "renewable energy", "chess openings", "the moon landing", "bread baking", "hash tables",
    "ocean tides", "vaccines", "the printing press", "budgeting", "rainbows", "linked lists",
    "dinosaurs", "jazz music", "recycling", "the Olympic Games", "probability", "mountain hiking",
    "SQL databases", "the solar system", "learning a language", "bicycles", "cloud computing",
    "friendship", "the Great Wall of China", "prime numbers", "weather forecasting", "penguins",
]
# a second, wider set of training subjects (one answer each): held-out acceptance showed the draft
# memorising the first set (0.85 greedy agreement on its training answers, 0.44 on held-out ones), so
# breadth of content is what the drafts lack
EXTRA_SUBJECTS = [
    "glaciers", "the Industrial Revolution", "depth-first search", "deserts", "the nitrogen cycle",
    "inflation", "supernovas", "antibiotics", "neural networks", "hurricanes", "ancient Egypt", "dynamic programming",
    "meditation", "airplanes", "credit scores", "growing herbs", "fractions", "tea ceremonies", "job interviews",
    "ants", "email", "procrastination", "tsunamis", "graph algorithms", "the human brain", "solar panels",
    "poker odds", "the Apollo program", "pasta making", "binary trees", "coral reefs", "allergies",
    "the steam engine", "saving for retirement", "lightning", "stacks and queues", "fossils", "classical music",
    "composting", "the World Cup", "statistics", "camping", "spreadsheets", "Mars", "learning to code",
    "trains", "cybersecurity", "kindness", "the pyramids of Giza", "fractals", "air pollution", "owls",
    "the Cold War", "operating systems", "rivers", "the metric system", "comets", "the digestive system",
    "quantum computing", "tornadoes", "the Vikings", "object-oriented programming", "running shoes",
    "3D printing", "real estate", "indoor plants", "logarithms", "wine tasting", "negotiation", "butterflies",
    "smartphones", "stress", "wildfires", "caching", "the lungs", "wind turbines", "chess endgames",
    "the Wright brothers", "pizza dough", "heaps", "rain forests", "the flu", "the telephone", "taxes",
    "snowflakes", "version control with git", "mammoths", "hip hop", "plastic waste", "the Tour de France",
    "Bayes' theorem", "scuba diving", "APIs", "Jupiter", "photography", "skateboards", "encryption",
    "teamwork", "Stonehenge", "the Fibonacci sequence", "droughts", "dolphins", "the American Revolution",
    "compilers", "lakes", "units of measurement", "asteroids", "the skeleton", "robotics", "fog",
    "the samurai", "functional programming", "yoga", "drones", "mortgages", "cacti", "geometry",
    "chocolate", "leadership", "frogs", "social media", "habits", "avalanches", "garbage collection",
    "blood types", "nuclear power", "crossword puzzles", "the Gold Rush", "soup", "tries", "wetlands",
    "the common cold", "radio", "insurance", "auroras", "unit testing", "sharks", "rock and roll",
    "water conservation", "Mount Everest", "calculus", "sailing", "web browsers", "Saturn",
    "painting with watercolors", "motorcycles", "passwords", "empathy", "Machu Picchu", "sets and maps",
    "deforestation", "elephants", "the Ottoman Empire", "database indexes", "ponds", "time zones",
    "the Big Bang", "the kidneys", "virtual reality", "clouds", "the Aztecs", "concurrency", "pilates",
    "satellites", "stocks and bonds", "mushrooms", "algebra", "cheese making", "conflict resolution",
    "whales", "online privacy", "motivation", "sinkholes", "load balancing", "vitamins", "hydrogen fuel",
    "board games", "the Berlin Wall", "sandwiches", "queues in real life", "bats", "opera",
    "ocean currents", "the Eiffel Tower", "percentages", "kayaking", "spam filters", "Venus", "knitting",
    "trucks", "firewalls", "gratitude", "the Colosseum", "random numbers", "soil erosion", "wolves",
    "the Mongol Empire", "microservices", "caves", "calendars", "gravity", "the eyes", "self-driving cars",
    "hail", "the Incas", "regular exercise", "bridges", "savings accounts", "sunflowers", "statistics in sports",
]
# a third list (one answer each), added when 3x the data still left a train/held-out gap (0.68 vs 0.53
# teacher-forced agreement); shuffled on its own so that the cache of the first two stays a prefix
MORE_SUBJECTS = [
    "the Mediterranean diet", "the Byzantine Empire", "breadth-first search", "tundra", "the carbon cycle",
    "exchange rates", "neutron stars", "the placebo effect", "transformers in deep learning", "monsoons",
    "ancient Greece", "greedy algorithms", "mindful breathing", "helicopters", "student loans", "growing strawberries",
    "decimals", "sushi", "writing a resume", "termites", "video calls", "perfectionism", "floods", "shortest paths",
    "the nervous system", "geothermal energy", "blackjack", "the International Space Station", "dumplings",
    "balanced trees", "kelp forests", "food poisoning", "the light bulb", "emergency funds", "thunder",
    "priority queues", "amber", "the violin", "upcycling", "the Super Bowl", "standard deviation", "rock climbing",
    "word processors", "Mercury", "learning to draw", "subways", "phishing", "honesty", "the Parthenon",
    "the golden ratio", "noise pollution", "eagles", "the Space Race", "file systems", "waterfalls",
    "leap years", "meteor showers", "the liver", "neuromorphic chips", "dust storms", "the Celts",
    "design patterns", "hiking boots", "electric guitars", "renting an apartment", "succulents", "exponents",
    "olive oil", "small talk", "moths", "smartwatches", "anxiety", "heat waves", "rate limiting", "the spleen",
    "hydroelectric dams", "sudoku", "Marie Curie", "tacos", "graphs and networks", "mangroves", "measles",
    "the typewriter", "tipping etiquette", "frost", "code review", "sabre-toothed cats", "reggae", "e-waste",
    "the Paralympics", "the central limit theorem", "snorkeling", "webhooks", "Neptune", "film cameras",
    "roller skates", "digital signatures", "patience", "Angkor Wat", "Pascal's triangle", "landslides",
    "sea turtles", "the Russian Revolution", "interpreters", "estuaries", "the speed of light", "meteorites",
    "muscles", "prosthetic limbs", "humidity", "the Maya civilization", "tai chi",
    "hot air balloons", "car loans", "bamboo", "trigonometry", "ice cream", "mentoring", "salamanders",
    "online reviews", "journaling", "quicksand", "memory leaks", "minerals in food", "biofuels", "card tricks",
    "the Magna Carta", "pancakes", "stack overflow errors", "peat bogs", "seasonal allergies", "television",
    "warranties", "solar eclipses", "integration testing", "jellyfish", "the blues", "composting toilets",
    "the Grand Canyon", "differential equations", "surfing", "search engines", "Uranus", "pottery",
    "scooters", "two-factor authentication", "forgiveness", "the Terracotta Army",
    "light pollution", "giraffes", "the Hundred Years' War", "shell scripting",
    "daylight saving time", "dark matter", "the pancreas", "augmented reality", "sea fog", "the Phoenicians",
    "threads and processes", "swimming technique", "submarines", "index funds", "orchids", "vectors",
    "baking cookies", "giving feedback", "crocodiles", "fake news", "morning routines", "geysers",
    "content delivery networks", "hydration", "tidal power", "dominoes", "the Trojan War", "salad dressings",
    "bloom filters", "savannas", "migraines", "the phonograph", "household budgets", "sandstorms",
    "continuous integration", "octaves in music", "wool", "the Sahara", "permutations", "ice skating",
    "keyboards", "malware", "curiosity", "the Acropolis", "magic squares", "overfishing", "horses",
    "the Spanish Armada", "regular maintenance of cars", "hash functions", "fjords", "compasses", "the tongue", "3D animation", "sleet", "the Hanseatic League", "event loops",
    "stretching", "cable cars", "pension plans", "maple trees", "probability trees", "spices",
    "active listening", "parrots", "podcasts", "boredom", "hot springs", "message queues", "electrolytes",
    "batteries", "jigsaw puzzles", "the Suez Canal", "curry", "grasslands", "sunburn",
    "the microscope", "credit cards", "static electricity", "refactoring", "koalas",
]
HELD_OUT = ["octopuses", "regular expressions", "the Silk Road", "marathon training",
            "matrix multiplication", "lighthouses", "fermentation", "the Renaissance"]


def prompts(subjects) -> list[str]:
    return [t.format(s=s) for s, t in itertools.product(subjects, TASKS)]


def held_out_prompts() -> list[str]:
    return prompts(HELD_OUT)


DATA_SLICE = 480  # answers generated between two saves of the data cache


def training_jobs(seed: int, temps, answers_per_prompt: int, extra_subjects: int, n_prompts: int = 0):
    """(prompt, temperature) for the training data, in cache order: the first subject list's prompts
    `answers_per_prompt` times, then the first `extra_subjects` of the second and third lists' once each;
    each list shuffled with the seed on its own. n_prompts > 0 keeps only the first n prompts of the first list (tiny runs)."""
    first = prompts(SUBJECTS)
    random.Random(seed).shuffle(first)
    second = prompts(EXTRA_SUBJECTS[:extra_subjects])
    random.Random(seed + 1).shuffle(second)
    third = prompts(MORE_SUBJECTS[:max(0, extra_subjects - len(EXTRA_SUBJECTS))])
    random.Random(seed + 2).shuffle(third)
    if n_prompts:
        first, second, third = first[:n_prompts], [], []
    return data_jobs(first, temps, answers_per_prompt) + data_jobs(second + third, temps, 1)


def chat_ids(tok, prompt: str) -> list[int]:
    return list(tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)["input_ids"])


def data_jobs(prompt_list, temperatures, answers_per_prompt: int) -> list[tuple[str, float]]:
    """(prompt, temperature) in cache order: round r gives prompt i temperature i + r (mod the list),
    so a prompt's answers all differ in temperature; a longer run extends a shorter run's cache."""
    return [(p, temperatures[(i + r) % len(temperatures)])
            for r in range(answers_per_prompt) for i, p in enumerate(prompt_list)]


@torch.inference_mode()
def make_data(target, tok, jobs, max_new: int, topk: int, batch: int, seed: int):
    """Target answers (batched, left-padded) then one teacher-forced pass storing top-k log-probs."""
    torch.manual_seed(seed)
    tok.padding_side = "left"
    records = []
    order = sorted(range(len(jobs)), key=lambda j: jobs[j][1])  # stable: cache order within a temperature
    jobs = [(jobs[j][0], jobs[j][1], j) for j in order]
    # one temperature per generate() batch
    groups = [list(g) for _, g in itertools.groupby(jobs, key=lambda j: j[1])]
    by_job = {}
    batches = [g[s:s + batch] for g in groups for s in range(0, len(g), batch)]
    done, made, t0 = 0, 0, time.time()
    for chunk in batches:
        temp = chunk[0][1]
        enc = [chat_ids(tok, p) for p, _, _ in chunk]
        width = max(map(len, enc))
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        ids = torch.tensor([[pad] * (width - len(e)) + e for e in enc], device=target.device)
        mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in enc], device=target.device)
        kw = dict(do_sample=True, temperature=temp, top_k=0, top_p=1.0) if temp > 0 else dict(do_sample=False)
        out = target.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, pad_token_id=pad, **kw)
        for row, e, (_, _, j) in zip(out, enc, chunk):
            answer = row[width:].tolist()
            if pad in answer:  # cut at EOS (inclusive)
                answer = answer[:answer.index(pad) + 1]
            seq = e + answer
            logits = target(input_ids=torch.tensor([seq], device=target.device)).logits[0].float()
            logp = torch.log_softmax(logits[len(e) - 1:-1], -1)  # positions that predict the answer
            v, i = torch.topk(logp, topk, -1)
            by_job[j] = {"ids": seq, "start": len(e), "top_logp": v.half().cpu(), "top_ids": i.int().cpu(),
                         "temperature": temp}
            made += len(answer)
        done += len(chunk)
        print(f"  data {done}/{len(jobs)} answers, {made / (time.time() - t0):.0f} answer tokens/s", flush=True)
    return [by_job[j] for j in range(len(jobs))]


def cache_in_job_order(records, jobs, tok):
    """Caches written before answers carried their temperature were sorted by temperature; put such a
    cache (one answer per prompt) back in job order by matching each answer's prompt tokens."""
    if not records or "temperature" in records[0]:
        return records
    by_prompt = {tuple(r["ids"][:r["start"]]): r for r in records}
    ordered = []
    for prompt, temp in jobs:
        r = by_prompt.pop(tuple(chat_ids(tok, prompt)), None)
        if r is None:
            break
        ordered.append(r | {"temperature": temp})
    return ordered


def head_subset(records, size: int, eos: int) -> torch.Tensor:
    """The `size` token ids the target emits most often in the training answers (EOS always in)."""
    counts = torch.zeros(200_000, dtype=torch.long)
    for r in records:
        ans = torch.tensor(r["ids"][r["start"]:])
        counts.index_add_(0, ans, torch.ones_like(ans))
        top = r["top_ids"][:, :4].reshape(-1).long()  # the target's near-misses matter too
        counts.index_add_(0, top, torch.ones_like(top))
    counts[eos] = counts.max() + 1
    return torch.sort(torch.topk(counts, size).indices).values


def build_draft(target, layers: int, init: list[int], head_ids: torch.Tensor | None = None):
    """Draft = target config with `layers` layers copied from target layers `init`; shared modules
    (embedding, rotary, head) are the target's own objects and stay frozen."""
    import copy

    from .drafters import _assemble

    from .drafters import SubsetHead

    own = torch.nn.ModuleList(copy.deepcopy(target.model.layers[i]) for i in init[:layers])
    for j, layer in enumerate(own):
        layer.self_attn.layer_idx = j
    head = None
    if head_ids is not None:
        head = SubsetHead(target.lm_head.weight.detach()[head_ids].clone(), head_ids, target.config.vocab_size)
    return _assemble(target, layers, own, copy.deepcopy(target.model.norm), head)


def token_loss(draft, r: dict):
    """A token-only draft's loss on one sequence: cross-entropy of q against the target's top-k
    distribution (renormalised over what a reduced head covers), summed over answer positions."""
    ids = torch.tensor([r["ids"]], device=draft.device)
    n = len(r["ids"]) - r["start"]
    logits = draft(input_ids=ids, logits_to_keep=n + 1).logits[0, :-1].float()
    logq = torch.log_softmax(logits, -1)
    t_logp = r["top_logp"].float().to(logq.device)
    picked = logq.gather(-1, r["top_ids"].long().to(logq.device))
    inside = torch.isfinite(picked)  # a reduced head cannot say tokens outside its subset
    t_logp = t_logp.masked_fill(~inside, float("-inf"))
    t_p = torch.nan_to_num(torch.softmax(t_logp, -1))  # target's top-k, renormalised over what q covers
    return -(t_p * picked.masked_fill(~inside, 0.0)).sum(), n


def trainable(draft) -> list[torch.nn.Parameter]:
    """Everything but the modules borrowed from the target (embedding, rotary, a shared head)."""
    from .drafters import SubsetHead

    lm = getattr(draft, "lm", draft)  # a feature draft wraps its one-layer Llama
    own = list(lm.model.layers.parameters()) + list(lm.model.norm.parameters())
    if hasattr(draft, "fc"):
        own += list(draft.fc.parameters()) + (list(draft.fuse.parameters()) if draft.fuse is not None else [])
    elif isinstance(lm.lm_head, SubsetHead):  # a token draft trains its reduced head; a feature draft
        own += [lm.lm_head.weight]            # keeps the target's rows, as its features live in that space
    return own


def train(draft, records, steps: int, minutes: float, lr: float, batch: int, seed: int, loss_fn=None,
          log_every: int = 25):
    """`steps` AdamW steps with the learning rate decaying on a cosine to lr/10 (a constant rate left the
    loss noisy at the end); `minutes` > 0 caps the time as well. loss_fn(index) -> (loss sum, tokens)."""
    import math

    loss_fn = loss_fn or (lambda i: token_loss(draft, records[i]))
    params = trainable(draft)
    for p in draft.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    # a feature draft's input layers learn at 0.3x the rate: Adam moves every weight by ~lr per step
    # whatever its gradient, and fc's feature half starts at zero beside a trained token path
    slow = list(draft.fc.parameters()) + (list(draft.fuse.parameters()) if draft.fuse is not None else []) \
        if hasattr(draft, "fc") else []
    fast = [p for p in params if all(p is not q for q in slow)]
    groups = [{"params": fast, "mult": 1.0}] + ([{"params": slow, "mult": 0.3}] if slow else [])
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    deadline = time.time() + minutes * 60 if minutes > 0 else float("inf")
    step, order = 0, []
    draft.train()
    while step < steps and time.time() < deadline:
        for group in opt.param_groups:
            group["lr"] = group["mult"] * lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        if not order:
            order = list(range(len(records)))
            rng.shuffle(order)
        chunk = [order.pop() for _ in range(min(batch, len(order)))]
        loss_sum, n_tok = 0.0, 0
        opt.zero_grad()
        for i in chunk:  # one sequence at a time: no padding, exact positions
            loss, n = loss_fn(i)
            loss.backward()
            loss_sum += float(loss.detach())
            n_tok += n
        for p in params:
            if p.grad is not None:
                p.grad /= max(n_tok, 1)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step % log_every == 0:
            print(f"  step {step} loss/token {loss_sum / max(n_tok, 1):.3f}", flush=True)
    draft.eval()
    return step


def export(draft, out: pathlib.Path, meta: dict) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    state = {f"layers.{k}": v for k, v in draft.model.layers.state_dict().items()}
    state |= {f"norm.{k}": v for k, v in draft.model.norm.state_dict().items()}
    from .drafters import SubsetHead

    if isinstance(draft.lm_head, SubsetHead):
        state["head.weight"] = draft.lm_head.weight
    tensors = {k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in state.items()}
    if isinstance(draft.lm_head, SubsetHead):
        tensors["head.ids"] = draft.lm_head.ids.to(torch.int32).cpu()
    save_file(tensors, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


# The default recipe: the shipped drafts were made with exactly these (a test compares their configs)
DEFAULT_STEPS = {"token": 2400, "feature": 3600}
DEFAULT_LR = 1e-3


def parse_args(argv=None) -> argparse.Namespace:
    """The recipe's settings, every default resolved (the step budget depends on --kind)."""
    ap = argparse.ArgumentParser(prog="python -m specviz.distill", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["token", "feature"], default="token",
                    help="token: a small LM over tokens (models/draft); feature: reads the target's hidden "
                         "state, EAGLE-style (models/feature_draft, specviz/eagle.py)")
    ap.add_argument("--layers", type=int, default=1,
                    help="decoder layers (feature draft: copies of the token draft's layer, the extra ones "
                         "starting with zero output projections)")
    ap.add_argument("--init", default="0", help="token draft: comma-separated target layers to start from")
    ap.add_argument("--unroll", type=int, default=2, help="feature draft: passes fed with its own features")
    ap.add_argument("--read-layers", default="10,20,last",
                    help="feature draft: which target hidden states it reads (0 = embeddings, last = final normed)")
    ap.add_argument("--token-draft", default=str(REPO_ROOT / "models" / "draft"),
                    help="feature draft: the trained 1-layer token draft it starts from and shares its head with")
    ap.add_argument("--prompts", type=int, default=0, help="use only the first N training prompts (0: all)")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--temperatures", default="0,0.7,1.0")
    ap.add_argument("--topk", type=int, default=32)
    ap.add_argument("--gen-batch", type=int, default=16)
    ap.add_argument("--answers-per-prompt", type=int, default=2,
                    help="answers per prompt, each at a different temperature from --temperatures")
    ap.add_argument("--extra-subjects", type=int, default=len(EXTRA_SUBJECTS) + len(MORE_SUBJECTS),
                    help="how many of the second and third subject lists to add, one answer per prompt (0: none)")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps, cosine learning-rate decay over them (default: 2400 token, 3600 feature)")
    ap.add_argument("--minutes", type=float, default=0.0, help="also stop training after this long (0: no cap)")
    ap.add_argument("--lr", type=float, default=DEFAULT_LR, help="(fc and the fuse layer learn at 0.3x)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--head-vocab", type=int, default=8192, help="reduced draft head size (0: share the full head)")
    ap.add_argument("--data", default=str(REPO_ROOT / "models" / "work" / "data.pt"),
                    help="cache of generated data (reused when present and --regenerate is off)")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--out", default=None, help="default: models/draft or models/feature_draft")
    a = ap.parse_args(argv)
    a.steps = a.steps or DEFAULT_STEPS[a.kind]
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    torch.manual_seed(a.seed)
    t0 = time.time()
    target, tok = load_target(packed=False)  # layers are copied from it and trained
    for p in target.parameters():
        p.requires_grad_(False)
    data_path = pathlib.Path(a.data)
    temps = [float(t) for t in a.temperatures.split(",")]
    jobs = training_jobs(a.seed, temps, a.answers_per_prompt, a.extra_subjects, a.prompts)
    records = []
    if data_path.is_file() and not a.regenerate:
        # answers are cached in job order: only jobs beyond the cache are generated
        records = cache_in_job_order(torch.load(data_path, weights_only=False), jobs, tok)
        print(f"data: {len(records)} answers from {data_path}")
    if len(records) < len(jobs):
        print(f"data: {len(jobs) - len(records)} more answers, temperatures {temps}, {a.max_new_tokens} new tokens each")
        # generation needs no gradients and no weights read back: the packed (fast) target does it
        gen, _ = load_target()
        data_path.parent.mkdir(parents=True, exist_ok=True)
        while len(records) < len(jobs):  # saved slice by slice: a long run that is cut keeps what it made
            todo = jobs[len(records):len(records) + DATA_SLICE]
            records += make_data(gen, tok, todo, a.max_new_tokens, a.topk, a.gen_batch, a.seed + len(records))
            torch.save(records, data_path)
        del gen
    records = records[:len(jobs)]
    n_tokens = sum(len(r["ids"]) - r["start"] for r in records)
    t_data = time.time() - t0
    print(f"data ready: {n_tokens} answer tokens in {t_data:.0f} s")
    feature = a.kind == "feature"
    init = [int(x) for x in a.init.split(",")]
    loss_fn = None
    if feature:
        from . import eagle

        n_layers = target.config.num_hidden_layers
        layers_read = [int(x) if x != "last" else n_layers for x in a.read_layers.split(",")]
        feats = eagle.cached_features(data_path.with_name("feats.pt"), records, layers_read, load_target, log=print)
        token_draft = pathlib.Path(a.token_draft)
        draft = eagle.from_token_draft(target, token_draft, layers_read, a.layers)
        loss_fn = lambda i: eagle.sequence_loss(draft, records[i], feats[i], a.unroll)  # noqa: E731
    else:
        head_ids = head_subset(records, a.head_vocab, tok.eos_token_id) if a.head_vocab else None
        draft = build_draft(target, a.layers, init, head_ids)
    t_train = time.time()
    lr = a.lr
    steps = train(draft, records, a.steps, a.minutes, lr, a.batch, a.seed, loss_fn)
    train_meta = {"answers": len(records), "answer_tokens": n_tokens, "temperatures": temps, "topk": a.topk,
                  "answers_per_prompt": a.answers_per_prompt, "extra_subjects": a.extra_subjects,
                  "steps": steps, "batch": a.batch, "lr": lr, "lr_schedule": "cosine to 0.1x",
                  "minutes": round((time.time() - t_train) / 60, 1), "seed": a.seed,
                  "device": str(target.device), "threads": torch.get_num_threads()}
    out = pathlib.Path(a.out or REPO_ROOT / "models" / ("feature_draft" if feature else "draft"))
    if feature:
        train_meta |= {"unroll": a.unroll, "read_layers": layers_read,
                       "lr_input_layers": "0.3x (fc, fuse)"}
        import os
        eagle.export(draft, out, {"init_from": "the token draft's layer, norm and head (fc: embedding passed through)",
                                  "shares_with_target": ["embed_tokens", "rotary_emb"],
                                  "dtype": "bfloat16", "train": train_meta},
                     head_from=os.path.relpath(token_draft.resolve(), out.resolve().parent))
        print(f"exported to {out} after {time.time() - t0:.0f} s")
        return 0
    meta = {"num_hidden_layers": a.layers, "init_from_target_layers": init[:a.layers],
            "shares_with_target": ["embed_tokens", "rotary_emb"] + ([] if a.head_vocab else ["lm_head"]),
            "head_vocab": a.head_vocab or None, "dtype": "bfloat16", "train": train_meta}
    export(draft, out, meta)
    print(f"exported to {out} after {time.time() - t0:.0f} s")
    return 0




# ---------------------------------------------------------------- evaluation (held-out prompts only)
@torch.inference_mode()
def teacher_forced(target, draft, seq: list[int], n: int):
    """(p, q) at the answer positions after the first (the last n tokens of seq are the answer), each
    read from the real prefix; for a feature draft that is its first draft position (real target states)."""
    seq = torch.tensor([seq], device=target.device)
    if getattr(draft, "reads_target_features", False):
        from .eagle import shifted
        o = target(input_ids=seq, output_hidden_states=True)
        p = torch.softmax(o.logits[0, -n:-1].float(), -1)
        states = torch.cat([o.hidden_states[j][0] for j in draft.layers_read], -1)
        h, _ = draft(seq, shifted(states)[:-1][None])
        return p, torch.softmax(draft.head(h[0, -n:-1]).float(), -1)
    p = torch.softmax(target(input_ids=seq, logits_to_keep=n + 1).logits[0, :-1].float(), -1)
    return p, torch.softmax(draft(input_ids=seq, logits_to_keep=n + 1).logits[0, :-1].float(), -1)


def evaluate(target, tok, draft, n_prompts: int = 16, max_new: int = 64, ks=(2, 4, 6, 8), log=print,
             train_records=()) -> dict:
    """The model card's figures, on held-out prompts never used in training (train_records: greedy
    training answers, for the teacher-forced agreement the draft reaches on what it was trained on)."""
    import statistics

    from .drafters import ModelDrafter
    from .eagle import FeatureDrafter
    from .greedy import greedy_steps
    from .measure import forward_ms
    from .speculative import speculative_steps
    from .step import run_steps

    feature = getattr(draft, "reads_target_features", False)
    drafter = (lambda: FeatureDrafter(draft)) if feature else (lambda: ModelDrafter(draft))
    plist = held_out_prompts()
    # spread over subjects AND task templates (a stride of len(TASKS) + 1 walks both)
    plist = [plist[(i * (len(TASKS) + 1)) % len(plist)] for i in range(n_prompts)]
    ids_list = [chat_ids(tok, p) for p in plist]
    out = {"prompts": len(plist), "max_new_tokens": max_new}
    # greedy acceptance and mean acceptance length per K
    for k in ks:
        acc = dec = toks = passes = 0
        reached, accepted = [0] * k, [0] * k
        for ids in ids_list:
            _, r = run_steps(speculative_steps(target, drafter(), tok, ids, max_new, k))
            acc, dec = acc + r.counters.accepted, dec + r.counters.decided
            toks, passes = toks + len(r.token_ids), passes + r.counters.target_passes
            for i, (n_r, n_a) in enumerate(zip(r.counters.reached_at, r.counters.accepted_at)):
                reached[i], accepted[i] = reached[i] + n_r, accepted[i] + n_a
        # acceptance by draft position: P(position i accepted | positions before it were)
        out[f"K={k}"] = {"greedy_acceptance": acc / dec, "mean_acceptance_length": toks / passes,
                         "by_position": [round(a / n, 3) if n else None for a, n in zip(accepted, reached)]}
        log(f"  K={k}: acceptance {acc / dec:.3f}, tokens/pass {toks / passes:.2f}")
    # sampling acceptance at T = 1: mean over positions of sum_x min(p, q) = 1 - TV(p, q); and top-1
    # agreement teacher-forced on the target's greedy answers, held-out here, training answers below:
    # the gap between the two says how much of what the draft learned was memorised
    def agreement(pairs):  # top-1 agreement over all positions of all (p, q) pairs
        same = [(p.argmax(-1) == q.argmax(-1)).float() for p, q in pairs]
        return float(torch.cat(same).mean())

    held_out = []
    for ids in ids_list:
        _, r = run_steps(greedy_steps(target, tok, ids, max_new))
        held_out.append(teacher_forced(target, draft, ids + r.token_ids, len(r.token_ids)))
    overlaps = torch.cat([torch.minimum(p, q).sum(-1) for p, q in held_out]).tolist()
    out["teacher_forced_agreement_held_out"] = agreement(held_out)
    if train_records:
        answers = [(r["ids"][:r["start"] + max_new], len(r["ids"][r["start"]:r["start"] + max_new]))
                   for r in train_records]
        out["teacher_forced_agreement_train"] = agreement([teacher_forced(target, draft, s, n) for s, n in answers])
    out["sampling_acceptance_T1"] = sum(overlaps) / len(overlaps)
    ctx = ids_list[0]
    t1, d1 = forward_ms(target, ctx, 1), forward_ms(draft, ctx, 1)
    out["target_ms"], out["draft_ms"], out["c"] = t1, d1, d1 / t1
    # wall clock: our speculative greedy at each K vs our plain greedy, interleaved per prompt, median of 2
    plain_t, spec_t, same = [], {k: [] for k in ks}, True
    for ids in ids_list:
        tp, ts = [], {k: [] for k in ks}
        for _ in range(2):
            t = time.perf_counter()
            _, rp = run_steps(greedy_steps(target, tok, ids, max_new))
            tp.append(time.perf_counter() - t)
            for k in ks:
                t = time.perf_counter()
                _, rs = run_steps(speculative_steps(target, drafter(), tok, ids, max_new, k))
                ts[k].append(time.perf_counter() - t)
                same &= rs.token_ids == rp.token_ids
        plain_t.append(statistics.median(tp))
        for k in ks:
            spec_t[k].append(statistics.median(ts[k]))
    for k in ks:
        out[f"K={k}"]["speedup"] = sum(plain_t) / sum(spec_t[k])
    best = max(ks, key=lambda k: out[f"K={k}"]["speedup"])
    out["speedup_K"], out["speedup"], out["identical"] = best, out[f"K={best}"]["speedup"], same
    log(f"  teacher-forced agreement held-out {out['teacher_forced_agreement_held_out']:.3f}, training "
        f"{out.get('teacher_forced_agreement_train', float('nan')):.3f}")
    log(f"  sampling acceptance {out['sampling_acceptance_T1']:.3f}; c = {out['c']:.3f}; speedup "
        + ", ".join(f"K={k} {out[f'K={k}']['speedup']:.2f}x" for k in ks) + f" (identical: {same})")
    return out


def eval_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz.distill eval")
    ap.add_argument("--draft", default=str(REPO_ROOT / "models" / "draft"))
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--early-exit", type=int, default=0, help="evaluate the untrained first-L-layers drafter instead")
    ap.add_argument("--json", default=None)
    ap.add_argument("--data", default=str(REPO_ROOT / "models" / "work" / "data.pt"),
                    help="training data cache: its greedy answers give the training-side agreement (if present)")
    ap.add_argument("--ks", default="2,4,6,8")
    a = ap.parse_args(argv)
    from . import eagle
    from .drafters import early_exit_model, load_shipped_draft

    target, tok = load_target()
    path = pathlib.Path(a.draft)
    if a.early_exit:
        draft = early_exit_model(target, a.early_exit)
    elif eagle.is_feature_draft(path):
        draft = eagle.load(target, path)
    else:
        draft = load_shipped_draft(target, path)
    data = pathlib.Path(a.data)
    train = [r for r in torch.load(data, weights_only=False) if r.get("temperature") == 0.0][:a.prompts] \
        if data.is_file() else []
    res = evaluate(target, tok, draft, a.prompts, a.max_new_tokens, tuple(int(k) for k in a.ks.split(",")),
                   train_records=train)
    res["date"] = time.strftime("%Y-%m-%d")
    res["drafter"] = f"early exit L={a.early_exit}" if a.early_exit else a.draft
    print(json.dumps(res, indent=1))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["eval"]:
        raise SystemExit(eval_main(sys.argv[2:]))
    raise SystemExit(main())
