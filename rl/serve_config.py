"""Settings of ``darling serve-reward-model``: the replicas' shared settings (``ReplicaConfig``) and the reward
model's own; no presets, every default is the command's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from darling.core.config import option
from darling.core.errors import UserInputError
from darling.core.replica_config import SERVE_DTYPES, ReplicaConfig


@dataclass(kw_only=True, frozen=True)
class RewardServeConfig(ReplicaConfig):
    """Settings of ``darling serve-reward-model`` (no presets: every default is the command's)."""

    PRESET_PACKAGE: ClassVar[str | None] = None

    model: str = option(
        help="The reward model (a sequence classifier with one output): a folder, a hub name in the local Hugging "
        "Face cache, or tiny:reward. Give rl-train and eval novelty the same --reward-model (its tokenizer)."
    )
    dtype: str | None = option(
        None,
        choices=SERVE_DTYPES,
        help="Serving dtype; default: float32 on the CPU build, the model's own (config.json) on GPUs.",
    )
    check: bool = option(False, help="Compare served vs in-process raw scores on sample (prompt, response) pairs.")
    max_model_len: int | None = option(
        None,
        help="vLLM's --max-model-len; default: the longest input the clients send (1024 tokens, or the tokenizer's "
        "limit if lower). A longer input is refused by the server, and the run that sent it stops.",
    )

    def validate(self) -> None:
        super().validate()
        if self.max_model_len is not None and self.max_model_len < 1:
            raise UserInputError(f"max_model_len must be >= 1, got {self.max_model_len}")
