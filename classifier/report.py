"""Metrics, per-pair predictions and plots (ROC, reliability) for a classifier on labelled pairs.

Used on the validation split at the end of training and by ``darling eval classifier``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darling.classifier.calibration import binary_metrics, bootstrap_intervals
from darling.core.schemas import LabelledPair


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def plot_roc(labels: np.ndarray, probs: np.ndarray, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_auc_score, roc_curve

    fpr, tpr, _ = roc_curve(labels, probs)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot(fpr, tpr, label=f"AUC {roc_auc_score(labels, probs):.3f}")
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=0.8)
    ax.set(xlabel="false positive rate", ylabel="true positive rate", title=title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_reliability(labels: np.ndarray, probs: np.ndarray, path: Path, title: str, n_bins: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.calibration import calibration_curve

    observed, predicted = calibration_curve(labels, probs, n_bins=n_bins, strategy="uniform")
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=0.8, label="perfect")
    ax.plot(predicted, observed, marker="o", label="classifier")
    ax.hist(probs, bins=n_bins, range=(0, 1), weights=np.full(len(probs), 1 / len(probs)), alpha=0.25, label="share")
    ax.set(xlabel="predicted P(equivalent)", ylabel="observed frequency", title=title, xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(
    pairs: Sequence[LabelledPair],
    probs: np.ndarray,
    threshold: float,
    output: str | Path,
    title: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``metrics.json`` (with bootstrap 95% intervals), ``predictions.jsonl``, ``roc.png`` and
    ``reliability.png`` to ``output``."""
    labels = np.array([p.similar for p in pairs])
    metrics = {**binary_metrics(labels, probs, threshold), **(extra or {})}
    if len(set(labels.tolist())) == 2:
        metrics["intervals_95"] = bootstrap_intervals(labels, probs, threshold)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    if len(set(labels.tolist())) == 2:
        plot_roc(labels, probs, output / "roc.png", f"ROC: {title}")
    plot_reliability(labels, probs, output / "reliability.png", f"Reliability: {title}")
    rows = [
        {"pair_id": p.pair_id, "similar": p.similar, "prob_equivalent": float(q)}
        for p, q in zip(pairs, probs, strict=True)
    ]
    _write_atomic(output / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    _write_atomic(output / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    return metrics
