"""The n-gram partition: DARLING's lexical ablation, its classifier replaced by word overlap.

The paper's case for a learned partition is this ablation: with a 4-gram diversity instead of the classifier,
NoveltyBench distinct falls and math pass@1 drops below GRPO's, because the policy pads answers to look lexically
new. Here it is the same partition (union-find over pair decisions, ``darling.classifier.partition``) with a
scorer that reads no model: P(equivalent) := the Jaccard overlap of the two responses' word n-gram sets
(``darling.core.lexical.ngram_jaccard``: lower-cased ``\\w+`` tokens, order min(n, the shorter's word count)), and
two responses equivalent when it is >= the threshold. Defaults: n = 4 (the paper's), threshold 0.5 (they share at
least half of their n-grams). It is an ``EquivalenceScorer``, so every path that takes a classifier takes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from darling.classifier.scoring import EquivalenceScorer, Pair
from darling.core.lexical import NGRAM_ORDER, NGRAM_RULE, NGRAM_THRESHOLD, ngram_jaccard

NGRAM = NGRAM_RULE  # the scorer's kind


class NgramScorer(EquivalenceScorer):
    kind = NGRAM
    symmetric = False  # Jaccard is symmetric: there is no order to average

    def __init__(self, n: int = NGRAM_ORDER):
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        self.n = n

    def prob_equivalent(self, pairs: Sequence[Pair], symmetric: bool | None = None) -> np.ndarray:
        return np.array([ngram_jaccard(a, b, self.n) for a, b in pairs], dtype=np.float64)


def ngram_scorer(n: int = NGRAM_ORDER, threshold: float = NGRAM_THRESHOLD) -> NgramScorer:
    """Responses equivalent when they share at least ``threshold`` of their word ``n``-grams (Jaccard)."""
    return NgramScorer(n).with_threshold(threshold)
