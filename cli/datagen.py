"""``darling datagen rollouts | pairs | label``: each command's flags are the fields of its config
(``darling.datagen.config``; the engine's from ``darling.core.engine_config``), built by ``cli/options.py``."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from darling.classifier.config import TrainingPairsConfig
from darling.cli.common import out
from darling.cli.help import HelpCommand
from darling.cli.options import config_command, param
from darling.core.errors import UserInputError
from darling.datagen.config import JudgeConfig, PairConfig, RolloutConfig

datagen_app = typer.Typer(
    help="Training data for the equivalence classifier: rollouts -> same-answer pairs -> judge labels.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

INTERACTIVE = sys.stderr.isatty()
PROGRESS = param("progress", Annotated[bool, typer.Option(help="Show a progress bar.")], INTERACTIVE)


def _table(title: str, rows: dict[str, Any], headers: tuple[str, str]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(headers[0])
    table.add_column(headers[1], justify="right")
    for key, value in rows.items():
        table.add_row(str(key), str(value))
    return table


# -- rollouts ------------------------------------------------------------------------------------------------
ROLLOUTS_DOC = """Sample responses to math problems from one or more generator models.

Examples:

    darling datagen rollouts --import champ --output runs/rollouts

    darling datagen rollouts --problems gsm8k --limit 20 --model smollm2 \\
        -n 4 --output runs/rollouts

    darling datagen rollouts \\
        --problems agentica-org/DeepScaleR-Preview-Dataset --engine vllm \\
        --generators generators.toml --tensor-parallel-size 4 \\
        --output runs/rollouts

Every setting below is a field of `darling.datagen.config.RolloutConfig`.
"""
IMPORT = param(
    "import_",
    Annotated[
        str | None,
        typer.Option("--import", help="Convert existing responses instead: champ (19,440, 4 models)."),
    ],
    None,
)


def rollouts(config: RolloutConfig, import_: str | None, progress: bool) -> None:
    from darling.datagen.rollouts import generate_rollouts, import_champ  # loads polars, httpx when run

    if import_ is not None:
        if import_ != "champ":
            raise UserInputError(f"--import knows only champ, got {import_!r}")
        summary = import_champ(config.output, limit=config.limit, progress=progress)
    else:
        summary = generate_rollouts(config, progress=progress)
    out.print(
        f"{summary.output}: {summary.rows} responses ({summary.generated} new, {summary.skipped} already there, "
        f"{summary.failed} failed{' - rerun to retry' if summary.failed else ''})"
    )
    if summary.failed:
        raise typer.Exit(code=1)


# -- pairs ---------------------------------------------------------------------------------------------------
PAIRS_DOC = """Pair responses to the same problem whose final answers are equivalent (math-verify).

Example:

    darling datagen pairs --rollouts runs/rollouts --output runs/pairs \\
        --cross-model-only --max-pairs-per-problem 8

Every setting below is a field of `darling.datagen.config.PairConfig`.
"""


def pairs(config: PairConfig, progress: bool) -> None:
    from darling.datagen.pairs import build_pairs  # loads polars, httpx when run

    summary = build_pairs(config, progress)
    counts = sorted(summary.per_problem.values())
    out.print(
        f"{summary.pairs} pairs from {summary.problems_with_pairs} problems ({summary.responses_used} responses, "
        f"{summary.duplicates_dropped} identical texts dropped) -> {config.output}/pairs.parquet"
    )
    if counts:
        out.print(f"pairs per problem: min {counts[0]}  median {counts[len(counts) // 2]}  max {counts[-1]}")
        out.print(_table("pairs per model pair", dict(sorted(summary.per_model_pair.items())), ("models", "pairs")))


# -- label ---------------------------------------------------------------------------------------------------
LABEL_DOC = """Ask an LLM judge whether each pair's solutions use different strategies; write labelled pairs.

Examples (production: Llama-3.3-70B-Instruct behind `vllm serve`; CPU: SmolLM2 on vLLM-CPU):

    darling datagen label --pairs runs/pairs --output runs/labels \\
        --base-url http://127.0.0.1:8000/v1 \\
        --judge-model meta-llama/Llama-3.3-70B-Instruct

    darling datagen label --pairs runs/pairs --output runs/labels \\
        --engine vllm --tensor-parallel-size 4 \\
        --judge-model meta-llama/Llama-3.3-70B-Instruct

Then: `darling train-classifier --data runs/labels/labelled.parquet --output runs/clf`.
Every setting below is a field of `darling.datagen.config.JudgeConfig`.
"""


def label(config: JudgeConfig, progress: bool) -> None:
    from darling.datagen.judge import label_pairs  # loads polars, httpx when run

    summary = label_pairs(config, progress=progress)
    out.print(_table("judged pairs", summary.counts, ("status", "pairs")))
    bal = summary.label_balance
    out.print(
        f"labels: {bal.get(1, 0)} equivalent (similar=1), {bal.get(0, 0)} different (similar=0) -> "
        f"{config.output}/labelled.parquet  ({summary.judged_now} judged now, {summary.skipped} already done, "
        f"{summary.requests} judge calls)"
    )
    if summary.counts.get("failed"):
        out.print(f"{summary.counts['failed']} pairs failed (server errors): rerun the same command to retry them")
        raise typer.Exit(code=1)


# -- training pairs ------------------------------------------------------------------------------------------
TRAINING_PAIRS_DOC = """The classifier's training pairs: the judge's labels, NoveltyBench's human-labelled pairs, or the
judge's topped up with human pairs when it gave too few of a class (a classifier, and its validation split,
needs both labels).

Examples:

    darling datagen training-pairs --labels runs/labels \\
        --output runs/training-pairs

    darling datagen training-pairs --source human --human-pairs 200 \\
        --output runs/training-pairs

Then: `darling train-classifier --data runs/training-pairs/pairs.jsonl --output runs/clf`. OUTPUT/summary.json
says what went in and why. Every setting below is a field of
`darling.classifier.config.TrainingPairsConfig`.
"""


def training_pairs(config: TrainingPairsConfig) -> None:
    from darling.classifier.training_pairs import build_training_pairs  # loads polars when run

    summary = build_training_pairs(config)
    by = summary["by_source"]
    out.print(
        f"{summary['pairs']} pairs ({by['judge']} from the judge, {by['noveltybench']} NoveltyBench human pairs; "
        f"equivalent {summary['balance']['1']}, different {summary['balance']['0']}) -> {summary['file']}"
    )
    if summary["reason"]:
        out.print(f"note: {summary['reason']}")


datagen_app.command("rollouts", cls=HelpCommand)(
    config_command(RolloutConfig, rollouts, [IMPORT, PROGRESS], doc=ROLLOUTS_DOC)
)
datagen_app.command("pairs", cls=HelpCommand)(config_command(PairConfig, pairs, [PROGRESS], doc=PAIRS_DOC))
datagen_app.command("label", cls=HelpCommand)(config_command(JudgeConfig, label, [PROGRESS], doc=LABEL_DOC))
datagen_app.command("training-pairs", cls=HelpCommand)(
    config_command(TrainingPairsConfig, training_pairs, doc=TRAINING_PAIRS_DOC)
)
