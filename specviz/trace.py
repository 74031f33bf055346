"""Trace events: the contract between the engine and everything that draws it.

Plain frozen dataclasses holding exactly what a viewer needs. The engine yields one per visible step;
the figure builders and pages read them and nothing else. A run's result is built from its trace, so
replaying a trace gives the same tokens as the run (tested).
"""
from __future__ import annotations

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
    verdicts: tuple[Verdict, ...]  # up to and including the first rejection
    accepted: int  # drafted tokens accepted
    new_token: int  # correction (greedy), resampled (rejection) or bonus (all accepted)
    new_text: str
    new_origin: str  # "bonus" | "resampled" | "correction" | "target" (nothing was drafted)
    residual_top: tuple[TokenProb, ...]  # normalize(max(0, p - q)) at the rejected position
    residual_fallback: bool  # residual was all zero (p == q): drew from p instead
    target_cache: CacheState
    draft_cache: CacheState | None  # None for drafters without a cache (n-gram)
    emitted: tuple[int, ...]  # tokens appended to the output this cycle, in order
    origins: tuple[str, ...]  # "accepted" | "resampled" | "correction" | "bonus" | "target", one per emitted
    verify_mode: str  # "greedy" | "sampling"
    prefill: int = 0  # target passes before this cycle: 1 on a feature drafter's first (the prompt's states)


# ---------------------------------------------------------------- results
@dataclass
class Counters:
    target_passes: int = 0
    draft_passes: int = 0
    drafted: int = 0  # draft tokens proposed
    decided: int = 0  # draft tokens the verifier ruled on (up to the first rejection)
    accepted: int = 0
    accepted_per_pass: list[int] = field(default_factory=list)  # drafts accepted in each target pass
    reached_at: list[int] = field(default_factory=list)  # per draft position: times ruled on
    accepted_at: list[int] = field(default_factory=list)  # per draft position: times accepted

    @property
    def acceptance_rate(self) -> float:
        """Per drafted token the verifier ruled on: accepted / decided (the paper's alpha estimate)."""
        return self.accepted / self.decided if self.decided else 0.0

    def mean_acceptance_length(self, new_tokens: int) -> float:
        """Tokens per target pass, INCLUDING the correction/bonus token each pass adds."""
        return new_tokens / self.target_passes if self.target_passes else 0.0

    def per_position(self) -> list[float]:
        return [a / r if r else 0.0 for a, r in zip(self.accepted_at, self.reached_at)]


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
            "mean_acceptance_length": c.mean_acceptance_length(len(self.token_ids)),
            "acceptance_rate": c.acceptance_rate,
            "acceptance_by_position": c.per_position(),
        }
