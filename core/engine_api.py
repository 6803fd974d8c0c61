"""The generation engines' one small interface: a chat request (messages, sampling, structured output) in, its
completions or a recorded failure out; every engine (``darling.core.engines``) implements ``Engine``."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

from darling.core.errors import UserInputError


@dataclass(frozen=True)
class Sampling:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass(frozen=True)
class ChatRequest:
    key: Hashable  # the caller's id for this request, handed back with its result
    messages: tuple[dict[str, str], ...]  # ({"role": "system" | "user" | "assistant", "content": ...}, ...)
    sampling: Sampling = field(default_factory=Sampling)
    choices: tuple[str, ...] | None = None  # structured output: the text is exactly one of these
    regex: str | None = None  # structured output: the text matches this regex (server/vllm engines)


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop" | "length" | engine-specific
    num_tokens: int | None = None


@dataclass(frozen=True)
class ChatResult:
    request: ChatRequest
    completions: tuple[Completion, ...] = ()  # request.sampling.n of them when ok
    error: str | None = None  # retries exhausted or request refused: no text was produced

    @property
    def ok(self) -> bool:
        return self.error is None


class Engine(Protocol):
    name: str

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        """Serve every request, calling ``on_result`` once per request as results arrive (any order)."""
        ...

    def close(self) -> None: ...


ENGINE_NAMES = ("hf", "openai", "vllm", "vllm-offline", "ray")


def check_request(request: ChatRequest) -> None:
    """Reject requests no engine can serve (a bad config, not a failed request)."""
    s = request.sampling
    if s.n < 1 or s.max_tokens < 1:
        raise UserInputError(f"request {request.key!r}: n and max_tokens must be >= 1 (got {s.n}, {s.max_tokens})")
    if s.temperature < 0 or not 0 < s.top_p <= 1:
        raise UserInputError(f"request {request.key!r}: need temperature >= 0 and 0 < top_p <= 1")
    if request.choices is not None and request.regex is not None:
        raise UserInputError(f"request {request.key!r}: give choices or regex, not both")
    if request.choices is not None and not request.choices:
        raise UserInputError(f"request {request.key!r}: choices is empty")
