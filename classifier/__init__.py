"""The semantic-equivalence pair classifier, two kinds (cross-encoder, bi-encoder): data, encoding,
training, calibration, export, scoring in process or over vLLM.

The names below load on first use (PEP 562): importing a submodule such as ``darling.classifier.config`` (what the
command line does to build its flags) must not import torch.
"""

from __future__ import annotations

from darling.core import lazy_exports

_EXPORTS = {
    "ServedBiEncoderClassifier": "scoring",
    "ServedEquivalenceClassifier": "scoring",
    "BI_ENCODER": "config",
    "CROSS_ENCODER": "config",
    "ClassifierTrainConfig": "config",
    "build_config": "config",
    "PairSet": "labelled_pairs",
    "load_pairs": "labelled_pairs",
    "split_pairs": "labelled_pairs",
    "PairEncoder": "encoding",
    "TextEncoder": "encoding",
    "load_scorer": "scoring",
    "BiEncoderClassifier": "scoring",
    "EmbeddingScorer": "scoring",
    "EquivalenceClassifier": "scoring",
    "EquivalenceScorer": "scoring",
    "PairScorer": "scoring",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
