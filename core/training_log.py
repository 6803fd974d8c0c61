"""The metrics ``rl-train`` adds to TRL's training log (``log_history``), each defined once.

A metric's key is what the TRL reward function logs; ``curve`` names its panel in ``eval compare``'s training
curves, ``step_table`` puts it in the pipeline's per-step records (``stages.json``, the report's step table). The
reward function, the pipeline, ``eval compare``, ``rl-train``'s progress lines and the benches read the keys from
here. It lives in ``core`` because ``rl`` writes the log and ``evals`` reads it, and neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogMetric:
    key: str
    about: str
    curve: str | None = None
    step_table: bool = False


REWARD = LogMetric("darling/reward", "mean reward of the batch's responses (quality x diversity)", curve="reward")
QUALITY = LogMetric("darling/quality", "mean quality of the batch's responses", curve="quality", step_table=True)
DIVERSITY = LogMetric("darling/diversity", "mean diversity (Eq. 4) of the batch's responses", step_table=True)
DISTINCT = LogMetric(
    "darling/distinct_per_group", "classes the classifier found per group", "distinct (classifier)", True
)
DISTINCT_ANSWERS = LogMetric(
    "darling/distinct_answers", "distinct answers per group, no classifier", "distinct answers", True
)
WITHOUT_SIGNAL = LogMetric(
    "darling/groups_without_signal", "groups whose rewards are all equal (no advantage)", step_table=True
)
GROUPS_CHANGED = LogMetric(
    "darling/groups_changed",
    "share of groups whose advantages the diversity term changed (0 for GRPO)",
    "groups the diversity term changed",
    True,
)
WOULD_CHANGE = LogMetric(
    "darling/groups_would_change", "GRPO only: the share DARLING's term would have changed", step_table=True
)
ADVANTAGE_CHANGE = LogMetric(
    "darling/advantage_change", "mean absolute change of the advantages by the term", step_table=True
)
CLASSIFIER_PAIRS = LogMetric("darling/classifier_pairs", "pairs the classifier decided", step_table=True)
PAIRS_SAVED = LogMetric("darling/classifier_pairs_saved", "pairs decided by transitivity, not scored", step_table=True)
TEXTS_EMBEDDED = LogMetric("darling/classifier_texts_embedded", "texts a bi-encoder embedded")
REWARD_SECONDS = LogMetric("darling/reward_seconds", "wall time of the reward function")
QUALITY_ADVANTAGE = LogMetric("darling/quality_advantage", "mean absolute advantage of quality alone")
ALL_DISTINCT = LogMetric("darling/groups_all_distinct", "share of groups whose responses are all distinct")

LOG_METRICS = (
    REWARD,
    QUALITY,
    DIVERSITY,
    DISTINCT,
    DISTINCT_ANSWERS,
    WITHOUT_SIGNAL,
    GROUPS_CHANGED,
    WOULD_CHANGE,
    ADVANTAGE_CHANGE,
    CLASSIFIER_PAIRS,
    PAIRS_SAVED,
    TEXTS_EMBEDDED,
    REWARD_SECONDS,
    QUALITY_ADVANTAGE,
    ALL_DISTINCT,
)
CURVES = {m.key: m.curve for m in LOG_METRICS if m.curve}  # eval compare's panels, in this order
STEP_METRICS = tuple(m.key for m in LOG_METRICS if m.step_table)
