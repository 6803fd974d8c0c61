"""Partition each prompt's responses into equivalence classes: union-find over pairwise decisions.

Equivalence is made transitive as in the paper (a~b and b~c put a, b, c in one class).

- A bi-encoder scorer embeds every response of the batch once (n encoder passes per group) and decides all
  n(n-1)/2 pairs of a group from its cosine matrix.
- A cross-encoder needs one pass per pair. A pair whose two responses are already in one class cannot change
  the partition whatever the classifier says, so it is never sent (transitivity pruning). To keep requests
  large, pairs are decided in rounds over a whole RL batch: round r asks about (r, j) for every j > r in every
  group, skipping pairs already joined. Every pair is either decided or already joined when its round comes,
  so the partition is exactly the one obtained by deciding all n(n-1)/2 pairs (property-tested).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from darling.classifier.scoring import EmbeddingScorer, EquivalenceScorer
from darling.core.checkers import Checker, key_classes
from darling.core.lexical import CONTENT_RULE, CONTENT_THRESHOLD, content_jaccard

# Decides a batch of (group index, i, j) pairs: True where responses i and j of that group are equivalent.
DecidePairs = Callable[[list[tuple[int, int, int]]], Sequence[bool]]


class UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]  # path halving
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)  # the smaller index stays root: stable class labels

    def classes(self) -> list[int]:
        """Class index per element, numbered in order of first appearance (0, 1, ...)."""
        label: dict[int, int] = {}
        return [label.setdefault(self.find(i), len(label)) for i in range(len(self.parent))]


@dataclass(frozen=True)
class PartitionStats:
    pairs_total: int  # n(n-1)/2 summed over groups: what deciding every pair costs
    pairs_decided: int  # pairs decided by the classifier (a bi-encoder decides all, from one matrix per group)
    rounds: int  # batched calls to the scorer
    texts_embedded: int = 0  # bi-encoder: responses run through the encoder (distinct texts not embedded before)

    @property
    def pairs_saved(self) -> int:
        return self.pairs_total - self.pairs_decided


def partition_groups(
    sizes: Sequence[int], decide: DecidePairs, prune: bool = True
) -> tuple[list[list[int]], PartitionStats]:
    """Class labels for every group (``sizes[g]`` responses each), deciding pairs in batched rounds."""
    forests = [UnionFind(n) for n in sizes]
    total = sum(n * (n - 1) // 2 for n in sizes)
    decided = rounds = 0
    for r in range(max(sizes, default=0) - 1):
        batch = [
            (g, r, j)
            for g, n in enumerate(sizes)
            if r < n
            for j in range(r + 1, n)
            if not (prune and forests[g].find(r) == forests[g].find(j))
        ]
        if not batch:
            continue
        verdicts = decide(batch)
        if len(verdicts) != len(batch):
            raise RuntimeError(f"the pair classifier returned {len(verdicts)} decisions for {len(batch)} pairs")
        for (g, i, j), same in zip(batch, verdicts, strict=True):
            if same:
                forests[g].union(i, j)
        decided += len(batch)
        rounds += 1
    return [f.classes() for f in forests], PartitionStats(total, decided, rounds)


def partition_matrices(decisions: Sequence[np.ndarray]) -> list[list[int]]:
    """Class labels per group from its full n x n boolean decision matrix (every pair decided)."""
    out = []
    for matrix in decisions:
        forest = UnionFind(len(matrix))
        for i, j in zip(*np.nonzero(np.triu(matrix, k=1)), strict=True):
            forest.union(int(i), int(j))
        out.append(forest.classes())
    return out


class PromptPartition:
    """A partition no model decides that reads each group's prompt as well as its answers."""

    kind = ""

    def classes(self, prompts: Sequence[str], groups: Sequence[Sequence[str]]) -> list[list[int]]:
        raise NotImplementedError


class KeyPartition(PromptPartition):
    """Each group's answers by the key a checker reads off them (``darling.core.checkers``), the exact partition
    where a task has one."""

    kind = "checker"

    def __init__(self, checker: Checker):
        self.checker = checker

    def classes(self, prompts: Sequence[str], groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return [key_classes(self.checker.keys(p, g)) for p, g in zip(prompts, groups, strict=True)]


class ContentWordPartition(PromptPartition):
    """The content-word rule (``darling.core.lexical``): union-find over "these two answers share enough of their
    content words", the prompt's own words left out. What a learned classifier must beat to have learnt more than
    the words."""

    kind = CONTENT_RULE

    def __init__(self, threshold: float = CONTENT_THRESHOLD):
        self.threshold = threshold

    def classes(self, prompts: Sequence[str], groups: Sequence[Sequence[str]]) -> list[list[int]]:
        out = []
        for prompt, group in zip(prompts, groups, strict=True):
            forest = UnionFind(len(group))
            for i, j in itertools.combinations(range(len(group)), 2):
                if content_jaccard(group[i], group[j], prompt) >= self.threshold:
                    forest.union(i, j)
            out.append(forest.classes())
        return out


Scorer = EquivalenceScorer | PromptPartition | Callable[[list[tuple[str, str]]], Sequence[bool]]


def partition_texts(
    groups: Sequence[Sequence[str]], scorer: Scorer, prune: bool = True, prompts: Sequence[str] | None = None
) -> tuple[list[list[int]], PartitionStats]:
    """Partition groups of texts with a scorer of either kind, any ``is_equivalent(list of (a, b)) -> bools``, or a
    rule that reads the prompt too (``PromptPartition``: ``prompts``, one per group, needed)."""
    total = sum(len(g) * (len(g) - 1) // 2 for g in groups)
    if isinstance(scorer, PromptPartition):
        if prompts is None:
            raise ValueError(f"the {scorer.kind} partition reads each group's prompt: pass prompts")
        return scorer.classes(prompts, groups), PartitionStats(total, 0, 0)
    if isinstance(scorer, EmbeddingScorer):
        probs = scorer.prob_matrices(groups)
        classes = partition_matrices([p >= scorer.threshold for p in probs])
        return classes, PartitionStats(total, total, 1, scorer.last_embedded)
    is_equivalent = scorer.is_equivalent if isinstance(scorer, EquivalenceScorer) else scorer

    def decide(batch: list[tuple[int, int, int]]) -> Sequence[bool]:
        return [bool(x) for x in is_equivalent([(groups[g][i], groups[g][j]) for g, i, j in batch])]

    return partition_groups([len(g) for g in groups], decide, prune=prune)
