"""``darling train-classifier``: its flags are the fields of ``ClassifierTrainConfig`` (cli/options.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from darling.classifier.config import ClassifierTrainConfig
from darling.classifier.floor import check_floor, floor_line
from darling.classifier.import_classifier import ImportConfig
from darling.classifier.import_classifier import import_classifier as run_import
from darling.classifier.labelled_pairs import load_pairs
from darling.cli.common import out
from darling.cli.options import config_command, param

DOC = """Train, calibrate and export the equivalence classifier (either kind).

Example (CPU, the packaged MiniLM encoder, NoveltyBench's 1,000 human-labelled pairs built in):

    darling train-classifier --preset cpu --data noveltybench \\
        --output runs/clf

The paper's kind, a cross-encoder, on the same CPU backbone:

    darling train-classifier --preset cpu-cross --data noveltybench \\
        --output runs/clf-cross

Your own pairs (fields prompt, generation_0, generation_1, similar), a fixed validation set:

    darling train-classifier --data pairs.parquet --val val.jsonl \\
        --output runs/clf --epochs 3

The paper recipe on one node of 8 GPUs (FSDP, bf16 autocast, 64 pairs per optimiser step whatever the number of
GPUs), one process per GPU:

    torchrun --nproc-per-node 8 -m darling train-classifier --preset paper \\
        --devices 8 --data runs/labels/labelled.parquet \\
        --output runs/qwen3-clf

After training, the packaged checks (pairs it never trained or chose anything on) are scored into the model
card: NoveltyBench's 100 held-out human pairs and the minimal pairs (meaning over wording), each beside word
overlap (`--checks none`: skip them).

Every setting below is a field of `darling.classifier.ClassifierTrainConfig`; `--config FILE` (TOML/JSON/YAML)
takes the same keys.
"""

PAIRS_HELP = "Labelled pairs: .jsonl[.gz], .parquet, dataset folder, hub name, or noveltybench (built in)."
PARAMS = [
    param("data", Annotated[str, typer.Option("--data", help=PAIRS_HELP)]),
    param(
        "output", Annotated[Path, typer.Option("--output", "-o", help="Export directory (logs in OUTPUT/training).")]
    ),
    param("val", Annotated[str | None, typer.Option(help="Validation pairs; default: a split of --data.")], None),
    param(
        "test", Annotated[str | None, typer.Option(help="Held-out pairs scored after training (test_metrics).")], None
    ),
    param("resume", Annotated[bool, typer.Option(help="Continue from OUTPUT/training/checkpoints/last.ckpt.")], False),
    param("progress", Annotated[bool, typer.Option(help="Show a progress bar.")], sys.stderr.isatty()),
]


def train(
    config: ClassifierTrainConfig,
    data: str,
    output: Path,
    val: str | None,
    test: str | None,
    resume: bool,
    progress: bool,
) -> None:
    # Every input is read before the trainer is imported (torch and Lightning take seconds): bad input is
    # refused at once, and before anything is written.
    pairs = load_pairs(data)
    val_pairs, test_pairs = (load_pairs(s) if s is not None else None for s in (val, test))
    from darling.classifier.train import train_classifier  # loads torch and Lightning

    result = train_classifier(config, pairs, output, val=val_pairs, resume=resume, progress=progress, test=test_pairs)
    if not result.exported:  # another rank of a multi-process run: rank 0 calibrates, exports and reports
        return
    out.print(
        f"exported {result.output} ({config.kind}; train {result.n_train} pairs, val {result.n_val}, "
        f"{result.train_seconds:.0f} s)\n{metrics_line('val (chose the threshold)', result.metrics)}"
    )
    if result.test_metrics is not None:
        out.print(metrics_line(f"test ({result.test_metrics['n']} held-out pairs)", result.test_metrics))
    for name, check in result.checks.items():
        out.print(check_line(name, check))
    out.print(floor_line(result.floor))
    check_floor(result.floor, str(output))  # exit 2 below the floor: nothing downstream runs on it


def metrics_line(name: str, m: dict) -> str:
    return (
        f"{name}: accuracy {m['accuracy']:.3f}  balanced {m['balanced_accuracy']:.3f}  f1 {m['f1']:.3f}  "
        f"auc {m['roc_auc']:.3f}  ece {m['ece']:.3f}  threshold {m['threshold']:.3f}"
    )


def check_line(name: str, check: dict) -> str:
    """A packaged check in one line: the classifier's AUC [interval] beside token Jaccard's."""
    c, j = check["classifier"], check["jaccard"]
    low, high = c["intervals_95"]["roc_auc"]
    return (
        f"check {name} ({check['n']} pairs): auc {c['roc_auc']:.3f} [{low:.2f}, {high:.2f}]  "
        f"balanced {c['balanced_accuracy']:.3f}  (token Jaccard auc {j['roc_auc']:.3f})"
    )


train_classifier_cmd = config_command(ClassifierTrainConfig, train, PARAMS, doc=DOC, preset="cpu")


IMPORT_DOC = """Turn a pair classifier trained elsewhere into a darling export that every command takes (rl-train,
serve-classifier, eval novelty, eval classifier --compare, the verl entry point).

The released classifiers (download them first, e.g. `hf download NAME`; nothing is fetched at run time
when HF_HUB_OFFLINE=1):

    darling import-classifier dogtooth/qwen3-4b-emb-finetuned-step-70-hf \\
        --format darling-math -o runs/clf-math

    darling import-classifier dogtooth/similarity-classifier-f168-hf \\
        --format darling-chat -o runs/clf-chat

    darling import-classifier \\
        yimingzhang/deberta-v3-large-generation-similarity \\
        --format noveltybench -o runs/clf-nb

Each format is the input the model was trained with, its "equivalent" class, threshold and token budget, read
from the code that trained and served it (`darling.classifier.import_classifier.FORMATS` cites the files); a flag
overrides one value. Then, e.g.: `darling eval classifier --model runs/clf-chat --compare runs/clf ...`.
"""

IMPORT_PARAMS = [
    param(
        "source",
        Annotated[str, typer.Argument(help="A model folder, or a hub name in the local Hugging Face cache.")],
    ),
    param("output", Annotated[Path, typer.Option("--output", "-o", help="The export directory to write.")]),
]


def import_classifier(config: ImportConfig, source: str, output: Path) -> None:

    meta = run_import(config, source, output)
    out.print(
        f"imported {source} as {output} ({config.format}: {meta['max_tokens_per_response']} tokens per response, "
        f"P(equivalent) = class {meta['equivalent_index']}, threshold {meta['threshold']}, {meta['dtype']})"
    )


import_classifier_cmd = config_command(ImportConfig, import_classifier, IMPORT_PARAMS, doc=IMPORT_DOC)
