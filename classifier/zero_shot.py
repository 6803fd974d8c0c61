"""A zero-shot bi-encoder: an untrained embedding backbone (cosine of its own pooled, normalised embeddings)
whose a, b (P = sigmoid(a * cos + b)) and decision threshold are fitted on given labelled pairs.

It shows what fine-tuning adds: ``darling eval classifier --zero-shot BACKBONE --fit-data TRAIN`` scores it
beside a trained export on the same held-out pairs.
"""

from __future__ import annotations

import logging

import numpy as np

from darling.classifier.bi_encoder import BiEncoder, fit_affine
from darling.classifier.calibration import choose_threshold
from darling.classifier.encoding import TextEncoder
from darling.classifier.scoring import BiEncoderClassifier
from darling.core.encoders import backbone_pooling, load_backbone_encoder, resolve_backbone
from darling.core.local_models import load_tokenizer
from darling.core.schemas import LabelledPair

log = logging.getLogger(__name__)

# RoBERTa-family encoders number positions from padding_idx + 1, so two of their position slots are never usable.
OFFSET_POSITIONS = {"roberta": 2, "xlm-roberta": 2, "mpnet": 2, "camembert": 2}


def default_budget(config) -> int:
    """Tokens per response that fit the backbone's positions beside its two special tokens."""
    positions = min(getattr(config, "max_position_embeddings", 2050), 8194)
    return positions - 2 - OFFSET_POSITIONS.get(getattr(config, "model_type", ""), 0)


def untrained_classifier(
    backbone: str,
    max_tokens_per_response: int | None = None,
    batch_size: int = 32,
    trust_remote_code: bool = False,
    device: str = "cpu",
) -> BiEncoderClassifier:
    """``backbone`` as it is, on ``device`` (a and b at their defaults; ``zero_shot_classifier`` fits them)."""
    path = resolve_backbone(backbone)
    hf_model = load_backbone_encoder(path, trust_remote_code).to(device)
    if max_tokens_per_response is None:
        max_tokens_per_response = default_budget(hf_model.config)
    encoder = TextEncoder(load_tokenizer(path, trust_remote_code), max_tokens_per_response)
    pooling = backbone_pooling(path, hf_model.config)
    return BiEncoderClassifier(BiEncoder(hf_model, pooling), encoder, batch_size=batch_size)


def zero_shot_classifier(
    backbone: str,
    fit_pairs: list[LabelledPair],
    max_tokens_per_response: int | None = None,
    objective: str = "balanced_accuracy",
    batch_size: int = 32,
    trust_remote_code: bool = False,
    device: str = "cpu",
) -> BiEncoderClassifier:
    """``backbone`` untrained; a, b by logistic regression and the threshold by ``objective`` on ``fit_pairs``.

    The default budget is the backbone's usable positions minus its two special tokens (MiniLM: 510; MPNet: 510)."""
    clf = untrained_classifier(backbone, max_tokens_per_response, batch_size, trust_remote_code, device)
    emb = clf.embed([t for p in fit_pairs for t in p.texts])
    cos = np.einsum("ij,ij->i", emb[0::2], emb[1::2])
    labels = np.array([p.similar for p in fit_pairs])
    clf.scale, clf.bias = fit_affine(cos, labels)
    if clf.scale <= 0:  # kept, as fitted: the row reports what the untrained cosine does on these pairs
        log.warning("the untrained cosine ranks the fit pairs backwards (a = %.3g): P falls as it rises", clf.scale)
    clf.model.scale.data.fill_(clf.scale)
    clf.model.bias.data.fill_(clf.bias)
    return clf.with_threshold(choose_threshold(labels, clf.prob_from_cos(cos), objective))
