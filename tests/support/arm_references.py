"""Independent references for the other diversity arms (issue 39), written from their definitions without darling's
code paths: tests/rl/test_diversity_methods.py and tests/rl/test_arms.py compare darling's results with them."""

import itertools
import re
from math import comb

from darling.classifier.partition import UnionFind


def subsets_reference(rewards: list[float], k: int) -> list[float]:
    """Every k-subset scored by its best reward, standardised over all subsets (population std), and each
    response's advantage the mean over the subsets that hold it: the definition, enumerated."""
    subsets = list(itertools.combinations(range(len(rewards)), k))
    best = [max(rewards[i] for i in s) for s in subsets]
    mu = sum(best) / len(best)
    sigma = (sum((b - mu) ** 2 for b in best) / len(best)) ** 0.5
    if sigma < 1e-12:
        return [0.0] * len(rewards)
    return [
        sum((b - mu) / sigma for s, b in zip(subsets, best, strict=True) if i in s) / comb(len(rewards) - 1, k - 1)
        for i in range(len(rewards))
    ]


def closed_form(correct: list[int], k: int) -> list[float]:
    """Pass@k Training (arXiv 2508.10751), its analytical advantages for 0/1 rewards."""
    n, wrong = len(correct), correct.count(0)
    r = 1 - comb(wrong, k) / comb(n, k)
    sigma = (r * (1 - r)) ** 0.5
    if sigma == 0:
        return [0.0] * n
    positive = (1 - r) / sigma
    negative = (1 - r - comb(wrong - 1, k - 1) / comb(n - 1, k - 1)) / sigma
    return [positive if c else negative for c in correct]


def reference_ngram_equivalent(a: str, b: str, n: int, threshold: float) -> bool:
    """From scratch: lower-cased word runs, the n-gram order lowered to the shorter text's length."""
    wa, wb = re.findall(r"\w+", a.lower()), re.findall(r"\w+", b.lower())
    order = min(n, len(wa), len(wb))
    if order == 0:
        return threshold <= 0.0
    ga = {" ".join(wa[i : i + order]) for i in range(len(wa) - order + 1)}
    gb = {" ".join(wb[i : i + order]) for i in range(len(wb) - order + 1)}
    return len(ga & gb) / len(ga | gb) >= threshold


def every_pair_partition(group: list[str], n: int, threshold: float) -> list[int]:
    forest = UnionFind(len(group))
    for i, j in itertools.combinations(range(len(group)), 2):
        if reference_ngram_equivalent(group[i], group[j], n, threshold):
            forest.union(i, j)
    return forest.classes()
