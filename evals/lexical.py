"""Word-overlap baselines for ``darling eval classifier``: token Jaccard and ROUGE-1 F of a pair's two texts,
used as a score in [0, 1] with a threshold fitted on labelled pairs, exactly like a classifier's P(equivalent).

A classifier that does not beat these on the same pairs has learnt word overlap, no more. Tokens are lower-cased
``\\w+`` runs (the same for both baselines, so they differ only in set vs multiset overlap).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from darling.core.lexical import ngram_jaccard, tokens


def jaccard(a: str, b: str) -> float:
    """|A ∩ B| / |A ∪ B| over the two texts' token sets (0 when either has no token)."""
    return ngram_jaccard(a, b, 1)


def rouge1_f(a: str, b: str) -> float:
    """ROUGE-1 F1: harmonic mean of unigram precision and recall, tokens counted with multiplicity."""
    ca, cb = Counter(tokens(a)), Counter(tokens(b))
    overlap = sum((ca & cb).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(cb.values()), overlap / sum(ca.values())
    return 2 * precision * recall / (precision + recall)


# key in metrics.json -> (row name, score of one pair)
BASELINES: dict[str, tuple[str, Callable[[str, str], float]]] = {
    "jaccard": ("token Jaccard", jaccard),
    "rouge1": ("ROUGE-1 F", rouge1_f),
}


def overlap_scores(texts: Sequence[tuple[str, str]], key: str) -> np.ndarray:
    """The baseline ``key``'s score of every pair."""
    score = BASELINES[key][1]
    return np.array([score(a, b) for a, b in texts], dtype=float)
