"""``darling eval math | novelty | classifier``: one sub-application; each command's flags are the fields of its
config (``darling.evals.config``), built by ``cli/options.py``."""

from __future__ import annotations

import typer

from darling.cli.classifier import metrics_line
from darling.cli.common import out
from darling.cli.eval_math import eval_math_cmd
from darling.cli.eval_novelty import eval_novelty_cmd
from darling.cli.options import config_command
from darling.evals.config import ClassifierEvalConfig

CLASSIFIER_DOC = """Accuracy, precision, recall, F1, ROC-AUC and calibration error of a classifier on labelled pairs.

Example:

    darling eval classifier --model runs/clf --data heldout.jsonl --output runs/clf-eval

Two classifiers side by side (adds OUTPUT/compare/, compare.md, roc_compare.png, metrics.json "compare"):

    darling eval classifier --model runs/clf --compare runs/clf-qwen --data heldout.jsonl --output runs/cmp

What fine-tuning adds: the untrained backbone (cosine; a, b and threshold fitted on --fit-data) beside it:

    darling eval classifier --model runs/clf --zero-shot packaged:all-MiniLM-L6-v2 --fit-data train.jsonl \\
        --data heldout.jsonl --output runs/zs

Metrics carry bootstrap 95% intervals (metrics.json "intervals_95").
Every setting below is a field of `darling.evals.config.ClassifierEvalConfig`.
"""


def eval_classifier(config: ClassifierEvalConfig) -> None:
    from darling.evals.classifier import evaluate_classifier

    metrics = evaluate_classifier(config)
    rows = [metrics] + [metrics[k] for k in ("compare", "zero_shot") if k in metrics]
    for m in rows:
        auc = m.get("intervals_95", {}).get("roc_auc")
        shown = f" [{auc[0]:.3f}, {auc[1]:.3f}]" if auc else ""
        out.print(f"{m['model']}: {m['n']} pairs: " + metrics_line("", m).removeprefix(": ") + f"  (auc 95%{shown})")
    out.print(f"-> {config.output}/metrics.json" + (", compare.md" if len(rows) > 1 else ""))


eval_classifier_cmd = config_command(ClassifierEvalConfig, eval_classifier, doc=CLASSIFIER_DOC)

eval_app = typer.Typer(help="Evaluate classifiers and generators.", no_args_is_help=True)
eval_app.command("math")(eval_math_cmd)
eval_app.command("novelty")(eval_novelty_cmd)
eval_app.command("classifier")(eval_classifier_cmd)
