"""``darling eval classifier``: metrics of an exported classifier on labelled pairs, with ROC and
reliability plots. Writes ``metrics.json`` (and the per-pair probabilities) atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from darling.classifier.calibration import binary_metrics
from darling.classifier.data import load_pairs
from darling.classifier.scoring import EquivalenceClassifier


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


def evaluate_classifier(
    model_dir: str | Path,
    data: str | Path,
    output: str | Path,
    threshold: float | None = None,
    symmetric: bool | None = None,
    batch_size: int = 32,
) -> dict[str, Any]:
    pairs = load_pairs(data)  # validate input before loading the model
    clf = EquivalenceClassifier.from_pretrained(model_dir, batch_size=batch_size)
    labels = np.array(pairs.labels)
    probs = clf.prob_equivalent([p.texts for p in pairs.pairs], symmetric=symmetric)
    metrics = binary_metrics(labels, probs, clf.threshold if threshold is None else threshold)
    metrics.update(
        model=str(model_dir),
        data=str(data),
        data_sha256=pairs.sha256,
        symmetric=clf.symmetric if symmetric is None else symmetric,
    )
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    name = Path(model_dir).name
    if len(set(labels.tolist())) == 2:
        plot_roc(labels, probs, output / "roc.png", f"ROC: {name}")
    plot_reliability(labels, probs, output / "reliability.png", f"Reliability: {name}")
    rows = [
        {"pair_id": p.pair_id, "similar": p.similar, "prob_equivalent": float(q)}
        for p, q in zip(pairs.pairs, probs, strict=True)
    ]
    _write_atomic(output / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    _write_atomic(output / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    return metrics
