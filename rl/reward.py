"""The DARLING reward: quality x normalised diversity (paper Eq. 4-6), as plain functions.

- Diversity of response i in a group of n (Eq. 4): Div(i) = (n - |class(i)|) / (n - 1), the fraction of
  the other responses that are in a different class. It already lies in [0, 1]; Norm() (Eq. 5) maps it to
  [0, 1] and is the identity here (``norm="identity"``) unless ``norm="minmax"`` rescales within the group.
- Correct-only (math): only correct responses are partitioned; incorrect ones get the floor diversity. A
  response with no other included response to compare with (a lone correct answer) has diversity 1.
- No silent floor: the reference code floored diversity at 0.1, which is not in the paper. ``floor`` is an
  explicit option, 0 by default.
- Reward (Eq. 5): quality x Norm(Div) (``combine="multiply"``); ``"add"`` and ``"quality"`` for ablations.
- Advantage (Eq. 6): r - mean over the group, without dividing by the group's std.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

COMBINES = ("multiply", "add", "quality")
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
class DarlingConfig:
    combine: str = "multiply"  # multiply (paper) | add | quality (GRPO baseline: diversity ignored)
    norm: str = "identity"  # identity | minmax
    correct_only: bool = False  # partition only responses with quality > 0; the others get ``floor``
    floor: float = 0.0  # lower bound on normalised diversity (the reference's hidden 0.1); off by default
    diversity_weight: float = 1.0  # for combine="add": r = q + w * div

    def __post_init__(self):
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if not 0.0 <= self.floor <= 1.0:
            raise ValueError(f"floor must be in [0, 1], got {self.floor}")


def group_diversity(classes: Sequence[int], included: Sequence[bool], config: DarlingConfig) -> list[float]:
    """Normalised diversity of one group; ``classes`` are over the included responses only, in order."""
    n_included = sum(included)
    if len(classes) != n_included:
        raise ValueError(f"{len(classes)} class labels for {n_included} included responses")
    div = normalise(diversity(classes), config.norm)
    it = iter(div)
    return [max(config.floor, next(it)) if inc else config.floor for inc in included]


def combine(quality: Sequence[float], div: Sequence[float], config: DarlingConfig) -> list[float]:
    if config.combine == "multiply":
        return [q * d for q, d in zip(quality, div, strict=True)]
    if config.combine == "add":
        return [q + config.diversity_weight * d for q, d in zip(quality, div, strict=True)]
    return [float(q) for q in quality]


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """Eq. 6: r_i - mean(r) within the group, no std division."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]
