"""The ways ``rl-train`` can keep a policy diverse, each a named arm (``--method``) sharing every other setting: the
same policy, prompts, seeds, sampling and budget, so arms compare one to one.

An arm is how its reward is made from each response's quality (``combine``, ``darling.rl.reward``), what decides
that two responses are equivalent in it (``partition``: the trained classifier, word n-grams, or nothing), and
whether TRL adds its entropy bonus to the loss. What each arm changed is in the training log: the share of groups
whose advantages differ from GRPO's (``darling/groups_changed``), or for ``entropy`` TRL's own ``entropy`` times the
coefficient.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from darling.core.errors import UserInputError
from darling.core.lexical import NGRAM_RULE as NGRAM

CLASSIFIER = "classifier"  # what partitions a group's responses in the reward: the classifier, or the n-gram rule
CHECKER = "checker"  # ... or a checker's keys (darling.core.checkers): the exact partition, where a task has one


@dataclass(frozen=True)
class Method:
    name: str
    about: str  # one line, for --help and reports
    combine: str  # RewardConfig.combine: multiply | add | quality | passk
    partition: str | None = None  # CLASSIFIER | NGRAM | CHECKER | None: the reward reads no partition
    entropy: bool = False  # TRL's entropy bonus on the loss (entropy_coef > 0)
    fields: tuple[str, ...] = ()  # RLTrainConfig fields only this arm reads (refused, or meaningless, on another)


DARLING = Method("darling", "quality x diversity of the classifier's partition (paper, Eq. 5)", "multiply", CLASSIFIER)
GRPO = Method("grpo", "quality only: the baseline", "quality")
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        DARLING,
        GRPO,
        Method("darling-add", "quality + diversity: the paper's additive ablation", "add", CLASSIFIER),
        Method(
            "darling-ngram",
            "quality x diversity of a word n-gram partition: the paper's lexical ablation, no classifier",
            "multiply",
            NGRAM,
            fields=("ngram_n", "ngram_threshold"),
        ),
        Method(
            "entropy",
            "quality, with TRL's entropy bonus on the loss (entropy_coef)",
            "quality",
            entropy=True,
            fields=("entropy_coef",),
        ),
        Method("passk", "the pass@k advantage of quality (arXiv 2508.10751; passk_k)", "passk", fields=("passk_k",)),
        Method(
            "checker-ceiling",
            "quality x diversity of the checker's exact partition (item prompts): the most a classifier could give "
            "on the task, a ceiling, not DARLING",
            "multiply",
            CHECKER,
            fields=("checker",),
        ),
    )
}
METHOD_NAMES = tuple(METHODS)
OTHER_ARMS = tuple(name for name in METHODS if name not in (DARLING.name, GRPO.name))  # beside DARLING and GRPO


def arm_settings(name: str, settings: dict) -> dict:
    """``settings`` (rl-train fields shared by several arms) as arm ``name`` takes them: without the fields only
    another arm reads (a table of every arm's own settings, e.g. ``entropy_coef`` and ``passk_k``, serves all)."""
    others = {f for m in METHODS.values() if m.name != name for f in m.fields} - set(METHODS[name].fields)
    return {key: value for key, value in settings.items() if key not in others}


class ArmSettings(Protocol):
    """What ``check_arm_settings`` reads of rl-train's settings (``darling.rl.config.RLTrainConfig``, which imports
    this module: the arms never import the settings that list them)."""

    @property
    def arm(self) -> Method: ...
    @property
    def classifier(self) -> Path | None: ...
    @property
    def ngram_n(self) -> int: ...
    @property
    def ngram_threshold(self) -> float: ...
    @property
    def entropy_coef(self) -> float: ...
    @property
    def trl(self) -> dict[str, Any]: ...
    @property
    def passk_k(self) -> int: ...
    @property
    def num_generations(self) -> int: ...
    @property
    def scale_rewards(self) -> str: ...


def check_arm_settings(config: ArmSettings) -> None:
    """What the arm needs, and one place for each setting: an arm's own settings are refused on another."""
    arm = config.arm
    if arm.partition == "classifier" and config.classifier is None:
        raise UserInputError(f"--method {arm.name} needs --classifier (an exported classifier)")
    if arm.partition == NGRAM and (config.ngram_n < 1 or not 0.0 <= config.ngram_threshold <= 1.0):
        raise UserInputError(
            f"ngram_n must be >= 1 and ngram_threshold in [0, 1], got {config.ngram_n}, {config.ngram_threshold}"
        )
    if arm.entropy != (config.entropy_coef != 0.0 or bool(config.trl.get("use_adaptive_entropy"))):
        raise UserInputError(
            "--method entropy needs --entropy-coef > 0 (or trl.use_adaptive_entropy)"
            if arm.entropy
            else f"{'--entropy-coef' if config.entropy_coef else 'trl.use_adaptive_entropy'} is the entropy "
            f"method's: --method {arm.name} trains without it"
        )
    if arm.combine == "passk":
        if not 1 <= config.passk_k <= config.num_generations:
            raise UserInputError(
                f"passk_k must be in [1, num_generations = {config.num_generations}], got {config.passk_k}"
            )
        if config.scale_rewards != "none":
            raise UserInputError(
                "--method passk gives each response its pass@k advantage as the reward: scale_rewards must be none "
                "(dividing by a std again would rescale them)"
            )
