"""``darling eval partitions``: how a classifier (and the n-gram and content-word rules) partitions a policy's
answers where a checker knows which answers are the same, the question behind every DARLING result on such a task:
does the reward's partition read meaning or wording?

Per answers set (an ``eval novelty`` folder: a policy's k answers per prompt), each partition is the one DARLING's
reward would make of those answers (``darling.classifier.partition``: union-find over the classifier's decisions at
its threshold; the ``darling-ngram`` arm's word n-gram rule), beside the checker's own (``darling.core.checkers``:
the ceiling, exact by definition). Reported per partition, over the pairs of answers of one prompt:

- **splits same-key pairs**: of the pairs whose two answers carry the same key (two sentences naming Mars), the share
  it puts in different classes: the rewording a DARLING policy is paid for;
- **joins different-key pairs**: of the pairs whose answers carry two different keys, the share it puts in one
  class: different answers it calls the same;
- classes per prompt, and the share of answers that carry a key at all (answers with none are never "the same");
- **AUC over keyed pairs**: how well each scorer's own score orders the pairs (same key above different keys) with no
  threshold: a classifier's P(equivalent), the n-gram rule's Jaccard, the content-word rule's Jaccard.

Shares are ratios of sums over prompts; shares and AUCs have percentile bootstrap 95% intervals over prompts.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darling.classifier.partition import ContentWordPartition, KeyPartition, Scorer, partition_texts
from darling.classifier.scoring import EmbeddingScorer, EquivalenceScorer
from darling.core.checkers import get_checker
from darling.core.devices import resolve_device
from darling.core.errors import UserInputError
from darling.core.lexical import CONTENT_RULE, NGRAM_ORDER, content_jaccard
from darling.core.numbers import percentile_interval
from darling.core.shards import atomic_write_bytes
from darling.evals.config import named
from darling.evals.partitions_config import PartitionsConfig
from darling.evals.partitions_report import CEILING, REPORT_FILE, RESULT_FILE, render

NGRAM_NAME = f"{NGRAM_ORDER}-gram rule"
N_BOOT = 2000  # bootstrap draws over prompts


def read_answers(folder: Path) -> list[tuple[str, list[str]]]:
    """(prompt, its answers in sample order) per prompt of an ``eval novelty`` folder."""
    import polars as pl

    scores = Path(folder) / "scores.parquet"
    if not scores.exists():
        raise UserInputError(f"{scores}: no eval novelty scores (run `darling eval novelty` into that folder)")
    frame = pl.read_parquet(scores).sort("prompt_id", "sample_index")
    return [
        (group["prompt"][0], [t.strip() for t in group["response"].to_list()])
        for _, group in frame.group_by("prompt_id", maintain_order=True)
    ]


def same_class(classes: Sequence[int]) -> np.ndarray:
    """Per answer pair (i < j, in order), whether the two share a class."""
    return np.array([classes[i] == classes[j] for i, j in itertools.combinations(range(len(classes)), 2)], dtype=bool)


def ratio(per_prompt: list[tuple[int, int]], rng: np.random.Generator) -> dict[str, Any]:
    """Sum of numerators over sum of denominators, and its bootstrap 95% interval over prompts (None: no pair)."""
    values = np.array(per_prompt, dtype=float).reshape(-1, 2)
    total = values.sum(axis=0)
    if total[1] == 0:
        return {"share": None, "interval": None, "pairs": 0}
    draws = values[rng.integers(0, len(values), (N_BOOT, len(values)))].sum(axis=1)
    kept = draws[draws[:, 1] > 0]
    return {
        "share": float(total[0] / total[1]),
        "interval": percentile_interval(kept[:, 0] / kept[:, 1]),
        "pairs": int(total[1]),
    }


def partition_row(
    classes: list[list[int]], keys: list[list[str | None]], single: list[list[str | None]], rng: np.random.Generator
) -> dict[str, Any]:
    """One partition's figures against the checker's keys, over every prompt: over every pair of keyed answers, and
    over the pairs of answers that name one key each (``single``), whose labels carry no first-mention convention."""
    return {
        "classes_per_prompt": float(np.mean([len(set(c)) for c in classes])),
        **key_figures(classes, keys, rng),
        "one_key": key_figures(classes, single, rng),
    }


def key_figures(classes: list[list[int]], keys: list[list[str | None]], rng: np.random.Generator) -> dict[str, Any]:
    """Splits of same-key pairs and joins of different-key pairs (pairs with a None key on either side: neither)."""
    splits, joins = [], []
    for cs, ks in zip(classes, keys, strict=True):
        joined = same_class(cs)
        pairs = list(itertools.combinations(ks, 2))
        keyed = np.array([a is not None and b is not None for a, b in pairs], dtype=bool)
        same_key = keyed & np.array([a == b for a, b in pairs], dtype=bool)
        different_key = keyed & ~same_key
        splits.append((int((same_key & ~joined).sum()), int(same_key.sum())))
        joins.append((int((different_key & joined).sum()), int(different_key.sum())))
    return {"splits_same_key": ratio(splits, rng), "joins_different_keys": ratio(joins, rng)}


def rank_auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """ROC AUC as the rank statistic (ties at their mean rank, as scikit-learn's ``roc_auc_score``); None unless
    both labels occur."""
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if not positives or not negatives:
        return None
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]  # 1-based, ties at their mean
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def pair_scores(scorer: Scorer, data: list[tuple[str, list[str]]]) -> list[np.ndarray] | None:
    """Per prompt, the scorer's score of each answer pair (i < j, in order); None for a partition without a score
    (the checker's own)."""
    groups = [answers for _, answers in data]
    if isinstance(scorer, ContentWordPartition):
        return [
            np.array([content_jaccard(a, b, prompt) for a, b in itertools.combinations(answers, 2)])
            for prompt, answers in data
        ]
    if isinstance(scorer, EmbeddingScorer):  # every text embedded once
        return [matrix[np.triu_indices(len(matrix), k=1)] for matrix in scorer.prob_matrices(groups)]
    if isinstance(scorer, EquivalenceScorer):
        pairs = [pair for answers in groups for pair in itertools.combinations(answers, 2)]
        flat = np.asarray(scorer.prob_equivalent(pairs), dtype=float)
        ends = np.cumsum([len(g) * (len(g) - 1) // 2 for g in groups])
        return np.split(flat, ends[:-1])
    return None


def auc_figure(scores: list[np.ndarray], keys: list[list[str | None]], rng: np.random.Generator) -> dict[str, Any]:
    """AUC of the scores over every pair of keyed answers (label: the same key), with its bootstrap interval over
    prompts."""
    kept_scores, kept_labels = [], []
    for prompt_scores, ks in zip(scores, keys, strict=True):
        pairs = list(itertools.combinations(ks, 2))
        keyed = np.array([a is not None and b is not None for a, b in pairs], dtype=bool)
        same = np.array([a == b for a, b in pairs], dtype=bool)
        kept_scores.append(prompt_scores[keyed] if len(pairs) else prompt_scores)
        kept_labels.append(same[keyed] if len(pairs) else same)
    auc = rank_auc(np.concatenate(kept_scores), np.concatenate(kept_labels))
    if auc is None:
        return {"auc": None, "interval": None, "pairs": int(sum(len(x) for x in kept_labels))}
    draws = []
    for _ in range(N_BOOT):
        idx = rng.integers(0, len(kept_scores), len(kept_scores))
        drawn = rank_auc(np.concatenate([kept_scores[i] for i in idx]), np.concatenate([kept_labels[i] for i in idx]))
        if drawn is not None:
            draws.append(drawn)
    return {
        "auc": auc,
        "interval": percentile_interval(np.array(draws)),
        "pairs": int(sum(len(x) for x in kept_labels)),
    }


def answers_table(data: list[tuple[str, list[str]]], scorers: dict[str, Scorer], checker_name: str, seed: int):
    """Every partition of one answers set, beside the checker's."""
    checker = get_checker(checker_name)
    prompts = [p for p, _ in data]
    checker.require(prompts, "the answers")
    groups = [answers for _, answers in data]
    keys = [checker.keys(p, answers) for p, answers in data]
    single = [[checker.single_key(p, a) for a in answers] for p, answers in data]
    rng = np.random.default_rng(seed)
    partitions = {CEILING: partition_texts(groups, KeyPartition(checker), prompts=prompts)[0]}
    partitions |= {name: partition_texts(groups, scorer, prompts=prompts)[0] for name, scorer in scorers.items()}
    keyed = [k is not None for ks in keys for k in ks]
    one_key = [k is not None for ks in single for k in ks]
    scored = {name: pair_scores(scorer, data) for name, scorer in scorers.items()}
    return {
        "auc": {name: auc_figure(scores, keys, rng) for name, scores in scored.items() if scores is not None},
        "prompts": len(groups),
        "answers": len(keyed),
        "keyed_share": float(np.mean(keyed)) if keyed else None,
        "one_key_share": float(np.mean(one_key)) if one_key else None,
        "partitions": {name: partition_row(classes, keys, single, rng) for name, classes in partitions.items()},
    }


def load_scorers(config: PartitionsConfig) -> dict[str, Scorer]:
    """Each classifier as DARLING's reward partitions with it, then the n-gram and the content-word rules."""
    from darling.classifier.ngram import ngram_scorer  # loads torch (through scoring)
    from darling.classifier.scoring import load_scorer  # loads torch

    device = resolve_device(config.device)
    scorers: dict[str, Scorer] = {
        name: load_scorer(path, device=device) for name, path in named(config.classifier, "--classifier").items()
    }
    if config.ngram:
        scorers[NGRAM_NAME] = ngram_scorer()
    if config.content_rule:
        scorers[CONTENT_RULE] = ContentWordPartition()
    return scorers


def evaluate_partitions(config: PartitionsConfig) -> dict[str, Any]:
    """Every answers set's table, written to ``partitions.json`` and ``report.md`` in ``config.output``."""
    answers = {name: read_answers(folder) for name, folder in named(config.answers, "--answers").items()}
    for name, data in answers.items():  # refused before any classifier loads
        get_checker(config.checker).require([p for p, _ in data], f"--answers {name}")
    scorers = load_scorers(config)
    result = {
        "checker": config.checker,
        "classifiers": {name: str(path) for name, path in named(config.classifier, "--classifier").items()},
        "sets": {name: answers_table(data, scorers, config.checker, config.seed) for name, data in answers.items()},
    }
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(output / RESULT_FILE, (json.dumps(result, indent=1) + "\n").encode())
    atomic_write_bytes(output / REPORT_FILE, render(result).encode())
    return result
