"""The semantic-equivalence pair classifier, two kinds (cross-encoder, bi-encoder): data, encoding,
training, calibration, export, scoring in process or over vLLM."""

from darling.classifier.client import (
    ClassifierServerError,
    ClassifyClient,
    EmbedClient,
    ServedBiEncoderClassifier,
    ServedEquivalenceClassifier,
)
from darling.classifier.config import BI_ENCODER, CROSS_ENCODER, ClassifierTrainConfig, build_config
from darling.classifier.data import PairSet, load_pairs, split_pairs
from darling.classifier.encoding import PairEncoder, TextEncoder
from darling.classifier.loading import load_scorer
from darling.classifier.scoring import (
    BiEncoderClassifier,
    EmbeddingScorer,
    EquivalenceClassifier,
    EquivalenceScorer,
    PairScorer,
)

__all__ = [
    "BI_ENCODER",
    "CROSS_ENCODER",
    "BiEncoderClassifier",
    "ClassifierServerError",
    "ClassifierTrainConfig",
    "ClassifyClient",
    "EmbedClient",
    "EmbeddingScorer",
    "EquivalenceClassifier",
    "EquivalenceScorer",
    "PairEncoder",
    "PairScorer",
    "PairSet",
    "ServedBiEncoderClassifier",
    "ServedEquivalenceClassifier",
    "TextEncoder",
    "build_config",
    "load_pairs",
    "load_scorer",
    "split_pairs",
]
