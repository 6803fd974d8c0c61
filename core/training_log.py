"""The metrics ``rl-train`` adds to TRL's training log (``log_history``), each defined once.

A metric's key is what the TRL reward function logs; ``curve`` names its panel in ``eval compare``'s training
curves, ``step_table`` puts it in the pipeline's per-step records (``stages.json``), and ``column`` in the report's
step table (``STEP_COLUMNS``: TRL's reward, ours in this table's order, TRL's loss). The reward function, the
pipeline, ``eval compare``, ``rl-train``'s progress lines and the benches read the keys from here. It lives in
``core`` because ``rl`` writes the log and ``evals`` reads it, and neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LogMetric:
    key: str
    about: str
    curve: str | None = None
    step_table: bool = False
    column: str | None = None  # its header in the report's step table; None: not shown there
    digits: int = 3  # decimals shown there
    percent: bool = False  # shown there as a percentage
    beside: str | None = None  # a key shown in parentheses after it (pairs decided, then those saved)
    stand_in: str | None = None  # a key a run logs instead, shown in parentheses (GRPO's would-be share)

    def cell(self, step: Mapping[str, Any]) -> str:
        """How one step's record shows this metric in the report's step table."""
        if self.stand_in is not None and self.stand_in in step:
            return f"({self._shown(step[self.stand_in])})"
        cell = self._shown(step.get(self.key))
        return cell if self.beside is None else f"{cell} ({self._shown(step.get(self.beside))})"

    def _shown(self, value: Any) -> str:
        from darling.core.numbers import MISSING, fmt, pct  # loads numpy: only when a report renders, not for --help

        if self.percent:
            return MISSING if value is None else f"{pct(value)}%"
        return fmt(value, self.digits)


REWARD = LogMetric("darling/reward", "mean reward of the batch's responses (quality x diversity)", curve="reward")
QUALITY = LogMetric(
    "darling/quality", "mean quality of the batch's responses", "quality", step_table=True, column="quality"
)
DIVERSITY = LogMetric(
    "darling/diversity", "mean diversity (Eq. 4) of the batch's responses", step_table=True, column="diversity"
)
DISTINCT = LogMetric(
    "darling/distinct_per_group",
    "classes the classifier found per group",
    "distinct (classifier)",
    True,
    column="distinct / group",
    digits=2,
)
DISTINCT_ANSWERS = LogMetric(
    "darling/distinct_answers",
    "distinct answers per group, no classifier",
    "distinct answers",
    True,
    column="distinct answers",
    digits=2,
)
DISTINCT_KEYS = LogMetric(
    "darling/distinct_keys",
    "distinct keys per group, read by the run's checker (the members a world or item prompt's answers name; logged "
    "where the checker reads the prompts), no classifier",
    "distinct keys (checker)",
    True,
    column="distinct keys",
    digits=2,
)
WOULD_CHANGE = LogMetric(
    "darling/groups_would_change", "GRPO only: the share DARLING's term would have changed", step_table=True
)
GROUPS_CHANGED = LogMetric(
    "darling/groups_changed",
    "share of groups whose advantages the diversity term changed (0 for GRPO)",
    "groups the diversity term changed",
    True,
    column="groups changed by the term",
    percent=True,
    stand_in=WOULD_CHANGE.key,
)
WITHOUT_SIGNAL = LogMetric(
    "darling/groups_without_signal",
    "groups whose rewards are all equal (no advantage)",
    step_table=True,
    column="groups without signal",
    digits=0,
)
ADVANTAGE_CHANGE = LogMetric(
    "darling/advantage_change", "mean absolute change of the advantages by the term", step_table=True
)
PAIRS_SAVED = LogMetric("darling/classifier_pairs_saved", "pairs decided by transitivity, not scored", step_table=True)
CLASSIFIER_PAIRS = LogMetric(
    "darling/classifier_pairs",
    "pairs the classifier decided",
    step_table=True,
    column="classifier pairs (saved)",
    digits=0,
    beside=PAIRS_SAVED.key,
)
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
    DISTINCT_KEYS,
    GROUPS_CHANGED,
    WITHOUT_SIGNAL,
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

# What TRL logs itself, beside ours: its reward (what the advantages came from), loss and gradient norm.
TRL_REWARD = LogMetric("reward", "TRL's mean reward of the batch", step_table=True, column="reward")
TRL_LOSS = LogMetric("loss", "TRL's loss", step_table=True, column="loss", digits=4)
TRL_GRAD_NORM = LogMetric("grad_norm", "TRL's gradient norm", step_table=True)
TRL_ENTROPY = LogMetric("entropy", "TRL's mean token entropy of the batch's completions")
TRL_ENTROPY_COEF = LogMetric("entropy_coef", "TRL's entropy-bonus coefficient, logged while the bonus is on")
TRL_KEYS = tuple(m.key for m in (TRL_REWARD, TRL_LOSS, TRL_GRAD_NORM, TRL_ENTROPY, TRL_ENTROPY_COEF))
STEP_TABLE = (TRL_REWARD, *LOG_METRICS, TRL_LOSS, TRL_GRAD_NORM)
STEP_METRICS = tuple(m.key for m in STEP_TABLE if m.step_table)  # each step's record in stages.json
STEP_COLUMNS = tuple(m for m in STEP_TABLE if m.column)  # the report's step table, after "step"
