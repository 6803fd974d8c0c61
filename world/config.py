"""Settings of the world's commands (``darling world corpus``, ``darling world pretrain``): one ``kw_only`` dataclass
each whose fields carry their help, so the command line is built from them (``darling.cli.options``).

Kept light (no polars, no torch): the command line imports this module to build its flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from darling.core.config import NOT_IDENTITY, CommandConfig, option
from darling.core.errors import UserInputError
from darling.core.world import DEFAULT_WORDING
from darling.core.world_data import WORDINGS

CORPUS_FILE = "world.json"  # a corpus folder's record: its settings, entropy and wording


@dataclass(kw_only=True, frozen=True)
class WorldCorpusConfig(CommandConfig):
    """Settings of ``darling world corpus``."""

    output: Path = option(aliases=("-o",), help="Folder: train.parquet, validation.parquet and world.json.")
    wording: str = option(
        DEFAULT_WORDING,
        choices=tuple(WORDINGS),
        help="The answer templates (darling.core.world_data): plain (3 of 10 hide the member from a 4-gram rule), "
        "short (none does), long (7 of 10 do).",
    )
    answers: int = option(200_000, help="Answers in the training part.")
    validation_answers: int = option(
        5_000, help="Answers in the validation part (fresh draws: the pretraining's held-out loss)."
    )
    member_exponent: float = option(
        1.2,
        help="Skew of each category's member choice: the k-th member is drawn with weight k^-exponent (a mode for "
        "GRPO to collapse to); 0: uniform.",
    )
    wrong_category: float = option(
        0.1, help="Share of answers naming a member of another category (quality 0: a signal for quality)."
    )
    seed: int = option(0, help="Seed of the draws and of which member each category favours.")

    def check(self) -> None:
        if self.answers < 1 or self.validation_answers < 1:
            raise UserInputError("--answers and --validation-answers must be at least 1")
        if self.member_exponent < 0:
            raise UserInputError(f"--member-exponent must be >= 0, got {self.member_exponent}")
        if not 0 <= self.wrong_category < 1:
            raise UserInputError(f"--wrong-category must be in [0, 1), got {self.wrong_category}")

    def identity(self) -> dict[str, Any]:
        """What defines the corpus: a rerun into the same folder with another identity is refused."""
        return {k: v for k, v in self.to_dict().items() if k != "output"}


@dataclass(kw_only=True, frozen=True)
class PretrainConfig(CommandConfig):
    """Settings of ``darling world pretrain``."""

    corpus: Path = option(help="A corpus folder (`darling world corpus`): train.parquet and validation.parquet.")
    output: Path = option(
        aliases=("-o",),
        help="Run folder: checkpoints while training, then OUTPUT/final (the policy, a Hugging Face folder with "
        "its word-level tokenizer and card) and log_history.json. Rerun to resume.",
    )
    layers: int = option(2, help="Decoder layers (a Llama).")
    width: int = option(64, help="Hidden size.")
    heads: int = option(2, help="Attention heads (head_dim = width / heads; vLLM's CPU attention takes >= 32).")
    mlp_width: int = option(256, help="The feed-forward layer's width.")
    max_steps: int = option(1500, help="Optimiser steps.")
    batch_size: int = option(256, help="Answers per step.")
    learning_rate: float = option(3e-3, help="AdamW's peak learning rate (linear warm-up, cosine decay).")
    warmup_steps: int = option(50, help="Linear warm-up steps.")
    weight_decay: float = option(0.0, help="AdamW weight decay.")
    save_steps: int = option(
        250, help="Checkpoint every N steps (a killed run resumes from the last).", meta=NOT_IDENTITY
    )
    seed: int = option(0, help="Seed of the initial weights and the batch order.")
    threads: int | None = option(1, help="torch CPU threads; none = torch's default.", meta=NOT_IDENTITY)

    def check(self) -> None:
        if self.width % self.heads:
            raise UserInputError(f"--width ({self.width}) must be a multiple of --heads ({self.heads})")
        for name in ("layers", "width", "heads", "mlp_width", "max_steps", "batch_size", "save_steps"):
            if getattr(self, name) < 1:
                raise UserInputError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise UserInputError(f"--learning-rate must be > 0, got {self.learning_rate}")

    def identity(self) -> dict[str, Any]:
        """What defines the policy: a rerun into a folder with checkpoints of another identity is refused."""
        return {k: v for k, v in self.to_dict().items() if k != "output" and k not in ("save_steps", "threads")}
