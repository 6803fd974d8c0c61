"""``darling`` — one command line over the Python API. Parses options, calls one function, prints a summary.

Heavy imports (torch, transformers) happen inside the commands so that ``darling --help`` and
``darling --version`` stay instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from darling import __version__
from darling.cli.classifier import metrics_line, train_classifier_cmd
from darling.cli.common import out, user_errors
from darling.cli.datagen import datagen_app
from darling.cli.eval_math import eval_math_cmd
from darling.cli.eval_novelty import eval_novelty_cmd
from darling.cli.pipeline import pipeline_cmd
from darling.cli.rl import rl_train_cmd, serve_classifier_cmd

app = typer.Typer(
    name="darling",
    help="Reproducible DARLING: equivalence classifier, data generation, diversity-aware RL, evaluation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
eval_app = typer.Typer(help="Evaluate classifiers (and, later, generators).", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
eval_app.command("math")(eval_math_cmd)
eval_app.command("novelty")(eval_novelty_cmd)
app.add_typer(datagen_app, name="datagen")
app.command("train-classifier")(train_classifier_cmd)
app.command("rl-train")(rl_train_cmd)
app.command("serve-classifier")(serve_classifier_cmd)
app.command("pipeline")(pipeline_cmd)


def _version(value: bool) -> None:
    if value:
        out.print(f"darling {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Reproducible DARLING (arXiv 2509.02534)."""


@eval_app.command("classifier")
@user_errors
def eval_classifier_cmd(
    data: Annotated[str, typer.Option("--data", help="Labelled pairs to evaluate on.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Writes metrics.json, roc.png, reliability.png.")],
    model: Annotated[
        Path | None, typer.Option("--model", help="An exported classifier directory (either kind).")
    ] = None,
    threshold: Annotated[float | None, typer.Option(help="Decision threshold; default: the exported one.")] = None,
    symmetric: Annotated[
        bool | None, typer.Option("--symmetric/--one-order", help="Average both orders; default: as exported.")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Pairs per forward pass.")] = 32,
    threads: Annotated[int | None, typer.Option(help="torch CPU threads.")] = None,
    compare: Annotated[
        Path | None, typer.Option(help="A second export scored on the same pairs (at its own threshold).")
    ] = None,
    zero_shot: Annotated[
        str | None,
        typer.Option(
            help="An untrained embedding backbone scored too (packaged:all-MiniLM-L6-v2, a path, a hub name)."
        ),
    ] = None,
    fit_data: Annotated[
        str | None, typer.Option(help="With --zero-shot: labelled pairs to fit its a, b and threshold on.")
    ] = None,
) -> None:
    """Accuracy, precision, recall, F1, ROC-AUC and calibration error of a classifier on labelled pairs.

    Example:

        darling eval classifier --model runs/clf --data heldout.jsonl --output runs/clf-eval

    Two classifiers side by side (adds OUTPUT/compare/, compare.md, roc_compare.png, metrics.json "compare"):

        darling eval classifier --model runs/clf --compare runs/clf-qwen --data heldout.jsonl --output runs/cmp

    What fine-tuning adds: the untrained backbone (cosine; a, b and threshold fitted on --fit-data) beside it:

        darling eval classifier --model runs/clf --zero-shot packaged:all-MiniLM-L6-v2 --fit-data train.jsonl \\
            --data heldout.jsonl --output runs/zs

    Metrics carry bootstrap 95% intervals (metrics.json "intervals_95").
    """
    from darling.evals.classifier import evaluate_classifier

    if threads:
        import torch

        torch.set_num_threads(threads)
    metrics = evaluate_classifier(
        model, data, output, threshold, symmetric, batch_size, compare=compare, zero_shot=zero_shot, fit_data=fit_data
    )
    rows = [metrics] + [metrics[k] for k in ("compare", "zero_shot") if k in metrics]
    for m in rows:
        auc = m.get("intervals_95", {}).get("roc_auc")
        shown = f" [{auc[0]:.3f}, {auc[1]:.3f}]" if auc else ""
        out.print(f"{m['model']}: {m['n']} pairs: " + metrics_line("", m).removeprefix(": ") + f"  (auc 95%{shown})")
    out.print(f"-> {output}/metrics.json" + (", compare.md" if len(rows) > 1 else ""))
