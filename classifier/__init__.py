"""The semantic-equivalence pair classifier: data, encoding, training, calibration, export, scoring."""

from darling.classifier.client import ClassifierServerError, ClassifyClient, ServedEquivalenceClassifier
from darling.classifier.config import PRESETS, ClassifierTrainConfig, build_config
from darling.classifier.data import PairSet, load_pairs, split_pairs
from darling.classifier.encoding import PairEncoder
from darling.classifier.scoring import EquivalenceClassifier, PairScorer

__all__ = [
    "PRESETS",
    "ClassifierServerError",
    "ClassifierTrainConfig",
    "ClassifyClient",
    "EquivalenceClassifier",
    "PairEncoder",
    "PairScorer",
    "PairSet",
    "ServedEquivalenceClassifier",
    "build_config",
    "load_pairs",
    "split_pairs",
]
