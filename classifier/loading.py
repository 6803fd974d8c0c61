"""``load_scorer``: the one way every consumer (RL reward, verl, eval novelty, serve-classifier checks) gets a
scorer from an export: in this process, or over vLLM replicas when URLs are given; either kind."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from darling.classifier.client import ServedEquivalenceClassifier
from darling.classifier.scoring import EquivalenceClassifier, EquivalenceScorer


def load_scorer(
    export: str | Path,
    urls: Sequence[str] = (),
    threshold: float | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    **client_options,
) -> EquivalenceScorer:
    """A scorer for ``export`` (a ``darling train-classifier`` output): served by ``urls`` when given (the
    export then only supplies the encoding and the decision), else the model in this process.

    ``threshold`` overrides the exported decision threshold. ``batch_size``: inputs per forward pass in this
    process (default 32) or per request when served (default 256). ``client_options``: timeouts and retries
    of the served client (``darling.classifier.client.PoolingClient``)."""
    if urls:
        scorer = ServedEquivalenceClassifier.from_export(export, list(urls))
        if batch_size is not None:
            client_options["batch_size"] = batch_size
        if client_options:
            scorer.client.close()
            scorer.client = type(scorer.client)(**{**scorer.client.settings(), **client_options})
    else:
        scorer = EquivalenceClassifier.from_pretrained(export, device=device, batch_size=batch_size or 32)
    if threshold is not None:
        scorer.threshold = threshold
    return scorer
