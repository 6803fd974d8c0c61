"""Word overlap of two texts, defined once: token and word n-gram Jaccard and ROUGE-1 F, what the word-overlap
baselines of ``eval classifier`` and of the packaged checks score (a classifier that does not beat them on the same
pairs has learnt word overlap, no more) and what the n-gram partition (DARLING's lexical ablation,
``darling.classifier.ngram``) decides with.

Tokens are lower-cased ``\\w+`` runs. ``ngram_jaccard(a, b, n)`` is |A ∩ B| / |A ∪ B| over the two texts' sets of
word n-grams, with the order lowered to the shorter text's word count when it has fewer than ``n`` words (so two
short answers are still compared by what they share, not called different for having no 4-gram at all). With
``n = 1`` it is token Jaccard.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads when scores are asked for, not when a config reads the n-gram rule's defaults
    import numpy as np

# The n-gram rule (DARLING's lexical ablation: the darling-ngram arm's partition, darling.classifier.ngram), defined
# once: its name, and the paper's defaults, two responses equivalent when they share at least half of their 4-grams.
NGRAM_RULE = "ngram"
NGRAM_ORDER = 4
NGRAM_THRESHOLD = 0.5


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def ngram_jaccard(a: str, b: str, n: int = 1) -> float:
    """Jaccard overlap of the word n-gram sets of ``a`` and ``b`` at order min(n, the shorter's word count); 0
    when either text has no word."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    wa, wb = tokens(a), tokens(b)
    order = min(n, len(wa), len(wb))
    if order == 0:
        return 0.0
    sa, sb = ngrams(wa, order), ngrams(wb, order)
    return len(sa & sb) / len(sa | sb)


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
    import numpy as np

    """The baseline ``key``'s score of every pair."""
    score = BASELINES[key][1]
    return np.array([score(a, b) for a, b in texts], dtype=float)
