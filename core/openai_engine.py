"""The ``openai`` engine: any OpenAI-compatible ``/v1/chat/completions`` server (vLLM, SGLang, hosted APIs).

Plain ``httpx.AsyncClient`` rather than the ``openai`` SDK: the SDK would need ``max_retries=0`` plus a
mapping of its exception classes back to "retry or not", while here the status codes and transport errors
that decide a retry are visible in one place, ``extra_body`` fields are just JSON, and it is the same HTTP
stack as the /classify client.

A request with ``n > 1`` is sent as ``n`` calls with ``n=1`` (seed ``seed + i`` for sample ``i`` when the
request has a seed), so every completion has its own token count and each sample is reproducible on its
own; the samples are merged back in order, and if any of them fails the request fails as a whole.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from darling.core.engine_api import ChatRequest, ChatResult, Completion, check_request
from darling.core.errors import UserInputError

RETRYABLE_STATUS = {408, 429}  # and every 5xx


class _RequestFailed(Exception):
    """One sample call could not be answered (retries exhausted, or refused by the server)."""


class OpenAIEngine:
    """Concurrent chat completions with per-call timeouts and bounded, jittered exponential backoff.

    Retried: timeouts, connection errors (refused, reset), 408, 429 and 5xx; other 4xx fail at once with
    the server's message. The key is read from ``$api_key_env`` (``EMPTY`` when unset, as vLLM expects),
    sent only as a Bearer header, and masked out of every error string.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 16,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
    ):
        if concurrency < 1 or max_retries < 0:
            raise UserInputError("the openai engine needs concurrency >= 1 and max_retries >= 0")
        base = base_url.rstrip("/")
        base = base[: -len("/v1")] if base.endswith("/v1") else base
        self.url = base + "/v1/chat/completions"
        self.api_key_env = api_key_env
        self._api_key = os.environ.get(api_key_env) or "EMPTY"
        self.concurrency, self.timeout, self.max_retries = concurrency, timeout, max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.requests_sent = 0  # HTTP calls made, retries included
        self.retries = 0

    def __repr__(self) -> str:  # never the key
        return f"OpenAIEngine({self.url!r}, api_key_env={self.api_key_env!r}, concurrency={self.concurrency})"

    def close(self) -> None:
        pass  # one HTTP client per run(), closed when it ends

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        """Blocks until every request has a result; ``on_result`` runs on the event loop's thread."""
        for request in requests:
            check_request(request)
        job = self._run_all(model, list(requests), on_result)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(job)
            return
        with ThreadPoolExecutor(1) as pool:  # called from async code: run our loop beside the caller's
            pool.submit(asyncio.run, job).result()

    async def _run_all(self, model: str, requests: list[ChatRequest], on_result) -> None:
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        headers = {"Authorization": f"Bearer {self._api_key}"}
        async with httpx.AsyncClient(timeout=self.timeout, limits=limits, headers=headers) as client:
            semaphore = asyncio.Semaphore(self.concurrency)  # HTTP calls in flight
            pending = iter(requests)  # shared by the workers, so only `concurrency` requests are open at once

            async def worker() -> None:
                for request in pending:
                    on_result(await self._serve(client, semaphore, model, request))

            workers = [asyncio.create_task(worker()) for _ in range(min(self.concurrency, len(requests)))]
            try:
                await asyncio.gather(*workers)
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)

    async def _serve(self, client: httpx.AsyncClient, semaphore, model: str, request: ChatRequest) -> ChatResult:
        samples = [
            asyncio.create_task(self._sample(client, semaphore, model, request, i)) for i in range(request.sampling.n)
        ]
        try:
            completions = await asyncio.gather(*samples)
        except _RequestFailed as exc:
            return ChatResult(request, error=self._redact(str(exc)))
        finally:
            for task in samples:  # the other samples of a failed request are not needed any more
                task.cancel()
            await asyncio.gather(*samples, return_exceptions=True)
        return ChatResult(request, tuple(completions))

    def _body(self, model: str, request: ChatRequest, index: int) -> dict[str, Any]:
        s = request.sampling
        body: dict[str, Any] = {
            "model": model,
            "messages": list(request.messages),
            "n": 1,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
        }
        if s.seed is not None:
            body["seed"] = s.seed + index
        if request.choices is not None:  # vLLM >= 0.12 (guided_choice / guided_regex were removed)
            body["structured_outputs"] = {"choice": list(request.choices)}
        elif request.regex is not None:
            body["structured_outputs"] = {"regex": request.regex}
        return body

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        return max(delay, min(retry_after, self.max_backoff)) if retry_after else delay

    async def _sample(self, client, semaphore, model: str, request: ChatRequest, index: int) -> Completion:
        body = self._body(model, request, index)
        last_error, retry_after = "", None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.retries += 1
                await asyncio.sleep(self._delay(attempt, retry_after))  # not holding a slot while waiting
            async with semaphore:
                self.requests_sent += 1
                try:
                    response = await client.post(self.url, json=body)
                except httpx.TimeoutException as exc:
                    last_error = f"timeout after {self.timeout:g} s ({type(exc).__name__})"
                    continue
                except httpx.TransportError as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
                    continue
            code = response.status_code
            if code in RETRYABLE_STATUS or code >= 500:
                last_error = f"HTTP {code}: {response.text[:300]}"
                retry_after = _seconds(response.headers.get("retry-after"))
                continue
            if code >= 400:
                raise _RequestFailed(f"{self.url}: HTTP {code}: {response.text[:500]}")
            return _completion(response, self.url)
        raise _RequestFailed(f"{self.url}: no answer after {self.max_retries + 1} attempts ({last_error})")

    def _redact(self, text: str) -> str:
        key = self._api_key
        return text.replace(key, "***") if key != "EMPTY" and len(key) >= 4 else text


def _completion(response: httpx.Response, url: str) -> Completion:
    try:
        data = response.json()
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        return Completion(
            choice["message"].get("content") or "",
            choice.get("finish_reason") or "stop",
            usage.get("completion_tokens"),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _RequestFailed(f"{url}: malformed response ({type(exc).__name__}): {response.text[:300]}") from None


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None  # an HTTP date: ignore it and use the backoff
