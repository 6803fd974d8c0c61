"""What ``rl-train --engine verl`` covers: the arms its recipe writes, how TRL's loss maps to verl's, and the check
that refuses anything else before a command is written (``darling.rl.verl_recipe`` writes the command)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from darling.core.errors import UserInputError

VERL_METHODS = ("darling", "darling-add", "grpo", "entropy")  # the arms the verl recipe writes
# TRL's loss_type -> verl's actor.loss_agg_mode (how token losses are averaged)
VERL_LOSS_AGG = {
    "dapo": "token-mean",
    "bnpo": "token-mean",
    "grpo": "seq-mean-token-mean",
    "dr_grpo": "seq-mean-token-sum-norm",
}


class VerlSettingsRead(Protocol):
    """What ``check_verl`` reads of rl-train's settings (``darling.rl.config.RLTrainConfig``, which imports this
    module)."""

    @property
    def method(self) -> str: ...
    @property
    def verl_gpus(self) -> int: ...
    @property
    def verl_nodes(self) -> int: ...
    @property
    def trl(self) -> dict[str, Any]: ...
    @property
    def quality(self) -> str: ...
    @property
    def reward_model(self) -> Path | None: ...
    @property
    def trainable_layers(self) -> int | None: ...
    @property
    def loss_type(self) -> str: ...
    @property
    def scale_rewards(self) -> str: ...


def check_verl(config: VerlSettingsRead) -> None:
    """What ``--engine verl``'s recipe covers (``darling.rl.verl_recipe``)."""
    if config.method not in VERL_METHODS:
        raise UserInputError(
            f"--engine verl runs {', '.join(VERL_METHODS)}; --method {config.method} trains on TRL (the default engine)"
        )
    if config.verl_gpus < 1 or config.verl_nodes < 1:
        raise UserInputError(f"verl_gpus and verl_nodes must be >= 1, got {config.verl_gpus}, {config.verl_nodes}")
    if config.trl.get("use_adaptive_entropy"):
        raise UserInputError("--engine verl: the entropy arm takes a fixed --entropy-coef (adaptive is TRL's)")
    if config.quality != "math" or config.reward_model is not None:
        raise UserInputError("--engine verl: the recipe covers the math quality (math-verify); use TRL for others")
    if config.trainable_layers is not None:
        raise UserInputError("--engine verl trains every weight: drop trainable_layers (a TRL-only lever)")
    if config.loss_type not in VERL_LOSS_AGG or config.scale_rewards == "batch":
        raise UserInputError(
            f"--engine verl: loss_type must be one of {', '.join(VERL_LOSS_AGG)} and scale_rewards none or group"
        )
