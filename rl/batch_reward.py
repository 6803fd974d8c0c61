"""The DARLING reward of a whole RL batch: partition every group with one pair scorer, combine with quality.

The scorer is a classifier of either kind from ``darling.classifier.load_scorer`` (in-process or served by
vLLM), or any ``is_equivalent(list[(a, b)]) -> bools``. A bi-encoder embeds every response of the batch in
one call; a cross-encoder gets all pairs of a round, across every group of the batch, in one call. Either
way the served scorer sends a few large requests spread over its replicas instead of one request per pair.
If the scorer cannot decide (a server down after its retries), its error propagates: a missing decision
never becomes a reward.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from darling.classifier.partition import PartitionStats, Scorer, partition_texts
from darling.core.math_grading import extract_final_answer, is_correct
from darling.rl.reward import (
    PARTITIONED,
    RewardConfig,
    TermEffect,
    batch_advantages,
    combine,
    group_diversity,
    term_effect,
)


@dataclass(frozen=True)
class BatchReward:
    rewards: list[list[float]]  # per group, per response
    quality: list[list[float]]
    diversity: list[list[float]]  # normalised (and floored, if asked) diversity
    classes: list[list[int]]  # class label per included response (all responses unless correct_only)
    stats: PartitionStats
    seconds: float
    advantages: list[list[float]] = field(default_factory=list)  # as the trainer computes them (its scale_rewards)
    # The diversity term's effect on the advantages, against quality alone: the term the reward applied, or, for the
    # GRPO baseline with a classifier, the one DARLING would have applied (``term_applied`` False). None: no partition.
    effect: TermEffect | None = None
    term_applied: bool = True

    @property
    def distinct(self) -> list[int]:
        """Distinct classes per group (NoveltyBench's ``distinct``)."""
        return [len(set(c)) for c in self.classes]

    @property
    def groups_without_signal(self) -> int:
        """Groups whose responses differ in quality but all got the same reward: the reward cannot tell the better
        ones apart (e.g. every response in one class with floor 0, so all rewards are 0). Logged every step."""
        return sum(
            1 for q, r in zip(self.quality, self.rewards, strict=True) if len(set(q)) > 1 and max(r) - min(r) < 1e-12
        )


def darling_rewards(
    groups: Sequence[Sequence[str]],
    quality: Sequence[Sequence[float]],
    scorer: Scorer | None,
    config: RewardConfig | None = None,
    scale: str = "none",
    term: RewardConfig | None = None,
    prompts: Sequence[str] | None = None,
) -> BatchReward:
    """Rewards for ``groups`` of responses (one group per prompt) given their ``quality`` scores. ``scale``: the
    trainer's advantage scaling (``scale_rewards``), for the advantages and the term's effect. ``term``: for a
    reward that applies no diversity (``combine="quality"``, the GRPO baseline), the DARLING reward whose effect is
    measured (default ``multiply``). ``prompts``: each group's prompt, which a checker's partition reads."""
    config = config or RewardConfig()
    if len(groups) != len(quality) or any(len(g) != len(q) for g, q in zip(groups, quality, strict=True)):
        raise ValueError("groups and quality must have the same shape")
    start = time.perf_counter()
    included = [[(q > 0) if config.correct_only else True for q in qs] for qs in quality]
    if config.combine not in PARTITIONED and scorer is None:  # no partition in the reward, none measured
        classes = [list(range(sum(inc))) for inc in included]
        stats = PartitionStats(0, 0, 0)
    else:  # (a reward without diversity, with a scorer: partitioned only to measure distinct)
        if scorer is None:
            raise ValueError(f"combine={config.combine!r} needs a pair scorer")
        kept = [[t for t, inc in zip(g, incs, strict=True) if inc] for g, incs in zip(groups, included, strict=True)]
        classes, stats = partition_texts(kept, scorer, prompts=prompts)
    div = [group_diversity(c, inc, config) for c, inc in zip(classes, included, strict=True)]
    rewards = [combine(q, d, config) for q, d in zip(quality, div, strict=True)]
    applied = config.combine != "quality"
    effect = None
    if applied or scorer is not None:
        measured = (
            rewards
            if applied
            else [combine(q, d, term or replace(config, combine="multiply")) for q, d in zip(quality, div, strict=True)]
        )
        effect = term_effect(quality, measured, classes, scale)
    return BatchReward(
        rewards=rewards,
        quality=[[float(x) for x in q] for q in quality],
        diversity=div,
        classes=classes,
        stats=stats,
        seconds=time.perf_counter() - start,
        advantages=batch_advantages(rewards, scale),
        effect=effect,
        term_applied=applied,
    )


def math_quality(completions: Sequence[str], answers: Sequence[str | None]) -> list[float]:
    """1.0 when math-verify finds the reference answer in the completion, else 0.0 (no reference: 0.0)."""

    return [
        1.0 if answer is not None and is_correct(answer, text, extract_final_answer(text)) else 0.0
        for text, answer in zip(completions, answers, strict=True)
    ]
