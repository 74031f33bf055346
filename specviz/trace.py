"""Trace events: the contract between the engine and everything that draws it.

Plain frozen dataclasses holding exactly what a viewer needs. The engine yields one per visible step;
the figure builders and pages read them and nothing else. A run's result is built from its trace, so
replaying a trace gives the same tokens as the run (tested).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TokenProb:
    id: int
    text: str
    prob: float


# ---------------------------------------------------------------- greedy / sampling
@dataclass(frozen=True)
class TokenStep:
    step: int
    token: int
    text: str
    logprob: float  # log p(token) under the processed distribution
    top: tuple[TokenProb, ...]  # the processed distribution's top candidates


# ---------------------------------------------------------------- beam search
@dataclass(frozen=True)
class BeamCandidate:
    parent: int  # index of the beam it extends (in the previous step's beams)
    token: int
    text: str
    logprob: float  # log p(token | beam)
    score: float  # cumulative log-prob of the beam extended by this token
    status: str  # "kept" | "finished" | "pruned"
    rank: int  # rank among all candidates of this step (0 best); -1 when only shown, never ranked
    child: int = -1  # index among the new beams when kept


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]
    text: str
    logprob: float  # sum of token log-probs
    score: float  # logprob / length ** length_penalty, what ranks finished hypotheses


@dataclass(frozen=True)
class BeamStep:
    step: int
    beams_before: tuple[Hypothesis, ...]  # running beams that were expanded
    candidates: tuple[BeamCandidate, ...]
    beams_after: tuple[Hypothesis, ...]  # running beams after the prune back to B
    finished: tuple[Hypothesis, ...]  # the best finished hypotheses so far (at most B), best first
    stopped: str = ""  # why the search ended at this step ("" while it goes on)


# ---------------------------------------------------------------- speculative decoding
@dataclass(frozen=True)
class DraftToken:
    position: int  # 0-based position within the cycle's proposal
    token: int
    text: str
    q: float  # q(token): the draft's processed probability of what it proposed
    q_top: tuple[TokenProb, ...]


@dataclass(frozen=True)
class Verdict:
    position: int
    token: int
    text: str
    p: float  # target's processed probability of the drafted token
    q: float
    accept_prob: float  # min(1, p/q) when sampling; 1 or 0 for greedy match
    u: float | None  # the uniform draw (None in greedy verification)
    accepted: bool
    p_top: tuple[TokenProb, ...]
    q_top: tuple[TokenProb, ...]
    target_choice: int = -1  # greedy verification: the target's argmax here


@dataclass(frozen=True)
class CacheState:
    before: int  # tokens in the cache after the forward that filled it
    after: int  # tokens kept after the rollback (crop)


@dataclass(frozen=True)
class Cycle:
    cycle: int
    context_len: int  # tokens (prompt + output) before this cycle
    k: int  # drafts proposed this cycle (may be < asked near the end or when n-gram finds nothing)
    drafts: tuple[DraftToken, ...]
    verify_positions: int  # positions the target scored in its one forward pass (k + 1)
    verdicts: tuple[Verdict, ...]  # up to and including the first rejection (or an accepted EOS)
    accepted: int  # drafted tokens accepted
    new_token: int | None  # correction (greedy), resampled (rejection) or bonus; None after an accepted EOS
    new_text: str
    new_origin: str  # "bonus" | "resampled" | "correction" | "target" (nothing drafted) | "none" (EOS accepted)
    residual_top: tuple[TokenProb, ...]  # normalize(max(0, p - q)) at the rejected position
    residual_fallback: bool  # residual was all zero (p == q): drew from p instead
    target_cache: CacheState
    draft_cache: CacheState | None  # None for drafters without a cache (n-gram)
    emitted: tuple[int, ...]  # tokens appended to the output this cycle, in order
    origins: tuple[str, ...]  # "accepted" | "resampled" | "correction" | "bonus" | "target", one per emitted
    verify_mode: str  # "greedy" | "sampling"
    draft_passes: int  # the drafter's forward passes this cycle (0 for n-gram lookup)
    prefill: int = 0  # target passes before this cycle: 1 on a feature drafter's first (the prompt's states)
    # what the ONE verify pass computed at each of its k + 1 positions (filled by the engine; () in old traces):
    target_top: tuple[TokenProb, ...] = ()  # the target's own most likely token there, with its probability
    p_draft: tuple[float, ...] = ()  # p(draft token) at each of the k draft positions
    new_p: float | None = None  # p(new_token) under the target where it was emitted (None: no new token)
    k_asked: int = 0  # the K this cycle asked the drafter for (dynamic K: this cycle's value)
    k_room: int = 0  # the most drafts the token budget allowed (every cycle adds one target token after them)
    # sum over the WHOLE vocabulary of max(0, p - q) at the rejected position (= TV(p, q)): the residual's mass
    # before normalising (None: nothing rejected under sampling); block verification: of max(0, p_tau p - q)
    residual_mass: float | None = None
    acceptance: str = "token"  # the sampling rule asked for: "token" (one by one) or "block" (jointly, Sun et al.)
    # block verification only (() otherwise), one per draft position i = 1..k (engine.speculative.block_odds): the
    # clipped running ratio p_i and the weight h_i it was judged with, and P(draft i kept | these drafts), over the
    # uniform draws, under token-wise verification and under block verification: what block keeps that token-wise
    # would not. Their sums are the drafts each rule keeps in expectation, given the drafts.
    block_ratio: tuple[float, ...] = ()
    block_weight: tuple[float, ...] = ()
    kept_token: tuple[float, ...] = ()
    kept_block: tuple[float, ...] = ()
    tokenwise_kept: int | None = None  # drafts token-wise verification keeps with the same uniforms (block only)


# ---------------------------------------------------------------- results
@dataclass
class Counters:
    """What a run cost and how often drafts were accepted. Speculative runs fill it with record(cycle), the
    one place per-position acceptance is counted; runs over many prompts add their Counters up."""
    target_passes: int = 0  # every target forward: verify passes + prefill passes (plain decoding: one per token)
    prefill_passes: int = 0  # a feature drafter's pass over the prompt before its first draft
    draft_passes: int = 0
    drafted: int = 0  # draft tokens proposed
    decided: int = 0  # draft tokens the verifier ruled on (up to the first rejection)
    accepted: int = 0
    tokens: int = 0  # new tokens emitted
    accepted_per_pass: list[int] = field(default_factory=list)  # drafts accepted in each verify pass
    reached_at: list[int] = field(default_factory=list)  # per draft position: times ruled on
    accepted_at: list[int] = field(default_factory=list)  # per draft position: times accepted

    def record(self, cycle: "Cycle") -> None:
        self.target_passes += 1 + cycle.prefill
        self.prefill_passes += cycle.prefill
        self.draft_passes += cycle.draft_passes
        self.drafted += cycle.k
        self.decided += len(cycle.verdicts)
        self.accepted += cycle.accepted
        self.tokens += len(cycle.emitted)
        self.accepted_per_pass.append(cycle.accepted)
        self.reached_at += [0] * (len(cycle.verdicts) - len(self.reached_at))
        self.accepted_at += [0] * (len(cycle.verdicts) - len(self.accepted_at))
        for v in cycle.verdicts:
            self.reached_at[v.position] += 1
            self.accepted_at[v.position] += int(v.accepted)

    def __add__(self, other: "Counters") -> "Counters":
        def add(a, b):
            return [x + y for x, y in zip(a + [0] * (len(b) - len(a)), b + [0] * (len(a) - len(b)))]
        return Counters(self.target_passes + other.target_passes, self.prefill_passes + other.prefill_passes,
                        self.draft_passes + other.draft_passes, self.drafted + other.drafted,
                        self.decided + other.decided, self.accepted + other.accepted, self.tokens + other.tokens,
                        self.accepted_per_pass + other.accepted_per_pass, add(self.reached_at, other.reached_at),
                        add(self.accepted_at, other.accepted_at))

    @classmethod
    def of(cls, cycles) -> "Counters":
        c = cls()
        for cycle in cycles:
            c.record(cycle)
        return c

    @property
    def verify_passes(self) -> int:
        return self.target_passes - self.prefill_passes

    @property
    def acceptance_rate(self) -> float:
        """Per drafted token the verifier ruled on: accepted / decided (the paper's alpha estimate). vLLM's
        "draft acceptance rate" divides by every proposed token instead: accepted / drafted."""
        return self.accepted / self.decided if self.decided else 0.0

    @property
    def draft_acceptance_rate(self) -> float:
        """Per proposed token: accepted / drafted, vLLM's "draft acceptance rate". Drafts after the first rejection
        are never ruled on, so at a large K this is far below acceptance_rate."""
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_target_pass(self) -> float:
        """Tokens per target forward of any kind, a feature drafter's prefill pass included (the CLI's and the
        drafts' evaluation figure; mean_acceptance_length leaves the prefill out)."""
        return self.tokens / self.target_passes if self.target_passes else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens per verify pass, INCLUDING the correction/bonus token each pass adds (a feature drafter's
        prefill pass over the prompt is not a verify pass: target_passes counts it)."""
        return self.tokens / self.verify_passes if self.verify_passes else 0.0

    def per_position(self) -> list[float | None]:
        """P(draft position i accepted | it was reached), None where never reached."""
        return [a / r if r else None for a, r in zip(self.accepted_at, self.reached_at)]


@dataclass
class Result:
    method: str
    prompt_ids: list[int]
    token_ids: list[int]  # new tokens only
    text: str
    counters: Counters
    score: float | None = None  # beam: the length-penalized score that ranked it
    logprob: float | None = None  # sum of log-probs of token_ids (greedy/beam)
    finished: list[Hypothesis] = field(default_factory=list)

    def as_dict(self) -> dict:
        c = self.counters
        return {
            "method": self.method,
            "token_ids": self.token_ids,
            "text": self.text,
            "score": self.score,
            "logprob": self.logprob,
            "target_passes": c.target_passes,
            "draft_passes": c.draft_passes,
            "accepted_per_pass": c.accepted_per_pass,
            "prefill_passes": c.prefill_passes,
            "mean_acceptance_length": c.mean_acceptance_length,
            "acceptance_rate": c.acceptance_rate,
            "draft_acceptance_rate": c.draft_acceptance_rate,
            "acceptance_by_position": c.per_position(),
        }


# ---------------------------------------------------------------- tree speculation (specviz/engine/tree.py)
@dataclass(frozen=True)
class TreeNode:
    index: int  # its row in the flattened tree (parents come first)
    token: int
    text: str
    parent: int  # -1: a child of the root (the context's last token)
    depth: int  # 1 = the first drafted position
    position_id: int  # context length + depth - 1: siblings share it
    q: float  # the draft's probability of this token given its parent (its confidence)
    p: float  # the target's processed probability of it given its root-to-node path
    verdict: str  # "accepted" | "rejected" | "not reached"
    accept_prob: float | None  # min(1, p/q) against the residual current when it was tried; 1/0 greedy
    u: float | None  # the uniform draw (sampling)


@dataclass(frozen=True)
class DepthVerdict:
    """One per depth the walk reached: what Counters.record counts per position, as for a chain."""
    position: int  # depth - 1
    accepted: bool


@dataclass(frozen=True)
class TreeCycle:
    cycle: int
    context_len: int  # tokens before this cycle; the root is the last of them
    drafter: str
    nodes: tuple[TreeNode, ...]
    # (n, n): node i attends to node j (its ancestors and itself); all see the context
    mask: tuple[tuple[bool, ...], ...]
    position_ids: tuple[int, ...]  # one per node
    verify_positions: int  # rows the ONE target pass computed: the pending context (>= the root) + every node
    path: tuple[int, ...]  # accepted nodes, root's child first
    accepted: int  # len(path)
    new_token: int | None  # correction / resampled / bonus after the path; None after an accepted EOS
    new_text: str
    new_origin: str
    residual_top: tuple[TokenProb, ...]  # the final residual's top tokens when every child was rejected (sampling)
    residual_fallback: bool
    target_cache: CacheState  # before: after the verify pass (context + every node); after: context + path
    draft_cache: CacheState | None
    emitted: tuple[int, ...]
    origins: tuple[str, ...]
    verify_mode: str
    draft_passes: int
    verdicts: tuple[DepthVerdict, ...]  # per depth reached (for Counters: accepted / reached per position)
    prefill: int = 0

    @property
    def k(self) -> int:
        """Drafted tokens this cycle: every node of the tree (Counters.drafted)."""
        return len(self.nodes)


# ---------------------------------------------------------------- lookahead decoding (specviz/engine/lookahead.py)
@dataclass(frozen=True)
class LookaheadStep:
    step: int
    context_len: int  # tokens before this step; the root is the last of them
    root: int  # the last accepted token: the candidates must start right after it
    levels: tuple[tuple[int, ...], ...]  # the 2-D window fed this step, oldest level first, W tokens each
    outputs: tuple[int, ...]  # the target's argmax after each column of the newest level: the next level
    new_ngrams: tuple[tuple[int, ...], ...]  # one per column once the window has N - 1 levels
    fresh: tuple[bool, ...]  # per n-gram: not in the pool before this step
    added: int  # how many were fresh
    pool_size: int  # n-grams in the pool after this step
    candidates: tuple[tuple[int, ...], ...]  # the verification branch: pool n-grams following the root (N - 1 tokens)
    matched: tuple[int, ...]  # per candidate: leading tokens the target agreed with
    best: int  # the candidate accepted (-1: none matched, the step gives the target's one token)
    emitted: tuple[int, ...]
    texts: dict  # token id -> text, for every token above
    verify_positions: int  # rows of the ONE forward (pending context + window + candidates)
    position_ids: tuple[int, ...]  # root, window (level by level), candidates
    allowed: tuple[tuple[bool, ...], ...]  # the same rows x the same rows: who attends to whom (all see the context)
    target_cache: CacheState


@dataclass(frozen=True)
class JacobiStep:
    step: int
    context_len: int
    guesses: tuple[int, ...]  # W guesses for the next W positions
    outputs: tuple[int, ...]  # W + 1: the target's argmax after the context and guesses[:j]
    converged: int  # leading guesses equal to the output (exact)
    emitted: tuple[int, ...]  # the converged guesses + the target's next token
    texts: dict
    target_cache: CacheState


# ---------------------------------------------------------------- a cycle's timeline (specviz/labs/timeline.py)
STAGES = ("prefill", "draft", "verify", "accept", "rollback", "overhead")
LABELS = {"prefill": "target prefill (states for the draft)", "draft": "draft forwards",
          "verify": "target forward (verify)", "accept": "acceptance rule", "rollback": "cache rollback",
          "overhead": "overhead (trace, commit, counters)"}


@dataclass(frozen=True)
class Span:
    cycle: int
    stage: str
    start_ms: float  # from the start of the run
    end_ms: float

    @property
    def ms(self) -> float:
        return self.end_ms - self.start_ms


@dataclass
class Lane:
    """One method's run: its spans, tokens per cycle, and what it produced."""
    name: str
    spans: list[Span]
    emitted: list[int]  # tokens committed by each cycle
    positions: list[int]  # positions the target scored in each cycle's forward (1 for plain greedy)
    tokens: list[int] = field(default_factory=list)

    @property
    def total_ms(self) -> float:
        return self.spans[-1].end_ms if self.spans else 0.0

    def stage_ms(self, stage: str) -> float:
        return sum(s.ms for s in self.spans if s.stage == stage)

    def forward_ms(self) -> float:
        """Median ms of this lane's target forward (verify) spans."""
        verify = [s.ms for s in self.spans if s.stage == "verify"]
        return statistics.median(verify) if verify else float("nan")

    def forward_quartiles(self) -> tuple[float, float]:
        """25th and 75th percentile ms of the target forwards: the spread a single median hides."""
        verify = [s.ms for s in self.spans if s.stage == "verify"]
        if len(verify) < 2:
            return (verify[0], verify[0]) if verify else (float("nan"), float("nan"))
        q = statistics.quantiles(verify, n=4)
        return q[0], q[2]
