"""The per-prompt metrics of a prompt's k answers, each defined once. ``eval novelty`` computes every one into
``per_prompt.parquet`` (a column each) and its mean into ``metrics.json`` (``mean_<name>``); ``eval compare``, the
pipeline's summary and report read them through this table. Adding a metric is one entry here (its function), its
test and its line in docs/evaluation.md."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from darling.core.quality import distinct_answers


@dataclass(frozen=True)
class PromptAnswers:
    """One prompt's k answers as eval novelty scored them, in generation order."""

    texts: Sequence[str]
    classes: Sequence[int]  # the eval partition's class id of each answer
    quality: Sequence[float]  # eval novelty's quality of each answer
    utility: float  # the prompt's utility (its method and patience are the evaluation's settings)


@dataclass(frozen=True)
class PromptMetric:
    name: str  # its column in per_prompt.parquet and its key in compare.json
    label: str  # how tables name it
    definition: str  # one line under a comparison's table
    of: Callable[[PromptAnswers], float]


PROMPT_METRICS: tuple[PromptMetric, ...] = (
    PromptMetric(
        "distinct",
        "distinct (eval partition)",
        "classes of eval novelty's partition (NoveltyBench's greedy partition: two answers of at most 5 words are "
        "compared by word overlap, longer ones by the classifier)",
        lambda a: float(len(set(a.classes))),
    ),
    PromptMetric(
        "distinct_answers",
        "distinct answers (exact)",
        "different answers after lower-casing and dropping punctuation (no classifier)",
        lambda a: float(distinct_answers(a.texts)),
    ),
    PromptMetric(
        "utility",
        "utility",
        "eval novelty's utility: the quality of the first answer of each class, repeats 0 (its method and patience)",
        lambda a: float(a.utility),
    ),
    PromptMetric("quality", "quality", "eval novelty's quality, mean per prompt", lambda a: fmean(a.quality)),
)
PROMPT_METRIC_NAMES = tuple(m.name for m in PROMPT_METRICS)


def mean_key(name: str) -> str:
    """The key of a metric's mean over prompts in eval novelty's metrics.json."""
    return f"mean_{name}"


def metric_columns(prompts: Sequence[PromptAnswers]) -> dict[str, list[float]]:
    """Every metric of every prompt: ``{name: [value per prompt]}``."""
    return {m.name: [m.of(p) for p in prompts] for m in PROMPT_METRICS}


def has_every_metric(folder: Path) -> bool:
    """``eval novelty`` finished in ``folder`` with a mean of every metric of this table (a folder scored before a
    metric was added has not: rerunning eval novelty there rescores it, its generations reused)."""
    path = Path(folder) / "metrics.json"
    return path.exists() and all(mean_key(name) in json.loads(path.read_text()) for name in PROMPT_METRIC_NAMES)
