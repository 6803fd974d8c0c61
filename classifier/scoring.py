"""Scoring response pairs with an exported (or in-memory) equivalence classifier, either kind.

Every scorer, in-process or served, cross-encoder or bi-encoder, has one API: ``prob_equivalent(pairs)``
and ``is_equivalent(pairs)`` at its exported threshold. Bi-encoder scorers also give whole-group
probability matrices (``prob_matrices``): each response embedded once, every pair decided from the cosine
matrix, which is how the partition uses them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import numpy as np
import torch

from darling.classifier.backbones import EQUIVALENT_INDEX, load_exported_strict
from darling.classifier.bi_encoder import BiEncoder
from darling.classifier.config import BI_ENCODER, CROSS_ENCODER
from darling.classifier.encoding import PairEncoder, TextEncoder
from darling.classifier.export import ClassifierExport, uses_segment_ids
from darling.core.devices import module_device
from darling.core.errors import UserInputError
from darling.core.pooling_client import ClassifyClient, EmbedClient, PoolingClient

Pair = tuple[str, str]
UNCALIBRATED = 0.5  # the decision of a scorer no threshold was chosen for yet (P >= 0.5: the likelier class)


class EquivalenceScorer:
    """P(equivalent) for response pairs and decisions at ``threshold``; subclasses decide how and where.

    A scorer is built at ``UNCALIBRATED``; ``with_threshold`` is the one way to decide elsewhere (an export's
    calibrated threshold, ``--threshold``, a test's): it returns a copy, so a scorer's decisions never change
    under a caller that holds it."""

    kind: str = ""
    dtype: str = "float32"  # the precision the model computes in (an export's ``dtype``)
    symmetric: bool  # both orders averaged (PairScorer: per scorer; EmbeddingScorer: False, the cosine is symmetric)
    _threshold: float = UNCALIBRATED

    @property
    def threshold(self) -> float:
        return self._threshold

    def with_threshold(self, threshold: float) -> Self:
        """This scorer deciding ``P >= threshold`` (a shallow copy: the model and client are shared)."""
        threshold = float(threshold)
        if not 0.0 <= threshold <= 1.0:
            raise UserInputError(f"a decision threshold is a probability in [0, 1], got {threshold}")
        scorer = copy.copy(self)
        scorer._threshold = threshold
        return scorer

    def prob_equivalent(self, pairs: Sequence[Pair], symmetric: bool | None = None) -> np.ndarray:
        raise NotImplementedError

    def is_equivalent(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self.prob_equivalent(pairs) >= self.threshold

    def similarity_matrices(self, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Each group's k x k similarity for a kernel (the Vendi score): P(equivalent) of every pair, both orders
        averaged so that it is symmetric, 1 on the diagonal; every pair of every group scored in one call."""
        index = [
            (g, i, j) for g, texts in enumerate(groups) for i in range(len(texts)) for j in range(i + 1, len(texts))
        ]
        probs = self.prob_equivalent([(groups[g][i], groups[g][j]) for g, i, j in index], symmetric=True)
        out = [np.eye(len(texts)) for texts in groups]
        for (g, i, j), p in zip(index, probs, strict=True):
            out[g][i, j] = out[g][j, i] = float(p)
        return out


class PairScorer(EquivalenceScorer):
    """The cross-encoder kind: P(equivalent) through ``probs_for_ids``; subclasses decide where the model runs.

    ``symmetric`` averages the probabilities of both orders (the model sees (a, b) and (b, a) in
    training, but a single order is not guaranteed to give the same answer).
    """

    kind = CROSS_ENCODER

    def __init__(
        self,
        encoder: PairEncoder,
        symmetric: bool = False,
        equivalent_index: int = EQUIVALENT_INDEX,
    ):
        self.encoder = encoder
        self.symmetric = symmetric
        self.equivalent_index = equivalent_index  # which class means "equivalent" (an imported model's may differ)

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


class EmbeddingScorer(EquivalenceScorer):
    """The bi-encoder kind: P(equivalent) = sigmoid(scale * cos + bias) of normalised embeddings.

    ``embed_ids`` (subclasses: in this process or over vLLM) turns encoded texts into embeddings; each distinct text
    is embedded once per scorer: an RL run asks about the same short answers step after step (a policy that narrows
    repeats them), so the embeddings of the last ``CACHE_TEXTS`` texts are kept. A text's embedding is the same
    whichever batch it was computed in, up to float rounding (the batches were never fixed: longest first). The
    cosine is symmetric, so there is no order to average.
    """

    kind = BI_ENCODER
    symmetric = False
    CACHE_TEXTS = 20_000  # ~60 MB of 384-wide embeddings

    def __init__(self, encoder: TextEncoder, scale: float, bias: float):
        self.encoder = encoder
        self.scale, self.bias = float(scale), float(bias)
        self.cache: dict[str, np.ndarray] = {}  # text -> its L2-normalised embedding, oldest first
        self.last_embedded = 0  # texts the last call ran through the encoder (the others were cached)

    def embed_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float64 embeddings, one row per text (each text embedded once, then kept)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        self.last_embedded = len(missing)
        if not texts:
            return np.zeros((0, 0))
        if missing:
            emb = np.asarray(self.embed_ids(self.encoder.encode(missing)), dtype=np.float64)
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
            for text, row in zip(missing, emb, strict=True):
                self.cache[text] = row
            for old in list(self.cache)[: max(0, len(self.cache) - self.CACHE_TEXTS)]:
                del self.cache[old]
        rows = [self.cache.get(t) for t in texts]
        kept = [row for row in rows if row is not None]
        if len(kept) < len(rows):  # a batch of more texts than the cache holds: embed it whole
            return self._embed_uncached(texts)
        return np.stack(kept)

    def _embed_uncached(self, texts: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(texts))
        emb = np.asarray(self.embed_ids(self.encoder.encode(unique)), dtype=np.float64)
        emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        row = {t: i for i, t in enumerate(unique)}
        return emb[[row[t] for t in texts]]

    def prob_from_cos(self, cos: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.scale * cos + self.bias)))

    def prob_equivalent(self, pairs: Sequence[Pair], symmetric: bool | None = None) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        emb = self.embed([t for pair in pairs for t in pair])
        return self.prob_from_cos(np.einsum("ij,ij->i", emb[0::2], emb[1::2]))

    def similarity_matrices(self, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Each group's cosine matrix, the bi-encoder's own similarity (1 on the diagonal): one embedding call."""
        emb = self.embed([t for g in groups for t in g])
        ends = np.cumsum([len(g) for g in groups]).tolist()
        return [emb[a:b] @ emb[a:b].T for a, b in zip([0, *ends[:-1]], ends, strict=True)]

    def prob_matrices(self, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """P(equivalent) for every pair of every group: all texts of all groups embedded in one call."""
        return [self.prob_from_cos(cos) for cos in self.similarity_matrices(groups)]


class EquivalenceClassifier(PairScorer):
    """In-process cross-encoder: the model in this process, batched longest-first so padding stays small.

    ``from_pretrained(dir)`` loads a cross-encoder export; ``load_scorer(dir)`` loads either kind.
    """

    def __init__(
        self,
        model,
        encoder: PairEncoder,
        symmetric: bool = False,
        batch_size: int = 32,
        equivalent_index: int = EQUIVALENT_INDEX,
    ):
        super().__init__(encoder, symmetric, equivalent_index)
        self.model = model.eval()
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(
        cls, export: ClassifierExport | str | Path, device: str | None = None, batch_size: int = 32
    ) -> EquivalenceClassifier:
        export = _of_kind(export, CROSS_ENCODER, "EquivalenceClassifier")
        meta = export.meta
        model = load_exported_strict(export.path, dtype=meta["dtype"])  # the precision it trained and was calibrated in
        if device:
            model = model.to(device)
        segments = uses_segment_ids(meta, model.config)
        encoder = PairEncoder(export.tokenizer, meta["max_tokens_per_response"], segment_ids=segments)
        index = meta.get("equivalent_index", EQUIVALENT_INDEX)
        scorer = cls(model, encoder, meta.get("symmetric", False), batch_size, index)
        scorer.dtype = meta["dtype"]
        return scorer.with_threshold(meta["threshold"])

    @property
    def device(self) -> torch.device:
        return module_device(self.model)

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
        return torch.from_numpy(self.logits_for_ids(input_ids)).softmax(-1)[:, self.equivalent_index].numpy()


class BiEncoderClassifier(EmbeddingScorer):
    """In-process bi-encoder: embeddings from the model in this process, longest-first batches."""

    def __init__(self, model: BiEncoder, encoder: TextEncoder, batch_size: int = 32):
        super().__init__(encoder, model.scale.item(), model.bias.item())
        self.model = model.eval()
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(
        cls, export: ClassifierExport | str | Path, device: str | None = None, batch_size: int = 32
    ) -> BiEncoderClassifier:
        from transformers import AutoModel

        export = _of_kind(export, BI_ENCODER, "BiEncoderClassifier")
        meta = export.meta
        backbone = load_exported_strict(export.path, AutoModel, dtype=meta["dtype"])
        if device:
            backbone = backbone.to(device)  # a and b stay here: the probability is computed from numbers on the CPU
        model = BiEncoder(backbone, meta["pooling"], meta["scale"], meta["bias"])
        encoder = TextEncoder(export.tokenizer, meta["max_tokens_per_response"])
        scorer = cls(model, encoder, batch_size)
        scorer.dtype = meta["dtype"]
        return scorer.with_threshold(meta["threshold"])

    @property
    def device(self) -> torch.device:
        return module_device(self.model)

    @torch.inference_mode()
    def embed_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        order = sorted(range(len(input_ids)), key=lambda i: -len(input_ids[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = {k: v.to(self.device) for k, v in self.encoder.pad([input_ids[i] for i in idx]).items()}
            emb = self.model.embed(batch["input_ids"], batch["attention_mask"]).cpu().numpy()
            if out is None:
                out = np.zeros((len(input_ids), emb.shape[1]), dtype=np.float32)
            out[idx] = emb
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)


# -- served by vLLM replicas: the same encoding and decision, the weights on the server --------------------------
class ServedEquivalenceClassifier(PairScorer):
    """The served twin of ``EquivalenceClassifier``: same encoding, threshold and order handling."""

    def __init__(
        self,
        encoder: PairEncoder,
        client: ClassifyClient,
        symmetric: bool = False,
        equivalent_index: int = EQUIVALENT_INDEX,
    ):
        super().__init__(encoder, symmetric, equivalent_index)
        self.client = client

    @classmethod
    def from_export(
        cls, export: ClassifierExport | str | Path, client: PoolingClient | Sequence[str]
    ) -> ServedEquivalenceClassifier:
        """Encoder and threshold from the exported directory; the weights live on the server."""
        export = _of_kind(export, CROSS_ENCODER, "ServedEquivalenceClassifier")
        meta = export.meta
        if not isinstance(client, ClassifyClient):
            client = (
                ClassifyClient(client) if not isinstance(client, PoolingClient) else ClassifyClient(**client.settings())
            )
        if uses_segment_ids(meta, export.model_config):
            raise UserInputError(
                f"{export.path}: this model reads token type ids (0 up to the first [SEP], 1 after), which vLLM's "
                "/classify sets to 0 for token-id input; score it in process (drop the classifier URLs)"
            )
        encoder = PairEncoder(export.tokenizer, meta["max_tokens_per_response"])
        index = meta.get("equivalent_index", EQUIVALENT_INDEX)
        return cls(encoder, client, meta.get("symmetric", False), index).with_threshold(meta["threshold"])

    def probs_for_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        return self.client.classify_ids(input_ids)[:, self.equivalent_index]


class ServedBiEncoderClassifier(EmbeddingScorer):
    """The served twin of ``BiEncoderClassifier``: embeddings from vLLM replicas, the cosine map here."""

    def __init__(self, encoder: TextEncoder, client: EmbedClient, scale: float, bias: float):
        super().__init__(encoder, scale, bias)
        self.client = client

    @classmethod
    def from_export(
        cls, export: ClassifierExport | str | Path, client: PoolingClient | Sequence[str]
    ) -> ServedBiEncoderClassifier:
        export = _of_kind(export, BI_ENCODER, "ServedBiEncoderClassifier")
        meta = export.meta
        if not isinstance(client, EmbedClient):
            client = EmbedClient(client) if not isinstance(client, PoolingClient) else EmbedClient(**client.settings())
        encoder = TextEncoder(export.tokenizer, meta["max_tokens_per_response"])
        return cls(encoder, client, meta["scale"], meta["bias"]).with_threshold(meta["threshold"])

    def embed_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        return self.client.embed_ids(input_ids)


def load_scorer(
    export: ClassifierExport | str | Path,
    urls: Sequence[str] = (),
    threshold: float | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    **client_options,
) -> EquivalenceScorer:
    """A scorer for ``export`` of either kind (a ``darling train-classifier`` output, or the ``ClassifierExport``
    already read from it): served by ``urls`` when given (the export then only supplies the encoding and the
    decision), else the model in this process.

    ``threshold`` overrides the exported decision threshold. ``batch_size``: inputs per forward pass in this
    process (default 32) or per request when served (default 256). ``client_options``: timeouts and retries
    of the served client (``darling.core.pooling_client.PoolingClient``)."""
    export = ClassifierExport.of(export)
    bi = export.kind == BI_ENCODER
    scorer: EquivalenceScorer
    if urls:
        if batch_size is not None:
            client_options["batch_size"] = batch_size
        client_kind = EmbedClient if bi else ClassifyClient
        client = client_kind(list(urls), **client_options)
        served = ServedBiEncoderClassifier if bi else ServedEquivalenceClassifier
        scorer = served.from_export(export, client)
    else:
        local = BiEncoderClassifier if bi else EquivalenceClassifier
        scorer = local.from_pretrained(export, device=device, batch_size=batch_size or 32)
    return scorer if threshold is None else scorer.with_threshold(threshold)


def _of_kind(export: ClassifierExport | str | Path, kind: str, loader: str) -> ClassifierExport:
    export = ClassifierExport.of(export)
    if export.kind != kind:
        raise UserInputError(
            f"{export.path}: a {export.kind} export, which {loader} does not load; load_scorer() loads either kind"
        )
    return export
