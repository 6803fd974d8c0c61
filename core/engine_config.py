"""The generation engine's settings, defined once: every command that generates (``datagen rollouts``,
``datagen label``, ``eval math``, ``eval novelty``) has these fields, so it has these flags with this help.

``engine_options(settings)`` is the one place an engine name meets its construction options
(``darling.core.engines.make_engine(settings.engine, **engine_options(settings))``): only the options the chosen
engine takes are passed, and ``openai`` without a ``base_url`` is refused before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from darling.core.config import CommandConfig, option
from darling.core.engines import ENGINE_NAMES, Engine, make_engine
from darling.core.errors import UserInputError

ENGINE_PANEL = "Generation engine"
ENGINE_HELP = "hf (transformers, CPU), openai (any OpenAI-compatible server), vllm (GPU)."


def engine_option(default: str) -> Any:
    """The ``engine`` field, for a command whose default engine is not ``hf`` (``datagen label``: openai)."""
    return option(default, choices=ENGINE_NAMES, help=ENGINE_HELP, panel=ENGINE_PANEL)


@dataclass(kw_only=True)
class EngineConfig(CommandConfig):
    """Settings of the generation engine; a command's config derives from it (flags = these field names)."""

    engine: str = engine_option("hf")
    base_url: str | None = option(
        None, help="Server URL for --engine openai, e.g. http://127.0.0.1:8000/v1.", panel=ENGINE_PANEL
    )
    api_key_env: str = option(
        "OPENAI_API_KEY", help="Environment variable holding the API key (never logged).", panel=ENGINE_PANEL
    )
    concurrency: int = option(32, help="openai: requests in flight at once.", panel=ENGINE_PANEL)
    timeout: float = option(300.0, help="openai: seconds per request before it is retried.", panel=ENGINE_PANEL)
    max_retries: int = option(
        4, help="openai: retries (exponential backoff) before a request is failed.", panel=ENGINE_PANEL
    )
    tensor_parallel_size: int = option(1, help="vllm: GPUs per model (tensor parallel).", panel=ENGINE_PANEL)
    threads: int | None = option(None, help="hf: torch CPU threads.", panel=ENGINE_PANEL)


def engine_options(settings: EngineConfig) -> dict[str, Any]:
    """The constructor options of ``settings.engine``, from the fields that engine reads."""
    if settings.engine == "openai":
        if not settings.base_url:
            raise UserInputError("--engine openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        return {
            "base_url": settings.base_url,
            "api_key_env": settings.api_key_env,
            "concurrency": settings.concurrency,
            "timeout": settings.timeout,
            "max_retries": settings.max_retries,
        }
    if settings.engine == "vllm":
        return {"tensor_parallel_size": settings.tensor_parallel_size}
    if settings.engine == "hf":
        return {"threads": settings.threads}
    raise UserInputError(f"unknown --engine {settings.engine!r}: choose one of {', '.join(ENGINE_NAMES)}")


def build_engine(settings: EngineConfig, options: dict[str, Any] | None = None) -> Engine:
    """The engine ``settings`` name, with ``options`` (default: ``engine_options(settings)``)."""
    return make_engine(settings.engine, **(engine_options(settings) if options is None else options))
