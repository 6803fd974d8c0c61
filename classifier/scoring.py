"""In-process scoring of response pairs with an exported (or in-memory) equivalence classifier."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from darling.classifier.backbones import EQUIVALENT_INDEX, load_exported_classifier_strict, load_tokenizer
from darling.classifier.encoding import PairEncoder
from darling.classifier.export import read_export_meta

Pair = tuple[str, str]


class PairScorer:
    """P(equivalent) for response pairs through ``probs_for_ids``; subclasses decide where the model runs.

    ``symmetric`` averages the probabilities of both orders (the model sees (a, b) and (b, a) in
    training, but a single order is not guaranteed to give the same answer).
    """

    def __init__(self, encoder: PairEncoder, threshold: float = 0.5, symmetric: bool = False):
        self.encoder = encoder
        self.threshold = threshold
        self.symmetric = symmetric

    def probs_for_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        raise NotImplementedError

    def prob_equivalent(self, pairs: Sequence[Pair], symmetric: bool | None = None) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        symmetric = self.symmetric if symmetric is None else symmetric
        ids = self.encoder.encode_pairs(pairs)
        if symmetric:
            ids += self.encoder.encode_pairs([(b, a) for a, b in pairs])
        probs = self.probs_for_ids(ids)
        return (probs[: len(pairs)] + probs[len(pairs) :]) / 2 if symmetric else probs

    def is_equivalent(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self.prob_equivalent(pairs) >= self.threshold


class EquivalenceClassifier(PairScorer):
    """In-process scorer: the model in this process, batched longest-first so padding stays small."""

    def __init__(
        self, model, encoder: PairEncoder, threshold: float = 0.5, symmetric: bool = False, batch_size: int = 32
    ):
        super().__init__(encoder, threshold, symmetric)
        self.model = model.eval()
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(
        cls, path: str | Path, device: str | None = None, batch_size: int = 32
    ) -> EquivalenceClassifier:
        meta = read_export_meta(path)
        model = load_exported_classifier_strict(path)
        if device:
            model = model.to(device)
        encoder = PairEncoder(load_tokenizer(str(path)), meta["max_tokens_per_response"])
        return cls(model, encoder, meta["threshold"], meta.get("symmetric", False), batch_size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.inference_mode()
    def logits_for_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        order = sorted(range(len(input_ids)), key=lambda i: -len(input_ids[i]))
        out = np.zeros((len(input_ids), 2), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = {k: v.to(self.device) for k, v in self.encoder.pad([input_ids[i] for i in idx]).items()}
            out[idx] = self.model(**batch).logits.float().cpu().numpy()
        return out

    def probs_for_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        return torch.from_numpy(self.logits_for_ids(input_ids)).softmax(-1)[:, EQUIVALENT_INDEX].numpy()
