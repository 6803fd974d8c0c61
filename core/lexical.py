"""Word overlap of two texts, defined once: token and word n-gram Jaccard, ROUGE-1 F and the content-word rule, what
the word-overlap baselines of ``eval classifier``, of the packaged checks and of a classifier's validation score (a
classifier that does not beat them on the same pairs has learnt word overlap, no more) and what the n-gram partition
(DARLING's lexical ablation, ``darling.classifier.ngram``) decides with.

Tokens are lower-cased ``\\w+`` runs. ``ngram_jaccard(a, b, n)`` is |A ∩ B| / |A ∪ B| over the two texts' sets of
word n-grams, with the order lowered to the shorter text's word count when it has fewer than ``n`` words (so two
short answers are still compared by what they share, not called different for having no 4-gram at all). With
``n = 1`` it is token Jaccard.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads when scores are asked for, not when a config reads the n-gram rule's defaults
    import numpy as np

    from darling.core.schemas import LabelledPair

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


# The content-word rule, defined once: two answers are the same when they share most of the words that carry their
# content, the words of the prompt they answer left out ("Name a planet..." -> "planet" says nothing of the answer).
# Where an answer's meaning is a name in a sentence (the item prompts), a learned classifier that does not beat this
# rule adds nothing a user could not write in ten lines.
CONTENT_RULE = "content-word rule"
# Two answers are the same when they share a content word (Jaccard > 0; one shared word of two 40-word answers is
# 1/79): of the Jaccard cut points, the one with the highest balanced accuracy on the item prompts' training
# categories (issue 67, docs/measurements.md), never on the held-out ones.
CONTENT_THRESHOLD = 1e-6


@cache
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (318 words), loaded when a content word is first asked for."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def content_words(text: str, prompt: str = "") -> set[str]:
    """The text's lower-cased ``\\w+`` tokens, less English stop words and the prompt's own tokens."""
    left_out = stop_words() | set(tokens(prompt))
    return {t for t in tokens(text) if t not in left_out}


def content_jaccard(a: str, b: str, prompt: str = "") -> float:
    """Jaccard overlap of the two answers' content words (``content_words``); 0 when either has none."""
    wa, wb = content_words(a, prompt), content_words(b, prompt)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


CONTENT_KEY = "content_rule"  # the content-word rule's key among the baselines (metrics.json, darling.json)
# key in metrics.json -> (row name, score of one pair: its two texts and the prompt they answer)
BASELINES: dict[str, tuple[str, Callable[[str, str, str], float]]] = {
    "jaccard": ("token Jaccard", lambda a, b, prompt: jaccard(a, b)),
    "rouge1": ("ROUGE-1 F", lambda a, b, prompt: rouge1_f(a, b)),
    CONTENT_KEY: (CONTENT_RULE, content_jaccard),
}


def overlap_scores(pairs: Sequence[LabelledPair], key: str) -> np.ndarray:
    """The baseline ``key``'s score of every pair (each read against its own prompt)."""
    import numpy as np

    score = BASELINES[key][1]
    return np.array([score(*p.texts, p.prompt) for p in pairs], dtype=float)
