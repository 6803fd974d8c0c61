"""The DARLING reward: quality x normalised diversity (paper Eq. 4-6), as plain functions.

- Diversity of response i in a group of n (Eq. 4): Div(i) = (n - |class(i)|) / (n - 1), the fraction of
  the other responses that are in a different class. It already lies in [0, 1]; Norm() (Eq. 5) maps it to
  [0, 1] and is the identity here (``norm="identity"``) unless ``norm="minmax"`` rescales within the group.
- Correct-only (math): only correct responses are partitioned; incorrect ones get the floor diversity. A
  response with no other included response to compare with (a lone correct answer) has diversity 1.
- No silent floor: the reference code floored diversity at 0.1, which is not in the paper. ``floor`` is an
  explicit option, 0 by default.
- Reward (Eq. 5): quality x Norm(Div) (``combine="multiply"``); ``"add"`` and ``"quality"`` for ablations, and
  ``"passk"``: no diversity, the pass@k advantage of quality (``darling.rl.passk``, k = ``passk_k``) as the reward.
- Advantage (Eq. 6): r - mean over the group, without dividing by the group's std.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from darling.rl.passk import passk_advantages

COMBINES = ("multiply", "add", "quality", "passk")
PARTITIONED = ("multiply", "add")  # the combines that read a partition
NORMS = ("identity", "minmax")


def diversity(classes: Sequence[int]) -> list[float]:
    """Eq. 4 for one group: (n - |class(i)|) / (n - 1).

    A group of one (a lone response, or the one correct answer under ``correct_only``) has no other response
    to share a class with, so it is maximally distinct among them: 1. Scoring it 0 would give the only correct
    answer of a hard problem what the wrong answers get, and its group no advantage at all."""
    n = len(classes)
    if n == 1:
        return [1.0]
    sizes = Counter(classes)
    return [(n - sizes[c]) / (n - 1) for c in classes]


def normalise(values: Sequence[float], norm: str = "identity") -> list[float]:
    if norm == "identity":
        return [float(v) for v in values]
    if norm == "minmax":
        # With no spread there is nothing to rescale: the values stay as Eq. 4 gave them (a group whose
        # responses all differ keeps 1, not 0).
        lo, hi = min(values, default=0.0), max(values, default=0.0)
        return [float(v) if hi == lo else (v - lo) / (hi - lo) for v in values]
    raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")


@dataclass(frozen=True)
class RewardConfig:
    combine: str = "multiply"  # multiply (paper) | add | quality (GRPO baseline: diversity ignored) | passk
    # Each setting's default and help are written here once; rl-train's flags of the same names derive from them
    # (darling.core.config.option_from). floor is off by default: the reference's hidden 0.1 is not in the paper.
    norm: str = field(
        default="identity", metadata={"help": "Norm() of Eq. 5: identity, or minmax (rescaled within each group)."}
    )
    correct_only: bool = field(
        default=False,
        metadata={"help": "Partition only correct responses (math variant; needs --floor > 0, see floor)."},
    )
    floor: float = field(
        default=0.0,
        metadata={
            "help": "Lower bound on diversity: a correct answer in a class with every other correct one still "
            "scores floor x quality, above a wrong one (the official math runs: 0.1); 0 = off."
        },
    )
    passk_k: int = field(default=4, metadata={"help": "passk: the k of pass@k (at most num_generations)."})

    def __post_init__(self):
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")
        if self.passk_k < 1:
            raise ValueError(f"passk_k must be >= 1, got {self.passk_k}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if not 0.0 <= self.floor <= 1.0:
            raise ValueError(f"floor must be in [0, 1], got {self.floor}")

    def check_learning_signal(self) -> None:
        """Refuse settings whose reward cannot teach (both entry points call it before training; the GRPO baseline
        only measures what such a reward would do, so its term may hold them)."""
        if self.correct_only and self.floor == 0 and self.combine in PARTITIONED:
            # Every correct answer of a group in one class would score 0, as the wrong ones do: the group would
            # teach nothing about correctness (7 correct of one strategy + 1 wrong: all rewards 0).
            raise ValueError(
                "correct_only with floor 0: when a group's correct answers all share one class they score 0, like "
                "its wrong answers, and the group teaches nothing; set floor > 0 (the official math runs: 0.1)"
            )


def group_diversity(classes: Sequence[int], included: Sequence[bool], config: RewardConfig) -> list[float]:
    """Normalised diversity of one group; ``classes`` are over the included responses only, in order."""
    n_included = sum(included)
    if len(classes) != n_included:
        raise ValueError(f"{len(classes)} class labels for {n_included} included responses")
    div = normalise(diversity(classes), config.norm)
    it = iter(div)
    return [max(config.floor, next(it)) if inc else config.floor for inc in included]


def combine(quality: Sequence[float], div: Sequence[float], config: RewardConfig) -> list[float]:
    if config.combine == "multiply":
        return [q * d for q, d in zip(quality, div, strict=True)]
    if config.combine == "add":
        return [q + d for q, d in zip(quality, div, strict=True)]  # the paper's additive ablation
    if config.combine == "passk":  # zero-mean per group: centring (Eq. 6) leaves these advantages as they are
        return passk_advantages([float(q) for q in quality], config.passk_k)
    return [float(q) for q in quality]


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """Eq. 6: r_i - mean(r) within the group, no std division."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


SCALES = ("none", "group", "batch")  # TRL's scale_rewards: how batch_advantages divides, and rl-train's choices


def _std(values: Sequence[float]) -> float:
    """Unbiased std (TRL's ``nanstd``); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def batch_advantages(rewards: Sequence[Sequence[float]], scale: str = "none") -> list[list[float]]:
    """The advantages TRL's GRPOTrainer gives a batch of groups (``scale_rewards``): r - the group's mean (none,
    Eq. 6), divided by the group's std + 1e-4 (group) or the batch's (batch), as in its
    ``_generate_and_score_completions``. In a multi-process run TRL's batch std spans every process: here, this
    batch's."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    batch_std = _std([r for group in rewards for r in group])
    out = []
    for group in rewards:
        centred = group_advantages(group)
        std = {"none": None, "group": _std(group), "batch": batch_std}[scale]
        out.append(centred if std is None else [a / (std + 1e-4) for a in centred])
    return out


@dataclass(frozen=True)
class TermEffect:
    """What the diversity term did to a batch's advantages, against quality alone (the GRPO baseline's rewards),
    both as the trainer computes advantages. A group is *changed* when any of its advantages moved by more than
    ``CHANGED``: a group whose responses are all in different classes has diversity 1 everywhere, so under
    ``multiply`` its rewards are its qualities and the term does nothing there."""

    groups: int
    changed: int  # groups whose advantages the term changed
    all_distinct: int  # groups whose responses fell into as many classes as there are responses
    mean_abs_change: float  # mean |A(quality x diversity) - A(quality)| over every response
    mean_abs_quality_advantage: float  # mean |A(quality)|: the scale the change is to be read against

    CHANGED: ClassVar[float] = 1e-6

    @property
    def share_changed(self) -> float:
        return self.changed / self.groups if self.groups else 0.0


def term_effect(
    quality: Sequence[Sequence[float]],
    rewards: Sequence[Sequence[float]],
    classes: Sequence[Sequence[int]],
    scale: str = "none",
) -> TermEffect:
    """The diversity term's effect on a batch: ``rewards`` (with the term) against ``quality`` (without)."""
    with_term, without = batch_advantages(rewards, scale), batch_advantages(quality, scale)
    changes = [[abs(a - b) for a, b in zip(x, y, strict=True)] for x, y in zip(with_term, without, strict=True)]
    responses = sum(len(g) for g in changes) or 1
    return TermEffect(
        groups=len(changes),
        changed=sum(1 for g in changes if max(g, default=0.0) > TermEffect.CHANGED),
        all_distinct=sum(1 for c, q in zip(classes, quality, strict=True) if len(set(c)) == len(q)),
        mean_abs_change=sum(sum(g) for g in changes) / responses,
        mean_abs_quality_advantage=sum(abs(a) for g in without for a in g) / responses,
    )
