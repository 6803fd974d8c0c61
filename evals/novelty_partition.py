"""The classifier side of ``darling eval novelty``: which scorer and threshold, and how each prompt's k
responses are partitioned into classes (``distinct`` = the number of classes).

Two partitions, named in every report:

- ``noveltybench`` (the default): NoveltyBench's own procedure (github.com/novelty-bench/novelty-bench,
  ``src/partition.py`` at 5b22b53; DARLING's evaluation fork keeps it). Greedy in generation order: a
  response that no earlier class took opens a class, and is then compared, as the class's first member, with
  every later response still unassigned; a response joins the first class (in order of opening) whose first
  member it matches. Match: ``P(equivalent | first member, response) > threshold`` (strictly; NoveltyBench's
  DeBERTa uses 0.102, our exports their own calibrated threshold), except when neither response has more than
  5 words: then ``2 * |shared lower-cased words| >= the longer one's word count`` decides and the classifier
  is not asked. Not transitive: a~b and b~c leave c out of a's class when c does not match a.
- ``union-find``: DARLING's training partition (``darling.classifier.partition``, the RL reward's): every pair decided
  at ``P >= threshold``, classes the transitive closure; no short-response rule.

Probabilities come in batches: a bi-encoder embeds each response once and reads every comparison from the
group's cosine matrix (``similarity_matrices``, also the Vendi score's kernels); a cross-encoder gets all
comparisons of one greedy step, across all prompts of a chunk, in one ``prob_equivalent`` call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from darling.classifier.config import BI_ENCODER
from darling.classifier.encoding import PairEncoder
from darling.classifier.export import META_FILE, ClassifierExport
from darling.core.devices import resolve_device
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer
from darling.evals.config import NOVELTYBENCH, PARTITIONS, UNION_FIND

if TYPE_CHECKING:  # torch-backed: the command reads its inputs before anything imports torch
    import numpy as np

    from darling.classifier.scoring import EmbeddingScorer, EquivalenceScorer
    from darling.evals.config import NoveltyConfig

DECISIONS = {NOVELTYBENCH: "P(equivalent) > threshold", UNION_FIND: "P(equivalent) >= threshold"}
SHORT_RESPONSE_WORDS = 5  # NoveltyBench's maybe_test_equality: both responses at most this many words

# P(equivalent) for a batch of (group, first member, response) comparisons, first member first.
PairProbs = Callable[[list[tuple[int, int, int]]], "Sequence[float] | np.ndarray"]


@dataclass
class NoveltyPartitionStats:
    pairs_total: int = 0  # n(n-1)/2 per prompt: what deciding every pair would cost
    pairs_compared: int = 0  # comparisons whose verdict the partition used
    pairs_short_rule: int = 0  # of those, decided by the short-response rule without the classifier
    scorer_calls: int = 0  # batched calls to the classifier
    texts_embedded: int = 0  # bi-encoder: distinct responses through the encoder

    def add(self, other: NoveltyPartitionStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def short_response_verdict(first: str, response: str) -> bool | None:
    """NoveltyBench's rule for short responses: None (ask the classifier) unless both have at most 5
    whitespace-separated words; then equivalent when twice the shared distinct lower-cased words reach the
    longer one's word count (a word keeps its punctuation, as in ``str.split``)."""
    a, b = first.strip().lower().split(), response.strip().lower().split()
    longer = max(len(a), len(b))
    if longer > SHORT_RESPONSE_WORDS:
        return None
    return len(set(a) & set(b)) * 2 >= longer


def greedy_first_member(
    groups: Sequence[Sequence[str]], probs: PairProbs, threshold: float
) -> tuple[list[list[int]], NoveltyPartitionStats]:
    """NoveltyBench's partition of every group, one greedy step of every group per call to ``probs``.

    Step s of a group: its earliest unassigned response opens class s and is compared with every later
    unassigned response. Within a step the comparisons are independent (all against the same first member),
    so batching them across groups decides exactly what NoveltyBench's pair-by-pair loop decides."""
    labels = [[-1] * len(g) for g in groups]
    opened = [0] * len(groups)
    stats = NoveltyPartitionStats(pairs_total=sum(len(g) * (len(g) - 1) // 2 for g in groups))
    while True:
        firsts = [(g, labels[g].index(-1)) for g in range(len(groups)) if -1 in labels[g]]
        if not firsts:
            break
        step: list[tuple[int, int, int]] = []
        for g, first in firsts:
            labels[g][first] = opened[g]
            opened[g] += 1
            step += [(g, first, j) for j in range(first + 1, len(groups[g])) if labels[g][j] < 0]
        verdicts = {c: short_response_verdict(groups[c[0]][c[1]], groups[c[0]][c[2]]) for c in step}
        asked = [c for c in step if verdicts[c] is None]
        if asked:
            p = probs(asked)
            if len(p) != len(asked):
                raise RuntimeError(f"the pair classifier returned {len(p)} probabilities for {len(asked)} pairs")
            verdicts.update({c: float(x) > threshold for c, x in zip(asked, p, strict=True)})
            stats.scorer_calls += 1
        for g, first, j in step:
            if verdicts[(g, first, j)]:
                labels[g][j] = labels[g][first]
        stats.pairs_compared += len(step)
        stats.pairs_short_rule += len(step) - len(asked)
    return labels, stats


def scorer_probs(groups: Sequence[Sequence[str]], scorer: EquivalenceScorer) -> PairProbs:
    """``probs`` for ``greedy_first_member`` from a cross-encoder, in-process or served: the (first member,
    response) pairs, in that order."""
    return lambda batch: scorer.prob_equivalent([(groups[g][i], groups[g][j]) for g, i, j in batch])


def _greedy_from_cosines(
    groups: Sequence[Sequence[str]], scorer: EquivalenceScorer, cosines: list[np.ndarray]
) -> tuple[list[list[int]], NoveltyPartitionStats]:
    """NoveltyBench's partition by a bi-encoder: every comparison read from its group's cosine matrix (``cosines``,
    one embedding call for all groups)."""
    probs = [cast("EmbeddingScorer", scorer).prob_from_cos(c) for c in cosines]  # every bi-encoder scorer is one
    classes, stats = greedy_first_member(groups, lambda batch: [probs[g][i, j] for g, i, j in batch], scorer.threshold)
    stats.texts_embedded = len({t for g in groups for t in g})
    stats.scorer_calls = int(stats.texts_embedded > 0)
    return classes, stats


def partition_responses(
    groups: Sequence[Sequence[str]], scorer: EquivalenceScorer, method: str
) -> tuple[list[list[int]], NoveltyPartitionStats]:
    """Class labels per group (numbered in order of first appearance) by ``method``, at ``scorer.threshold``."""
    from darling.classifier.partition import partition_texts  # loads torch: not before the settings are checked

    if method == UNION_FIND:
        classes, s = partition_texts(groups, scorer)
        return classes, NoveltyPartitionStats(s.pairs_total, s.pairs_decided, 0, s.rounds, s.texts_embedded)
    if method != NOVELTYBENCH:
        raise UserInputError(f"unknown partition {method!r}; choose one of {', '.join(PARTITIONS)}")
    if scorer.kind == BI_ENCODER:
        return _greedy_from_cosines(groups, scorer, scorer.similarity_matrices(groups))
    return greedy_first_member(groups, scorer_probs(groups, scorer), scorer.threshold)


def partition_with_kernels(
    groups: Sequence[Sequence[str]], scorer: EquivalenceScorer, method: str
) -> tuple[list[list[int]], NoveltyPartitionStats, list[np.ndarray]]:
    """``partition_responses`` and each group's similarity kernel (the Vendi score's). A bi-encoder under
    NoveltyBench's partition embeds each response once for both: its cosines are the kernel and, mapped to
    probabilities, the partition's comparisons."""
    if method == NOVELTYBENCH and scorer.kind == BI_ENCODER:
        kernels = scorer.similarity_matrices(groups)
        return (*_greedy_from_cosines(groups, scorer, kernels), kernels)
    classes, stats = partition_responses(groups, scorer, method)
    return classes, stats, scorer.similarity_matrices(groups)


# -- the classifier ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClassifierChoice:
    """The classifier and the threshold it decides at, read from its files once, before any generation (a typo
    fails fast); the scorer is loaded from this later, so the report and the decisions read the same threshold."""

    path: Path
    export: ClassifierExport | None  # None: a foreign 2-label HF classifier
    threshold: float
    threshold_source: str
    kind: str

    def describe(self) -> dict[str, Any]:
        return {
            "classifier": str(self.path),
            "kind": self.kind,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
        }


def check_classifier(config: NoveltyConfig) -> ClassifierChoice:
    path = Path(str(config.classifier))
    given = config.threshold is not None
    if (path / META_FILE).exists():
        export = ClassifierExport(path)
        where = f"served by {', '.join(config.classifier_urls)}" if config.classifier_urls else "in-process"
        if given:
            threshold, source = float(cast(float, config.threshold)), "--threshold"
        else:
            threshold, source = export.meta["threshold"], "the export's calibrated threshold, darling.json"
        return ClassifierChoice(path, export, threshold, source, f"darling {export.kind} export, {where}")
    if not (path / "config.json").exists():
        raise UserInputError(f"{path}: not a classifier directory (no darling.json or config.json)")
    if config.classifier_urls:
        raise UserInputError(f"{path}: --classifier-url needs a darling export (it holds the encoding)")
    if not given:
        raise UserInputError(f"{path}: not a darling export, so give its decision threshold with --threshold")
    threshold = float(cast(float, config.threshold))
    return ClassifierChoice(path, None, threshold, "--threshold", "HF sequence classifier, in-process")


def load_pair_scorer(config: NoveltyConfig, choice: ClassifierChoice) -> EquivalenceScorer:
    """A scorer: a darling export of either kind (in-process or served) or a foreign 2-label HF classifier,
    encoded ``[CLS] a[:128] [SEP] b[:128] [SEP]`` as NoveltyBench feeds its DeBERTa, P(equivalent) = label 1."""
    from darling.classifier.scoring import (  # loads torch: not before the settings are checked
        EquivalenceClassifier,
        load_scorer,
    )

    device = resolve_device(config.device)
    if choice.export is not None:
        batch_size = None if config.classifier_urls else config.batch_size  # forward passes here, not requests
        return load_scorer(choice.export, config.classifier_urls, choice.threshold, device, batch_size)
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(choice.path))
    if model.config.num_labels != 2:
        raise UserInputError(f"{choice.path}: a pair classifier needs 2 labels, this one has {model.config.num_labels}")
    encoder = PairEncoder(load_tokenizer(str(choice.path)), 128)
    scorer = EquivalenceClassifier(model.to(device), encoder, batch_size=config.batch_size)
    return scorer.with_threshold(choice.threshold)
