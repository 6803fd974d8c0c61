"""Word overlap of two texts, defined once: what ``eval classifier``'s word-overlap baselines score and what the
n-gram partition (DARLING's lexical ablation, ``darling.classifier.ngram``) decides with.

Tokens are lower-cased ``\\w+`` runs. ``ngram_jaccard(a, b, n)`` is |A ∩ B| / |A ∪ B| over the two texts' sets of
word n-grams, with the order lowered to the shorter text's word count when it has fewer than ``n`` words (so two
short answers are still compared by what they share, not called different for having no 4-gram at all). With
``n = 1`` it is token Jaccard.
"""

from __future__ import annotations

import re


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
