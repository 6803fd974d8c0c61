"""The pass@k advantage (Pass@k Training, arXiv 2508.10751): a response is credited for what it adds to the best
of k responses drawn from its group, not for its own reward alone.

For a group of n rewards and 1 <= k <= n, every k-subset S of the group is scored by its best reward, max(S)
(for 0/1 rewards: pass@k of the subset). The subsets' scores are standardised over all C(n, k) subsets,
a(S) = (max(S) - mu) / sigma (population std), and response i's advantage is the mean of a(S) over the subsets
that contain it. With 0/1 rewards this is the paper's closed form: correct responses get (1 - R) / sigma, wrong
ones (1 - R - C(n_wrong - 1, k - 1) / C(n - 1, k - 1)) / sigma, with R = 1 - C(n_wrong, k) / C(n, k) and
sigma = sqrt(R (1 - R)). Here it is computed exactly for any rewards from order statistics, in O(n^2) per group.

The advantages of a group sum to 0 (each subset's standardised score counts k times), so a trainer that centres
rewards per group without dividing by their std (TRL's ``scale_rewards = "none"``) turns these, returned as
rewards, into exactly these advantages. A group whose subsets all score the same (sigma = 0: every response
equal, or too few good ones to ever be missed) gets 0 everywhere. k = 1 is GRPO's centred reward divided by its
population std.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb


def _mean_std_max(values: Sequence[float], k: int) -> tuple[float, float]:
    """Mean and population std of max(S) over the k-subsets S of ``values``."""
    ordered = sorted(values, reverse=True)
    n, total = len(ordered), comb(len(ordered), k)
    # the j-th largest (0-based) is the max of the subsets that take it and k - 1 of the n - 1 - j below it
    weights = [comb(n - 1 - j, k - 1) / total for j in range(n)]
    mean = sum(w * v for w, v in zip(weights, ordered, strict=True))
    # two passes: subsets that all score the same give a std of (nearly) exactly 0, not the rounding of E[x^2] - mean^2
    variance = sum(w * (v - mean) ** 2 for w, v in zip(weights, ordered, strict=True))
    return mean, variance**0.5


def passk_advantages(rewards: Sequence[float], k: int) -> list[float]:
    """Each response's pass@k advantage within its group (see the module's docstring)."""
    n = len(rewards)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}] for a group of {n}, got {k}")
    mu, sigma = _mean_std_max(rewards, k)
    if sigma < 1e-9:
        return [0.0] * n
    out = []
    for i, r in enumerate(rewards):
        others = [x for j, x in enumerate(rewards) if j != i]
        # the subsets holding i: i and k - 1 of the others; their best is max(r, the best of those k - 1)
        mean_max = r if k == 1 else _mean_max_with(r, others, k - 1)
        out.append((mean_max - mu) / sigma)
    return out


def _mean_max_with(r: float, others: Sequence[float], m: int) -> float:
    """E[max(r, max(T))] over the m-subsets T of ``others``."""
    ordered = sorted(others, reverse=True)
    n, total = len(ordered), comb(len(ordered), m)
    return sum(max(r, v) * comb(n - 1 - j, m - 1) / total for j, v in enumerate(ordered))
