"""Metrics and threshold choice on a validation split (scikit-learn does the counting)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

_OBJECTIVES = {
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
    "f1": lambda y, p: f1_score(y, p, zero_division=0),
}


def expected_calibration_error(labels: np.ndarray, probs: np.ndarray, n_bins: int = 10) -> float:
    """ECE of P(equivalent): bin-size-weighted |mean predicted - observed frequency| over equal-width bins."""
    labels, probs = np.asarray(labels, dtype=float), np.asarray(probs, dtype=float)
    bins = np.minimum((probs * n_bins).astype(int), n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            ece += mask.mean() * abs(probs[mask].mean() - labels[mask].mean())
    return float(ece)


def choose_threshold(labels: np.ndarray, probs: np.ndarray, objective: str = "balanced_accuracy") -> float:
    """The threshold maximising ``objective`` on validation; ties go to the one nearest 0.5.

    Candidates are midpoints between consecutive distinct probabilities, so the chosen threshold sits
    between examples rather than on one (stable under tiny numeric differences, e.g. served vs local).
    """
    labels, probs = np.asarray(labels), np.asarray(probs, dtype=float)
    score = _OBJECTIVES[objective]
    values = np.unique(probs)
    candidates = np.concatenate([[0.5], (values[:-1] + values[1:]) / 2]) if len(values) > 1 else np.array([0.5])
    best, best_key = 0.5, None
    for t in candidates:
        key = (score(labels, (probs >= t).astype(int)), -abs(t - 0.5))
        if best_key is None or key > best_key:
            best, best_key = float(t), key
    return best


def binary_metrics(labels: np.ndarray, probs: np.ndarray, threshold: float) -> dict[str, float | int]:
    labels, probs = np.asarray(labels).astype(int), np.asarray(probs, dtype=float)
    preds = (probs >= threshold).astype(int)
    both_classes = len(np.unique(labels)) == 2
    return {
        "accuracy": float(accuracy_score(labels, preds)),
        "balanced_accuracy": float(balanced_accuracy_score(labels, preds)) if both_classes else float("nan"),
        "precision": float(precision_score(labels, preds, zero_division=0)),
        "recall": float(recall_score(labels, preds, zero_division=0)),
        "f1": float(f1_score(labels, preds, zero_division=0)),
        "roc_auc": float(roc_auc_score(labels, probs)) if both_classes else float("nan"),
        "ece": expected_calibration_error(labels, probs),
        "threshold": float(threshold),
        "n": int(len(labels)),
        "positive_rate": float(labels.mean()) if len(labels) else float("nan"),
    }
