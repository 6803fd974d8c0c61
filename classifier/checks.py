"""The packaged checks of a pair classifier: labelled pairs that ship with darling and that nothing is ever chosen
on, scored after every training run (the export's `darling.json` and model card) and by `darling eval classifier
--data NAME`, each beside word overlap computed on the spot and the figures published for the same pairs.

- ``noveltybench-heldout``: NoveltyBench's 100 held-out human-labelled pairs (50% equivalent, no prompt shared with
  the 1,000 the presets train on; MIT, ``resources/NOVELTYBENCH-LICENSE``).
- ``minimal-pairs``: pairs written for darling (MIT) where meaning and wording part: a paraphrase in other words
  (equivalent) and the same text with the one thing the prompt asks for swapped (not equivalent). Word overlap
  ranks them backwards by construction (``resources/MINIMAL-PAIRS.md``).
- ``item-pairs-heldout``: a GRPO-warmed SmolLM2's one-sentence answers to 30 item categories that no item chain
  trains on ("Name a planet..."), every pair of two answers naming a member labelled by the items checker (the same
  member: equivalent); the content-word rule is the baseline a classifier of the task must beat
  (``resources/ITEM-PAIRS.md``).

A check never picks a threshold, an epoch or a recipe: the classifier is scored at the threshold its validation
split chose, and the word-overlap rows at thresholds fitted on the classifier's own training pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from darling.classifier.calibration import binary_metrics, bootstrap_intervals, choose_threshold
from darling.classifier.config import ITEM_PAIRS_HELDOUT, MINIMAL_PAIRS, NOVELTYBENCH_HELDOUT
from darling.classifier.labelled_pairs import load_pairs
from darling.classifier.report import write_report
from darling.core.lexical import BASELINES, overlap_scores

SHOWN = ("roc_auc", "accuracy", "balanced_accuracy")  # the figures each check's table shows


@dataclass(frozen=True)
class Check:
    """A named pair set (``load_pairs`` reads it by ``name``) and the ROC-AUCs published for it."""

    name: str
    title: str
    published: tuple[tuple[str, float], ...] = ()


CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check(
            NOVELTYBENCH_HELDOUT,
            "NoveltyBench's 100 held-out human pairs",
            # NoveltyBench's ROC notebook, on these 100 pairs (cited, not measured here)
            (("NoveltyBench's DeBERTa-v3-large", 0.812), ("GPT-4o-mini", 0.764), ("BERTScore", 0.677)),
        ),
        Check(MINIMAL_PAIRS, "minimal pairs: meaning over wording"),
        Check(ITEM_PAIRS_HELDOUT, "item pairs: answers to 30 held-out item categories, checker-labelled"),
    )
}


def _scored(labels, probs, threshold: float) -> dict[str, Any]:
    metrics = binary_metrics(labels, probs, threshold)
    intervals = bootstrap_intervals(labels, probs, threshold)
    return {k: metrics[k] for k in (*SHOWN, "threshold")} | {"intervals_95": {k: intervals[k] for k in SHOWN}}


def overlap_threshold(fit_pairs, key: str, objective: str = "balanced_accuracy") -> float:
    """The word-overlap baseline ``key``'s decision threshold, fitted for ``objective`` on labelled ``fit_pairs``
    (here and in ``darling eval classifier``)."""
    labels = np.array([p.similar for p in fit_pairs])
    return choose_threshold(labels, overlap_scores(fit_pairs, key), objective)


def overlap_rows(pairs, fit_pairs) -> dict[str, dict[str, Any]]:
    """Each word-overlap baseline on ``pairs``, its threshold fitted for balanced accuracy on ``fit_pairs``."""
    labels = np.array([p.similar for p in pairs])
    return {key: _scored(labels, overlap_scores(pairs, key), overlap_threshold(fit_pairs, key)) for key in BASELINES}


def score_checks(clf, names: Sequence[str], fit_pairs, output: Path) -> dict[str, dict[str, Any]]:
    """Score ``clf`` (an ``EquivalenceScorer`` at its threshold) on each named check; write each one's report
    (metrics, predictions, ROC) to ``output/NAME/``. ``fit_pairs``: the pairs the word-overlap thresholds are fitted
    on (the classifier's training pairs)."""
    results = {}
    for name in names:
        check, pairs = CHECKS[name], load_pairs(name).pairs
        labels = np.array([p.similar for p in pairs])
        probs = clf.prob_equivalent([p.texts for p in pairs])
        write_report(pairs, probs, clf.threshold, output / name, check.title)
        results[name] = {
            "title": check.title,
            "n": len(pairs),
            "equivalent": int(labels.sum()),
            # a check is held out only if the classifier never saw its prompts
            "prompts_in_training": len({p.prompt for p in pairs} & {p.prompt for p in fit_pairs}),
            "classifier": _scored(labels, probs, clf.threshold),
            **overlap_rows(pairs, fit_pairs),
            "published_roc_auc": dict(check.published),
        }
    return results


def _cell(row: dict[str, Any], key: str) -> str:
    low, high = row["intervals_95"][key]
    return f"{row[key]:.3f} [{low:.2f}, {high:.2f}]"


def checks_markdown(results: dict[str, dict[str, Any]]) -> str:
    """The checks as one markdown table per check: the classifier, word overlap, the published ROC-AUCs."""
    parts = []
    for result in (results[name] for name in CHECKS if name in results):  # darling.json sorts its keys
        lines = [
            f"**{result['title']}** ({result['n']} pairs, {result['equivalent']} equivalent)"
            + (
                f": **not held out**, {result['prompts_in_training']} of its prompts are in the training pairs"
                if result["prompts_in_training"]
                else ""
            ),
            "",
            "| scored by | ROC-AUC | accuracy | balanced accuracy |",
            "| --- | --- | --- | --- |",
            "| this classifier | " + " | ".join(_cell(result["classifier"], k) for k in SHOWN) + " |",
        ]
        for key, (label, _) in BASELINES.items():
            lines.append(
                f"| {label} (threshold from the training pairs) | "
                + " | ".join(_cell(result[key], k) for k in SHOWN)
                + " |"
            )
        for who, auc in result["published_roc_auc"].items():
            lines.append(f"| {who} (published) | {auc:.3f} | – | – |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
