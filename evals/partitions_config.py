"""Settings of ``darling eval partitions`` (how classifiers and the n-gram rule partition a policy's answers where a
checker knows which answers are the same): one ``kw_only`` dataclass whose fields carry their help, so the command
line is built from them (``darling.cli.options``). Kept light (no polars, no torch)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from darling.core.checkers import CHECKER_NAMES, get_checker
from darling.core.config import CommandConfig, option
from darling.core.devices import device_option
from darling.core.errors import UserInputError
from darling.core.lexical import NGRAM_ORDER, NGRAM_THRESHOLD
from darling.evals.config import named


@dataclass(kw_only=True, frozen=True)
class PartitionsConfig(CommandConfig):
    """Settings of ``darling eval partitions``."""

    output: Path = option(aliases=("-o",), help="Writes partitions.json and report.md.")
    answers: list[str] = option(
        help="NAME=DIR: a policy's `eval novelty` output, whose answers are partitioned (repeatable)."
    )
    classifier: list[str] = option(
        factory=list,
        help="NAME=DIR: an exported classifier, partitioning as DARLING's reward does (union-find over its decisions "
        "at its threshold); repeatable.",
    )
    ngram: bool = option(
        True,
        help=f"Also the n-gram rule (darling-ngram's partition: {NGRAM_ORDER}-gram Jaccard >= {NGRAM_THRESHOLD}).",
    )
    content_rule: bool = option(
        True,
        help="Also the content-word rule: two answers the same when they share a word that is neither a stop word nor "
        "the prompt's (what a learned classifier must beat to have learnt more than the words).",
    )
    checker: str = option(
        "items",
        choices=CHECKER_NAMES,
        help="The rule that knows which answers are the same (items: the member an item prompt's answer names).",
    )
    seed: int = option(0, help="Seed of the bootstrap over prompts.")
    device: str = device_option("Where the classifiers score: auto (GPU when present), cpu, cuda:N.")

    def check(self) -> None:
        get_checker(self.checker)
        named(self.answers, "--answers", must_exist=False)  # the form here; the folders when it runs
        named(self.classifier, "--classifier", must_exist=False)
        if not (self.classifier or self.ngram or self.content_rule):
            raise UserInputError(
                "nothing to measure: give --classifier NAME=DIR (repeatable), or keep --ngram or --content-rule"
            )
