"""``darling`` — one command line over the Python API. Parses options, calls one function, prints a summary.

Heavy imports (torch, transformers) happen inside the commands so that ``darling --help`` and
``darling --version`` stay instant.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from darling import __version__
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


@app.command("train-classifier")
@user_errors
def train_classifier_cmd(
    data: Annotated[
        str,
        typer.Option(
            "--data",
            help="Labelled pairs: .jsonl[.gz], .parquet, dataset folder, hub name, or noveltybench (built in).",
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Export directory (logs in OUTPUT/training).")],
    preset: Annotated[
        str, typer.Option(help="Preset: cpu (MiniLM bi-encoder, 2 cores), cpu-cross, paper (Qwen3-Embedding-4B).")
    ] = "cpu",
    kind: Annotated[
        str | None, typer.Option(help="cross-encoder (a pair in one input) or bi-encoder (cosine of embeddings).")
    ] = None,
    val: Annotated[str | None, typer.Option(help="Validation pairs; default: a stratified split of --data.")] = None,
    test: Annotated[
        str | None, typer.Option(help="Held-out pairs scored after training (darling.json test_metrics).")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="JSON or TOML file of option overrides.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override any option: --set learning_rate=5e-5 (repeatable).")
    ] = None,
    epochs: Annotated[int | None, typer.Option(help="Epochs (ignored when max_steps is set).")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Optimiser steps (overrides epochs).")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Peak learning rate.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Micro-batch size.")] = None,
    backbone: Annotated[str | None, typer.Option(help="Backbone path or hub name.")] = None,
    precision: Annotated[str | None, typer.Option(help="32-true or bf16-mixed.")] = None,
    devices: Annotated[str | None, typer.Option(help="Lightning devices (auto, 1, 8).")] = None,
    strategy: Annotated[str | None, typer.Option(help="auto, ddp, fsdp, deepspeed_stage_2, ...")] = None,
    resume: Annotated[bool, typer.Option(help="Continue from OUTPUT/training/checkpoints/last.ckpt.")] = False,
    threads: Annotated[int | None, typer.Option(help="torch CPU threads.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = sys.stderr.isatty(),
) -> None:
    """Train, calibrate and export the equivalence classifier (either kind).

    Example (CPU, the packaged MiniLM encoder, NoveltyBench's 1,000 human-labelled pairs built in):

        darling train-classifier --preset cpu --data noveltybench --output runs/clf

    The paper's kind, a cross-encoder, on the same CPU backbone:

        darling train-classifier --preset cpu-cross --data noveltybench --output runs/clf-cross

    Your own pairs (fields prompt, generation_0, generation_1, similar), a fixed validation set:

        darling train-classifier --data pairs.parquet --val val.jsonl --output runs/clf --set epochs=3

    Paper recipe on GPUs: `--preset paper --devices 8 --strategy ddp`.
    """
    from darling.classifier.config import build_config, parse_set_options
    from darling.classifier.data import load_pairs

    flags = dict(
        kind=kind,
        epochs=epochs,
        max_steps=max_steps,
        learning_rate=lr,
        batch_size=batch_size,
        backbone=backbone,
        precision=precision,
        devices=devices,
        strategy=strategy,
        num_threads=threads,
    )
    overrides = {**parse_set_options(set_ or []), **{k: v for k, v in flags.items() if v is not None}}
    cfg = build_config(preset, config, overrides)
    # Every input is read before the trainer is imported (torch and Lightning take seconds): bad input is
    # refused at once, and before anything is written.
    pairs, val_pairs, test_pairs = (load_pairs(s) if s is not None else None for s in (data, val, test))
    from darling.classifier.train import train_classifier

    result = train_classifier(cfg, pairs, output, val=val_pairs, resume=resume, progress=progress, test=test_pairs)
    out.print(
        f"exported {result.output} ({cfg.kind}; train {result.n_train} pairs, val {result.n_val}, "
        f"{result.train_seconds:.0f} s)\n{_metrics_line('val (chose the threshold)', result.metrics)}"
    )
    if result.test_metrics is not None:
        out.print(_metrics_line(f"test ({result.test_metrics['n']} held-out pairs)", result.test_metrics))


def _metrics_line(name: str, m: dict) -> str:
    return (
        f"{name}: accuracy {m['accuracy']:.3f}  balanced {m['balanced_accuracy']:.3f}  f1 {m['f1']:.3f}  "
        f"auc {m['roc_auc']:.3f}  ece {m['ece']:.3f}  threshold {m['threshold']:.3f}"
    )


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
        out.print(f"{m['model']}: {m['n']} pairs: " + _metrics_line("", m).removeprefix(": ") + f"  (auc 95%{shown})")
    out.print(f"-> {output}/metrics.json" + (", compare.md" if len(rows) > 1 else ""))
