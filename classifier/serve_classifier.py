"""``darling serve-classifier``: N vLLM replicas of an exported classifier, and the served-vs-in-process check.

Each replica is ``--runner pooling --convert classify`` (a cross-encoder export) or ``--convert embed`` (a
bi-encoder export) on its own port, pinned to its own GPU through ``CUDA_VISIBLE_DEVICES`` (or on the CPU with
vLLM's CPU build), in the dtype the export records: the precision it trained in and had its threshold chosen in
(vLLM's ``--dtype auto`` would serve an fp32 checkpoint in fp16 and move every probability). The parity check
sends sample pairs as token ids through the same client the RL reward uses and compares with the export scored
in this process.

The replica machinery (``pooling_replicas``, ``start_servers``, the ready file, SIGTERM) is
``darling.core.replicas``, shared with ``darling serve-reward-model``, which serves a reward model the same way.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from darling.classifier.config import BI_ENCODER, ServeConfig
from darling.classifier.export import ClassifierExport
from darling.classifier.labelled_pairs import load_pairs
from darling.core.devices import rank_device
from darling.core.replicas import free_gpu_memory, pooling_replicas, start_servers
from darling.core.vllm_server import VLLMServer


def replica_servers(config: ServeConfig, meta: dict[str, Any]) -> list[VLLMServer]:
    """The classifier replicas ``config`` asks for (not started): runner by the export's kind, dtype the export's
    unless overridden, the longest input the export's encoder ever builds."""

    runner = "embed" if meta["kind"] == BI_ENCODER else "classify"
    return pooling_replicas(config, config.model, runner, config.dtype or meta["dtype"], meta["max_length"])


def start_replicas(
    config: ServeConfig, export: ClassifierExport | None = None, timeout: float = 600.0
) -> list[VLLMServer]:
    """Start the classifier's replicas (of ``export``, already read, or of ``config.model``) and wait until all
    are healthy."""

    export = export or ClassifierExport(config.model)  # fails with one line unless this is a darling export
    return start_servers(replica_servers(config, export.meta), timeout)


# Largest |served - in-process| P(equivalent) accepted, by serving dtype: fp32 kernels agree to ~1e-6; bf16 keeps
# 8 bits of mantissa, so two correct bf16 implementations differ by a few 1e-3 (measured: tests/classifier).
PARITY_TOLERANCE = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 2e-2}


@dataclass(frozen=True)
class ParityReport:
    pairs: int
    max_abs_diff: float
    decisions_agree: int
    tolerance: float = 1e-3
    near_threshold: int = 0  # pairs whose in-process P lies within the tolerance of the threshold

    @property
    def ok(self) -> bool:
        return self.max_abs_diff < self.tolerance and self.decisions_agree + self.near_threshold >= self.pairs


def parity_check(export: ClassifierExport | str | Path, urls: list[str], pairs: list[tuple[str, str]]) -> ParityReport:
    """Served P(equivalent) vs in-process, same pairs, same token ids, same dtype (both orders when a
    cross-encoder export is symmetric; a bi-encoder's served embeddings go through the same cosine map as the
    local ones). A decision may differ only for a pair within the dtype's tolerance of the threshold."""
    from darling.classifier.scoring import (  # loads torch: serve-classifier's flags need none
        ServedBiEncoderClassifier,
        ServedEquivalenceClassifier,
        load_scorer,
    )

    export = ClassifierExport.of(export)  # one read of the folder, one tokenizer, for both scorers
    served = typing.cast(ServedEquivalenceClassifier | ServedBiEncoderClassifier, load_scorer(export, urls))
    try:
        remote_p = served.prob_equivalent(pairs)
        remote_d = served.is_equivalent(pairs)
    finally:
        served.client.close()
    local = load_scorer(export, device=rank_device())  # a 4B export is scored on a GPU, not this process's CPU
    local_p, local_d = local.prob_equivalent(pairs), local.is_equivalent(pairs)
    tolerance, threshold = PARITY_TOLERANCE[getattr(local, "dtype", "float32")], local.threshold
    del local
    free_gpu_memory()  # the jobs started after the check get this GPU back
    near = np.abs(local_p - threshold) < tolerance
    disagree = remote_d != local_d
    return ParityReport(
        len(pairs),
        float(np.max(np.abs(remote_p - local_p))),
        int(np.sum(~disagree)),
        tolerance,
        int(np.sum(disagree & near)),
    )


def sample_pairs(n: int = 32) -> list[tuple[str, str]]:
    """Real response pairs for the check: the built-in NoveltyBench pairs."""

    return [p.texts for p in load_pairs("noveltybench").pairs[:n]]
