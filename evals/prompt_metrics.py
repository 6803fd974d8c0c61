"""The per-prompt metrics of a prompt's k answers, each defined once. ``eval novelty`` computes every one into
``per_prompt.parquet`` (a column each) and its mean into ``metrics.json`` (``mean_<name>``); ``eval compare``, the
pipeline's summary and report read them through this table. Adding a metric is one entry here (its function), its
test and its line in docs/evaluation.md.

``COMPARED_METRICS``: the figures ``eval compare`` computes itself from the stored texts, because they depend on
the comparison's settings (``--max-words``, ``--quality``); ``COMPARE_COLUMNS`` are a comparison's columns."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from darling.core.checkers import CHECKERS
from darling.core.quality import distinct_answers
from darling.evals.vendi import DEFAULT_ORDER, vendi_score


@dataclass(frozen=True)
class PromptAnswers:
    """One prompt's k answers as eval novelty scored them, in generation order."""

    texts: Sequence[str]
    classes: Sequence[int]  # the eval partition's class id of each answer
    quality: Sequence[float]  # eval novelty's quality of each answer
    utility: float  # the prompt's utility (its method and patience are the evaluation's settings)
    prompt: str = ""  # the prompt's text (the item count reads its category from it)
    similarity: Any = None  # the eval classifier's k x k similarity of the answers (numpy; the Vendi kernel)
    vendi_order: float = DEFAULT_ORDER


@dataclass(frozen=True)
class PromptMetric:
    name: str  # its column in per_prompt.parquet and its key in compare.json
    label: str  # how tables name it
    definition: str  # one line under a comparison's table
    of: Callable[[PromptAnswers], float | None]  # None: the metric does not apply to this prompt
    independent: bool = True  # counted without the reward's classifier (a report says which counts are)
    verdict: tuple[str, str] | None = None  # (its name, its unit) in a comparison's one-line reading; None: not in it


def _vendi(a: PromptAnswers) -> float | None:
    return None if a.similarity is None else vendi_score(a.similarity, a.vendi_order)


def _distinct_items(a: PromptAnswers) -> float | None:
    """The keys a checker reads off the answers (an item prompt's members, a world prompt's), the first that reads
    keys on this prompt; None on a prompt no checker reads. An answer with no key adds nothing."""
    checker = next((c for c in CHECKERS.values() if c.applies(a.prompt)), None)
    if checker is None:
        return None
    return float(len({key for key in checker.keys(a.prompt, a.texts) if key is not None}))


PROMPT_METRICS: tuple[PromptMetric, ...] = (
    PromptMetric(
        "distinct",
        "distinct (eval partition)",
        "classes of eval novelty's partition (NoveltyBench's greedy partition: two answers of at most 5 words are "
        "compared by word overlap, longer ones by the classifier)",
        lambda a: float(len(set(a.classes))),
        independent=False,
        verdict=("distinct", "classes per prompt"),
    ),
    PromptMetric(
        "distinct_answers",
        "distinct answers (exact)",
        "different answers after lower-casing and dropping punctuation (no classifier)",
        lambda a: float(distinct_answers(a.texts)),
        verdict=("distinct answers", "answers per prompt"),
    ),
    PromptMetric(
        "distinct_items",
        "distinct items (by rule)",
        "different category members named, read off each answer by rule (the prompts a checker reads: items-*, "
        "world-*; no classifier)",
        _distinct_items,
        verdict=("distinct items", "items per prompt"),
    ),
    PromptMetric(
        "vendi",
        "Vendi score",
        "the effective number of different answers from the eval classifier's similarity, no threshold and no "
        "partition (Friedman and Dieng, 2023; order q = eval novelty's --vendi-order, 1 by default)",
        _vendi,
        independent=False,
    ),
    PromptMetric(
        "utility",
        "utility",
        "eval novelty's utility: the quality of the first answer of each class, repeats 0 (its method and patience)",
        lambda a: float(a.utility),
        independent=False,
    ),
    PromptMetric(
        "quality",
        "quality",
        "eval novelty's quality, mean per prompt",
        lambda a: fmean(a.quality),
        verdict=("quality", ""),
    ),
)
PROMPT_METRIC_NAMES = tuple(m.name for m in PROMPT_METRICS)


# -- what eval compare computes from the stored texts, under its own settings --------------------------------------
QualityScorer = Callable[[Sequence[str], Sequence[str]], Sequence[float]]  # (prompts, answers) -> quality each


@dataclass(frozen=True)
class ComparedMetric:
    name: str  # a column of compare.json; a name of PROMPT_METRICS replaces eval novelty's figure of that name
    label: str
    # (prompts, answers, max words, the comparison's quality scorer or None) -> the figure, or None: none computed
    of: Callable[[Sequence[str], Sequence[str], int, QualityScorer | None], float | None]


COMPARED_METRICS: tuple[ComparedMetric, ...] = (
    ComparedMetric(
        "short",
        "share ≤ max words",
        lambda prompts, texts, max_words, score: _np_mean([0 < len(t.split()) <= max_words for t in texts]),
    ),
    # --quality other than eval: the comparison's open-ended quality of the same answers stands in for eval
    # novelty's (its report names which quality it is); with eval, eval novelty's column is kept.
    ComparedMetric(
        "quality",
        "quality",
        lambda prompts, texts, max_words, score: None if score is None else _np_mean(score(prompts, texts)),
    ),
)


def _np_mean(values) -> float:
    """numpy's mean (pairwise summation), as compare.json's figures were always computed."""
    import numpy as np  # loads numpy: only when a comparison computes, never for a command's --help

    return float(np.mean(values))


COMPARE_COLUMNS = {**{m.name: m.label for m in PROMPT_METRICS}, **{m.name: m.label for m in COMPARED_METRICS}}


def compared_figures(
    prompts: Sequence[str], texts: Sequence[str], max_words: int, score: QualityScorer | None
) -> dict[str, float]:
    """The ``COMPARED_METRICS`` of one prompt's stripped answers (those computed under these settings)."""
    figures = {m.name: m.of(prompts, texts, max_words, score) for m in COMPARED_METRICS}
    return {name: value for name, value in figures.items() if value is not None}


def mean_key(name: str) -> str:
    """The key of a metric's mean over prompts in eval novelty's metrics.json."""
    return f"mean_{name}"


def metric_columns(prompts: Sequence[PromptAnswers]) -> dict[str, list[float | None]]:
    """Every metric of every prompt: ``{name: [value per prompt]}`` (None where a metric does not apply)."""
    return {m.name: [m.of(p) for p in prompts] for m in PROMPT_METRICS}


def has_every_metric(folder: Path) -> bool:
    """``eval novelty`` finished in ``folder`` with a mean of every metric of this table (a folder scored before a
    metric was added has not: rerunning eval novelty there rescores it, its generations reused)."""
    path = Path(folder) / "metrics.json"
    return path.exists() and all(mean_key(name) in json.loads(path.read_text()) for name in PROMPT_METRIC_NAMES)
