"""The generation engine's settings, and the sampling settings, defined once: every command that generates
(``datagen rollouts``, ``datagen label``, ``eval math``, ``eval novelty``) has these fields, so it has these flags
with this help; a command that samples or writes shards declares ``temperature``, ``top_p``, ``max_tokens``, its
generation ``seed`` and ``shard_size`` with ``sampling_option`` (its own default, the one help, and what it adds to
it), never with a help of its own (a test reads every config for a second declaration).

``engine_options(settings)`` is the one place an engine name meets its construction options
(``darling.core.engines.build_engine(settings)``): only the options the chosen
engine takes are passed, and ``openai`` without a ``base_url`` is refused before anything runs. A generator list
may give one model its own vLLM settings (``ENGINE_OVERRIDES``): they replace these for that model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from darling.core.config import CommandConfig, option
from darling.core.devices import device_option, resolve_device
from darling.core.engine_api import ENGINE_NAMES
from darling.core.errors import UserInputError

ENGINE_PANEL = "Generation engine"
ENGINE_HELP = (
    "hf (transformers in this process, on --device), openai (any OpenAI-compatible server), vllm (a vLLM server "
    "process per model, started and stopped here: GPUs, or vLLM's CPU build), vllm-offline (vllm.LLM in this "
    "process), ray (vLLM replicas over a Ray cluster by Ray Data: --ray-address, --data-parallel-size replicas)."
)
# Settings one model of a generator list may set for itself (a 7B generator on 1 GPU, a 32B one on 4).
ENGINE_OVERRIDES = ("tensor_parallel_size", "data_parallel_size", "max_model_len", "gpu_memory_utilization")


# The sampling settings' one help each; a command adds what its value is for (``note``: "the judge's").
SAMPLING_HELP = {
    "temperature": "Sampling temperature",
    "top_p": "Nucleus sampling (top-p)",
    "max_tokens": "Max new tokens per response",
    "seed": "Seed of the sampling: each request's seed derives from it and the request's stable id",
    "shard_size": "Rows per Parquet shard: written, and so safe from a crash, every this many",
}


def sampling_option(name: str, default: Any, note: str = "", **kwargs: Any) -> Any:
    """The sampling setting ``name`` (``SAMPLING_HELP``) with this command's default; ``note`` says what it is here
    (``"the judge's"``, ``"responses"``); ``kwargs`` as ``option``'s (a panel, rl-train's TRL metadata)."""
    return option(default, help=f"{SAMPLING_HELP[name]}{f' ({note})' if note else ''}.", **kwargs)


def engine_option(default: str) -> Any:
    """The ``engine`` field, for a command whose default engine is not ``hf`` (``datagen label``: openai)."""
    return option(default, choices=ENGINE_NAMES, help=ENGINE_HELP, panel=ENGINE_PANEL)


@dataclass(kw_only=True, frozen=True)
class EngineConfig(CommandConfig):
    """Settings of the generation engine; a command's config derives from it (flags = these field names)."""

    engine: str = engine_option("hf")
    base_url: str | None = option(
        None, help="Server URL for --engine openai, e.g. http://127.0.0.1:8000/v1.", panel=ENGINE_PANEL
    )
    api_key_env: str = option(
        "OPENAI_API_KEY", help="Environment variable holding the API key (never logged).", panel=ENGINE_PANEL
    )
    concurrency: int = option(32, help="openai, vllm: requests in flight at once.", panel=ENGINE_PANEL)
    timeout: float = option(300.0, help="openai, vllm: seconds per request before it is retried.", panel=ENGINE_PANEL)
    max_retries: int = option(
        4, help="openai, vllm: retries (exponential backoff) before a request is failed.", panel=ENGINE_PANEL
    )
    tensor_parallel_size: int = option(
        1, help="vllm, ray: GPUs per model replica (tensor parallel).", panel=ENGINE_PANEL
    )
    data_parallel_size: int = option(
        1,
        help="vllm: model replicas behind one server (data parallel; GPUs = tensor x data); ray: replicas on the "
        "cluster.",
        panel=ENGINE_PANEL,
    )
    max_model_len: int | None = option(
        None, help="vllm: context length (prompt + completion); default the model's.", panel=ENGINE_PANEL
    )
    gpu_memory_utilization: float | None = option(
        None, help="vllm: share of each GPU vLLM may take; default vLLM's (0.9).", panel=ENGINE_PANEL
    )
    devices: str = option(
        "auto",
        help="vllm: GPU ids for the server (CUDA_VISIBLE_DEVICES), cpu (vLLM's CPU build), or auto; ray: cpu or "
        "auto (GPUs).",
        panel=ENGINE_PANEL,
    )
    vllm_python: str | None = option(
        None,
        help="vllm: vLLM's Python (default: $DARLING_VLLM_PYTHON, this environment if it has vLLM, else the CPU "
        "build .ci/setup.sh makes).",
        panel=ENGINE_PANEL,
    )
    threads: int | None = option(None, help="hf: torch CPU threads; vllm on the CPU: its threads.", panel=ENGINE_PANEL)
    device: str = device_option()
    ray_address: str | None = option(
        None,
        help="ray: the cluster to run on (host:port, or auto); default $RAY_ADDRESS, else a local one in this process.",
        panel=ENGINE_PANEL,
    )
    ray_batch_size: int = option(16, help="ray: rows per batch sent to a vLLM replica.", panel=ENGINE_PANEL)


def engine_options(settings: EngineConfig, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The constructor options of ``settings.engine``, from the fields that engine reads; ``overrides`` (one
    model's own ``ENGINE_OVERRIDES``) replace the run's values."""
    values = {**{name: getattr(settings, name) for name in ENGINE_OVERRIDES}, **(overrides or {})}
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
        return {
            **values,
            "devices": settings.devices,
            "python": settings.vllm_python,
            "threads": settings.threads,
            "concurrency": settings.concurrency,
            "timeout": settings.timeout,
            "max_retries": settings.max_retries,
        }
    if settings.engine == "vllm-offline":
        if values["data_parallel_size"] != 1:
            raise UserInputError(
                "vllm-offline runs one model replica: data_parallel_size must be 1 (use --engine vllm)"
            )
        offline = {k: values[k] for k in ("tensor_parallel_size", "max_model_len", "gpu_memory_utilization")}
        return {k: v for k, v in offline.items() if v is not None}
    if settings.engine == "hf":
        return {"threads": settings.threads, "device": resolve_device(settings.device)}
    if settings.engine == "ray":  # data parallel = vLLM replicas placed by Ray anywhere on the cluster
        return {
            "address": settings.ray_address,
            "replicas": values["data_parallel_size"],
            "tensor_parallel_size": values["tensor_parallel_size"],
            "batch_size": settings.ray_batch_size,
            "devices": "cpu" if settings.devices == "cpu" else "auto",
            "max_model_len": values["max_model_len"],
            "gpu_memory_utilization": values["gpu_memory_utilization"],
            "threads": settings.threads,
        }
    raise UserInputError(f"unknown --engine {settings.engine!r}: choose one of {', '.join(ENGINE_NAMES)}")
