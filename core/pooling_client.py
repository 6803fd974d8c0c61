"""A client for vLLM's pooling servers (``/classify``, ``/v1/embeddings``), sending token ids: what the served
classifier and the served reward model both talk through.

Large batches, spread over one or more replicas concurrently; per-request timeouts; bounded retries with
exponential backoff on timeouts, refused connections and 5xx. A chunk whose replica gives no answer after
its retries goes to the other replicas (those not yet seen failing first) before the call gives up. When a
result cannot be obtained from any replica the call raises ``PoolingServerError`` — a missing decision or score
is never turned into a probability or a reward.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import cycle
from typing import Any, ClassVar

import httpx
import numpy as np

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class PoolingServerError(RuntimeError):
    """No replica of a pooling server gave a result after all retries."""


class ReplicaUnavailable(PoolingServerError):
    """One replica gave no answer after its retries (timeouts, refused connections, 5xx): another may."""


class PoolingClient:
    """Token-id batches to vLLM pooling endpoints over replicas; subclasses name the endpoint and read rows."""

    path = ""
    # Merged into every scoring request's payload (after "model" and "input"): the endpoint's own options, such as
    # a reward model's {"use_activation": False}. Not sent with the model-name lookup.
    extra_payload: ClassVar[dict[str, Any]] = {}

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
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.max_concurrency = max_concurrency or 2 * len(self.base_urls)
        self._transport = transport
        self._http = httpx.Client(timeout=timeout, transport=transport)
        self.requests_sent = 0
        self.down: set[str] = set()  # replicas whose last chunk failed after all retries

    def settings(self) -> dict:
        """Constructor arguments, to build a client of the other kind for the same replicas."""
        return dict(
            base_urls=self.base_urls,
            model=self.model,
            batch_size=self.batch_size,
            timeout=self.timeout,
            max_retries=self.max_retries,
            backoff=self.backoff,
            max_backoff=self.max_backoff,
            max_concurrency=self.max_concurrency,
            transport=self._transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _model_name(self, base_url: str) -> str:
        if self.model is None:
            data = self._request_with_retries(base_url, "GET", "/v1/models", None)
            self.model = data["data"][0]["id"]
        return self.model

    def _resolve_model(self) -> None:
        """The served model's name from the first replica that answers."""
        errors = []
        for url in self.base_urls:
            try:
                self._model_name(url)
                return
            except ReplicaUnavailable as exc:
                self.down.add(url)
                errors.append(str(exc))
        raise PoolingServerError(f"no replica answered ({len(self.base_urls)} tried): " + "; ".join(errors))

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
                raise PoolingServerError(f"{url}: HTTP {response.status_code}: {response.text[:500]}")
            return response.json()
        raise ReplicaUnavailable(f"{url}: no answer after {self.max_retries + 1} attempts ({last_error})")

    def _rows(self, item: dict) -> list[float]:
        raise NotImplementedError

    def _chunk_with_failover(self, base_url: str, chunk: list[list[int]]) -> np.ndarray:
        """The chunk from its assigned replica, else from the others, healthy-looking ones first. A 4xx answer
        is the request's fault, not the replica's, so it is not sent elsewhere."""
        others = [u for u in self.base_urls if u != base_url]
        order = sorted([base_url, *others], key=lambda u: u in self.down)  # stable: the assigned one leads
        errors = []
        for url in order:
            try:
                result = self._chunk(url, chunk)
            except ReplicaUnavailable as exc:
                self.down.add(url)
                errors.append(str(exc))
                continue
            self.down.discard(url)
            return result
        raise PoolingServerError(f"no replica answered ({len(order)} tried): " + "; ".join(errors))

    def _chunk(self, base_url: str, chunk: list[list[int]]) -> np.ndarray:
        payload = {"model": self._model_name(base_url), "input": chunk, **self.extra_payload}
        data = self._request_with_retries(base_url, "POST", self.path, payload)["data"]
        if len(data) != len(chunk):
            raise PoolingServerError(f"{base_url}: asked for {len(chunk)} results, got {len(data)}")
        rows = [np.asarray(self._rows(item), dtype=np.float64) for item in sorted(data, key=lambda d: d["index"])]
        return np.stack(rows)

    def run_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One result row per pre-encoded input, in input order, chunks spread over the replicas."""
        if not input_ids:
            return np.zeros((0, 0))
        chunks = [
            list(map(list, input_ids[i : i + self.batch_size])) for i in range(0, len(input_ids), self.batch_size)
        ]
        if self.model is None:
            self._resolve_model()
        healthy = [u for u in self.base_urls if u not in self.down] or self.base_urls
        jobs = list(zip(cycle(healthy), chunks, strict=False))
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(jobs))) as pool:
            results = list(pool.map(lambda job: self._chunk_with_failover(*job), jobs))
        return np.concatenate(results)


class ClassifyClient(PoolingClient):
    """A cross-encoder behind ``vllm serve DIR --runner pooling --convert classify``."""

    path = "/classify"

    def _rows(self, item: dict) -> list[float]:
        return item["probs"]

    def classify_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Class probabilities (n, 2) for pre-encoded inputs, in input order."""
        return self.run_ids(input_ids) if input_ids else np.zeros((0, 2))


class EmbedClient(PoolingClient):
    """A bi-encoder behind ``vllm serve DIR --runner pooling --convert embed`` (OpenAI embeddings API)."""

    path = "/v1/embeddings"

    def _rows(self, item: dict) -> list[float]:
        return item["embedding"]

    def embed_ids(self, input_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Embeddings (n, dim) for pre-encoded texts, in input order (normalised by the server's pooler)."""
        return self.run_ids(input_ids)
