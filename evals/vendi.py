"""The Vendi score (Friedman and Dieng, 2023): how many different answers a prompt's k answers hold, read from a
similarity kernel, with no threshold and no partition.

``VS_q(K) = exp(H_q(eigenvalues of K / k))``, K the k x k similarity of the answers (1 on the diagonal), H_q the
Rényi entropy of order q (q = 1: Shannon's, the paper's default; ``inf``: -log of the largest eigenvalue). It is 1
when every answer is the same and k when no two are alike. The kernel here is the eval classifier's own similarity
(``EquivalenceScorer.similarity_matrices``: a bi-encoder's cosine, a cross-encoder's P(equivalent) averaged over both
orders). A classifier's probabilities need not form a positive semi-definite kernel: as the ``vendi-score`` package
does, only the positive eigenvalues count.
"""

from __future__ import annotations

import math
from typing import Any

DEFAULT_ORDER = 1.0  # eval novelty's --vendi-order: read by its settings, which load no numpy


def vendi_kernel(kind: str | None) -> str:
    """What the Vendi score's similarity is for a classifier of this kind (an export's; None: a foreign one)."""
    if kind == "bi-encoder":
        return "the bi-encoder's cosine of the two answers' embeddings"
    return "the classifier's P(equivalent), both orders averaged (1 on the diagonal)"


def vendi_score(kernel: Any, q: float = DEFAULT_ORDER) -> float:
    """The Vendi score of order ``q`` of one prompt's answers from their k x k similarity ``kernel``."""
    import numpy as np  # loads numpy: only when answers are scored, never for a command's --help

    k = np.asarray(kernel, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1] or k.shape[0] == 0:
        raise ValueError(f"a Vendi kernel is a non-empty square matrix, got shape {k.shape}")
    eigenvalues = np.linalg.eigvalsh((k + k.T) / 2 / k.shape[0])
    p = eigenvalues[eigenvalues > 0]
    if q == 1:
        entropy = -float(np.sum(p * np.log(p)))
    elif math.isinf(q):
        entropy = -math.log(float(eigenvalues.max()))
    else:
        entropy = math.log(float(np.sum(p**q))) / (1 - q)
    return math.exp(entropy)
