"""Settings of ``darling eval agreement`` (two partitions of the same generations, side by side): one ``kw_only``
dataclass whose fields carry their help, so the command line is built from them. Kept light (no numpy)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from darling.core.config import CommandConfig, option
from darling.core.errors import UserInputError
from darling.evals.config import named


@dataclass(kw_only=True, frozen=True)
class AgreementConfig(CommandConfig):
    """Settings of ``darling eval agreement``."""

    output: Path = option(aliases=("-o",), help="Writes agreement.json and report.md.")
    partitions: list[str] = option(
        help="NAME=FILE: a partitions.jsonl (NoveltyBench's, or darling's from eval novelty --noveltybench); give two."
    )
    seed: int = option(0, help="Seed of the bootstrap over prompts.")

    def check(self) -> None:
        if len(named(self.partitions, "--partitions", must_exist=False)) != 2:
            raise UserInputError("give --partitions NAME=FILE twice: the two partitions to compare")
