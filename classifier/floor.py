"""Whether a trained classifier learnt the task: its validation AUC beside the content-word rule's on the same pairs,
and the floor below which ``train-classifier`` (and so the pipeline, before any RL run) stops.

The floor compares the *top* of the validation AUC's 95% bootstrap interval with ``auc_floor``: a run stops when
even that is below the floor, that is when its validation split shows, beyond the split's own noise, that the
classifier ranks pairs poorly. So a classifier that learnt nothing stops (issue 67's seed 1: AUC 0.50 on 57 pairs,
interval [0.35, 0.66]) while a small split's noise does not stop one (29 pairs at AUC 0.60: [0.37, 0.82]). The
content-word rule's AUC on the same pairs is reported beside it: a classifier that does not beat ten lines of word
matching has learnt the words, no more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from darling.core.errors import UserInputError
from darling.core.lexical import CONTENT_KEY, CONTENT_RULE, CONTENT_THRESHOLD, overlap_scores
from darling.core.schemas import LabelledPair

FLOOR_SETTING = "auc_floor"  # the ClassifierTrainConfig field: its flag and the pipeline's classifier.auc_floor


class BelowFloor(UserInputError):
    """The classifier's validation AUC is shown to lie below the floor; its export is written, and flagged so."""


def content_rule_metrics(pairs: Sequence[LabelledPair]) -> dict[str, Any]:
    """The content-word rule on labelled pairs (each read against its own prompt): AUC and the metrics at its
    threshold, with bootstrap 95% intervals."""
    import numpy as np  # loads when a classifier is scored: the report renders a verdict without numpy

    from darling.classifier.calibration import binary_metrics, bootstrap_intervals  # loads scikit-learn

    labels = np.array([p.similar for p in pairs])
    scores = overlap_scores(pairs, CONTENT_KEY)
    metrics: dict[str, Any] = {**binary_metrics(labels, scores, CONTENT_THRESHOLD)}
    if len(set(labels.tolist())) == 2:
        metrics["intervals_95"] = bootstrap_intervals(labels, scores, CONTENT_THRESHOLD)
    return {"rule": CONTENT_RULE, **metrics}


def floor_verdict(floor: float | None, metrics: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    """The floor's decision on validation ``metrics`` (``write_report``'s, with their intervals): passed unless the
    top of the AUC's 95% interval is below ``floor`` (no floor, or no interval: passed, and said so)."""
    interval = metrics.get("intervals_95", {}).get("roc_auc")
    verdict: dict[str, Any] = {
        "floor": floor,
        "compares": "the top of the validation AUC's 95% bootstrap interval",
        "auc": metrics.get("roc_auc"),
        "interval": interval,
        "pairs": metrics.get("n"),
        "content_rule_auc": rule.get("roc_auc"),
    }
    verdict["passed"] = floor is None or interval is None or interval[1] >= floor
    return verdict


def floor_line(verdict: dict[str, Any]) -> str:
    """``val auc 0.504 [0.35, 0.66] (57 pairs), the content-word rule 0.812: floor 0.7: stopped``."""
    auc, interval = verdict["auc"], verdict["interval"]
    shown = f"{auc:.3f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
    rule = verdict["content_rule_auc"]
    rule_text = f", the {CONTENT_RULE} {rule:.3f}" if rule is not None and rule == rule else ""
    floor = "no floor" if verdict["floor"] is None else f"floor {verdict['floor']:g}"
    state = "passed" if verdict["passed"] else "below it"
    return f"validation AUC {shown} ({verdict['pairs']} pairs){rule_text}: {floor}, {state}"


def check_floor(verdict: dict[str, Any], output: str) -> None:
    """``BelowFloor`` in one line naming the figure, the floor and the setting that overrides it."""
    if verdict["passed"]:
        return
    low, high = verdict["interval"]
    raise BelowFloor(
        f"{output}: the classifier did not learn its task: validation AUC {verdict['auc']:.3f} [{low:.2f}, "
        f"{high:.2f}] on {verdict['pairs']} pairs, the whole interval below {FLOOR_SETTING} = {verdict['floor']:g} "
        f"(the {CONTENT_RULE} on the same pairs: {verdict['content_rule_auc']:.3f}); nothing should be rewarded "
        f"with it: train another recipe or on more pairs, or lower the floor (--auc-floor; darling pipeline: "
        f"--set classifier.{FLOOR_SETTING}=...) to go on with it"
    )
