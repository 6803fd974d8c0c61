"""The checker as a judge: pairs labelled by rule where a task has one (``darling.core.checkers``), and an LLM judge
scored against those labels.

``datagen label --checker items`` (no ``--judge-model``) labels each pair by the keys the checker reads off its two
answers: the same key is equivalent (``similar = 1``), two different keys are not (``0``); a pair where either answer
has no key is left unlabelled (``abstain``), never guessed. It is the CPU stand-in for the paper's 70B judge on a
task with a checker, and it is exact there.

``datagen label --judge-model M --checker items`` labels with the LLM judge as always and scores it against the
checker (``summary.json``: ``agreement``): of the pairs the checker calls equivalent, the share the judge labelled
equivalent, and the same for different pairs; a pair the judge left unlabelled (abstain, disagree, failed) counts as
a miss, so a judge that abstains on everything agrees with nothing. Intervals: percentile bootstrap over pairs.
"""

from __future__ import annotations

import hashlib
from typing import Any

from darling.core.checkers import Checker
from darling.core.numbers import percentile_interval

CHECKER_ENGINE = "rule"  # the judge_engine column of a checker's labels
N_BOOT = 2000  # bootstrap draws of an agreement's interval


def checker_judge_name(checker: Checker) -> str:
    """How records and reports name a checker that judged: ``checker:items``."""
    return f"checker:{checker.name}"


def checker_sha256(checker: Checker) -> str:
    """What a checker's labels record as their prompt: the rule's name and description (a rerun with another rule
    into the same folder is refused, as another judge prompt would be)."""
    return hashlib.sha256(f"{checker.name}\n{checker.about}".encode()).hexdigest()


def truth(checker: Checker, pair: dict[str, Any]) -> tuple[int | None, list[str]]:
    """(the checker's label of the pair, its two keys as text): 1 same key, 0 different, None when either has none."""
    keys = [checker.key(pair["prompt"], pair[column]) for column in ("generation_0", "generation_1")]
    shown = [k if k is not None else "no key" for k in keys]
    return (None if None in keys else int(keys[0] == keys[1])), shown


def checker_record(pair: dict[str, Any], checker: Checker) -> dict[str, Any]:
    """One pair labelled by rule, in the judge's record columns (``JUDGE_COLUMNS``): its two keys as the verdicts."""
    similar, keys = truth(checker, pair)
    reading = {1: f"same key: {keys[0]}", 0: f"different keys: {keys[0]} / {keys[1]}", None: "an answer has no key"}
    return {
        **pair,
        "similar": similar,
        "status": "abstain" if similar is None else "labelled",
        "verdicts": keys,
        "raw_outputs": [],
        "rationale": reading[similar],
        "judge_model": checker_judge_name(checker),
        "judge_engine": CHECKER_ENGINE,
        "prompt_sha256": checker_sha256(checker),
        "error": None,
    }


def agreement(records: list[dict[str, Any]], checker: Checker, seed: int = 0) -> dict[str, Any]:
    """The judge's labels against the checker's, per checker label: pairs, the judge's label counts, and the share
    it got right (unlabelled pairs are misses) with a bootstrap 95% interval; pairs the checker cannot label are
    counted apart."""
    import numpy as np  # loads numpy: only when a judge is scored

    rng = np.random.default_rng(seed)
    expected = [truth(checker, r)[0] for r in records]
    judged = [r["similar"] if r["status"] == "labelled" else None for r in records]
    per_label: dict[str, Any] = {}
    for label, name in ((1, "equivalent"), (0, "different")):
        mine = [j for e, j in zip(expected, judged, strict=True) if e == label]
        per_label[name] = {
            "pairs": len(mine),
            "judged_equivalent": mine.count(1),
            "judged_different": mine.count(0),
            "unlabelled": mine.count(None),
            **share_with_interval([int(j == label) for j in mine], rng),
        }
    keyed = [int(e == j) for e, j in zip(expected, judged, strict=True) if e is not None]
    return {
        "checker": checker.name,
        "per_label": per_label,
        "overall": share_with_interval(keyed, rng),
        "pairs_without_key": expected.count(None),
        "misses": "a pair the judge left unlabelled (abstain, disagree, failed) counts as a miss",
    }


def share_with_interval(hits: list[int], rng) -> dict[str, Any]:
    """The share of hits and its percentile bootstrap 95% interval over the pairs (None for no pairs)."""
    import numpy as np  # loads numpy: only when a judge is scored

    if not hits:
        return {"agreement": None, "interval": None}
    values = np.asarray(hits, dtype=float)
    draws = values[rng.integers(0, len(values), (N_BOOT, len(values)))].mean(axis=1)
    return {"agreement": float(values.mean()), "interval": percentile_interval(draws)}
