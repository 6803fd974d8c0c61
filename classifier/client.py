"""Client for a classifier served by vLLM (``/classify``), sending the project's token ids.

Large batches, spread over one or more replicas concurrently; per-request timeouts; bounded retries with
exponential backoff on timeouts, refused connections and 5xx. When a decision cannot be obtained the
call raises ``ClassifierServerError`` — a missing decision is never turned into a probability.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import cycle
from pathlib import Path

import httpx
import numpy as np

from darling.classifier.backbones import EQUIVALENT_INDEX, load_tokenizer
from darling.classifier.encoding import PairEncoder
from darling.classifier.export import read_export_meta
from darling.classifier.scoring import PairScorer

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class ClassifierServerError(RuntimeError):
    """The classifier server could not give a decision after all retries."""


class ClassifyClient:
    def __init__(
        self,
        base_urls: str | Sequence[str],
        model: str | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_concurrency: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls:
            raise ValueError("at least one server URL is needed")
        self.base_urls = [u.rstrip("/") for u in urls]
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.max_concurrency = max_concurrency or 2 * len(self.base_urls)
        self._http = httpx.Client(timeout=timeout, transport=transport)
        self.requests_sent = 0

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ClassifyClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _model_name(self, base_url: str) -> str:
        if self.model is None:
            data = self._request_with_retries(base_url, "GET", "/v1/models", None)
            self.model = data["data"][0]["id"]
        return self.model

    def _request_with_retries(self, base_url: str, method: str, path: str, payload: dict | None) -> dict:
        url = base_url + path
        last_error = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(self.max_backoff, self.backoff * 2 ** (attempt - 1)))
            try:
                self.requests_sent += 1
                response = self._http.request(method, url, json=payload)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code in RETRYABLE_STATUS:
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code >= 400:
                raise ClassifierServerError(f"{url}: HTTP {response.status_code}: {response.text[:500]}")
            return response.json()
        raise ClassifierServerError(f"{url}: no answer after {self.max_retries + 1} attempts ({last_error})")

    def _classify_chunk(self, base_url: str, chunk: list[list[int]]) -> np.ndarray:
        payload = {"model": self._model_name(base_url), "input": chunk}
        data = self._request_with_retries(base_url, "POST", "/classify", payload)["data"]
        if len(data) != len(chunk):
            raise ClassifierServerError(f"{base_url}: asked for {len(chunk)} results, got {len(data)}")
        probs = np.zeros((len(chunk), 2), dtype=np.float64)
        for item in data:
            probs[item["index"]] = item["probs"]
        return probs

    def classify_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Class probabilities (n, 2) for pre-encoded inputs, in input order."""
        if not input_ids:
            return np.zeros((0, 2))
        chunks = [
            list(map(list, input_ids[i : i + self.batch_size])) for i in range(0, len(input_ids), self.batch_size)
        ]
        if self.model is None:
            self._model_name(self.base_urls[0])
        jobs = list(zip(cycle(self.base_urls), chunks, strict=False))
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(jobs))) as pool:
            results = list(pool.map(lambda job: self._classify_chunk(*job), jobs))
        return np.concatenate(results)


class ServedEquivalenceClassifier(PairScorer):
    """The served twin of ``EquivalenceClassifier``: same encoding, threshold and order handling."""

    def __init__(self, encoder: PairEncoder, client: ClassifyClient, threshold: float = 0.5, symmetric: bool = False):
        super().__init__(encoder, threshold, symmetric)
        self.client = client

    @classmethod
    def from_export(cls, path: str | Path, client: ClassifyClient) -> ServedEquivalenceClassifier:
        """Encoder and threshold from the exported directory; the weights live on the server."""
        meta = read_export_meta(path)
        encoder = PairEncoder(load_tokenizer(str(path)), meta["max_tokens_per_response"])
        return cls(encoder, client, meta["threshold"], meta.get("symmetric", False))

    def probs_for_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        return self.client.classify_ids(input_ids)[:, EQUIVALENT_INDEX]
