"""The bi-encoder kind: one shared encoder embeds each response; P(equivalent) = sigmoid(a * cos + b).

A group of n responses costs n encoder passes and an n x n cosine matrix, where the cross-encoder needs a
pass per pair. Pooling is the backbone's own (mean for MiniLM and other sentence-transformers encoders,
last token for Qwen3-Embedding), read from its sentence-transformers files when it has them; embeddings are
L2-normalised, so the cosine is a dot product. ``a`` and ``b`` are learned with the encoder, which makes
the probability calibrated rather than only a ranking.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from darling.classifier.layer_cache import top_layers
from darling.core.encoders import POOLINGS, pool
from darling.core.errors import UserInputError


class BiEncoder(nn.Module):
    """A transformers encoder (``AutoModel``) + pooling + normalisation + the affine map of the cosine."""

    def __init__(self, backbone: nn.Module, pooling: str, scale: float = 20.0, bias: float = -10.0):
        super().__init__()
        if pooling not in POOLINGS:
            raise UserInputError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        self.backbone = backbone
        self.pooling = pooling
        self.scale = nn.Parameter(torch.tensor(float(scale)))
        self.bias = nn.Parameter(torch.tensor(float(bias)))

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return F.normalize(pool(hidden, attention_mask, self.pooling).float(), dim=-1)

    def embed_cached(self, hidden: torch.Tensor, attention_mask: torch.Tensor, frozen_layers: int) -> torch.Tensor:
        """``embed`` from the cached output of the frozen lower layers (layer_cache.py)."""

        hidden = top_layers(self.backbone, frozen_layers, hidden, attention_mask)
        return F.normalize(pool(hidden, attention_mask, self.pooling).float(), dim=-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and cosines for a batch laid out as [a_1..a_B, b_1..b_B] (one pass for both sides)."""
        return self.pair_logits(self.embed(input_ids, attention_mask))

    def pair_logits(self, emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        half = emb.shape[0] // 2
        cos = (emb[:half] * emb[half:]).sum(-1)
        return self.scale * cos + self.bias, cos

    def logit(self, cos: np.ndarray | torch.Tensor):
        return float(self.scale) * cos + float(self.bias)


# A similarity's probability must rise with the cosine: a at or below 0 ranks every pair backwards, and a and b learn
# too slowly (head_learning_rate) to climb out of a negative start within a run (issue 48: the item-rule pairs'
# folds whose sampled start fitted a = -2.3 ranked NoveltyBench's held-out pairs at AUC 0.34).
MIN_SCALE = 0.1


def fit_affine(cos: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) of a logistic regression of the labels on the cosine (Platt scaling), unregularised. a <= 0 means the
    cosine ranks these pairs backwards: training does not start from such a fit (``init_affine``)."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray(labels).astype(int)
    if len(set(labels.tolist())) < 2:
        raise UserInputError("fitting the cosine's affine map needs pairs of both labels")
    lr = LogisticRegression(C=1e6, max_iter=1000).fit(np.asarray(cos, dtype=float).reshape(-1, 1), labels)
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])
