"""``darling eval classifier``: metrics of an exported classifier on labelled pairs, with ROC and
reliability plots (written by ``darling.classifier.report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.classifier.data import load_pairs
from darling.classifier.report import write_report
from darling.classifier.scoring import EquivalenceClassifier


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
    symmetric = clf.symmetric if symmetric is None else symmetric
    probs = clf.prob_equivalent([p.texts for p in pairs.pairs], symmetric=symmetric)
    extra = {"model": str(model_dir), "data": str(data), "data_sha256": pairs.sha256, "symmetric": symmetric}
    threshold = clf.threshold if threshold is None else threshold
    return write_report(pairs.pairs, probs, threshold, output, Path(model_dir).name, extra)
