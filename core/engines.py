"""Generation engines behind one small interface: chat requests in, completions (or a recorded failure) out.

- ``hf``: transformers ``generate`` in this process, alike requests batched (``darling.core.hf_engine``; CPU default).
- ``openai``: any OpenAI-compatible server (``vllm serve``, SGLang, hosted APIs) with a concurrency limit,
  timeouts and bounded retries with backoff; the API key is read from an environment variable and never
  written anywhere.
- ``vllm``: one vLLM server process per model, started and stopped by the engine, each with its own parallelism
  and memory settings (``darling.core.vllm_engine``; GPUs, or vLLM's CPU build).
- ``vllm-offline``: the in-process ``vllm.LLM`` engine (one model per process is safest: see ``vllm``).
- ``ray``: vLLM replicas on a Ray cluster through Ray Data's LLM processor (``darling.core.ray_engine``).

A request that cannot be served after its retries comes back with ``error`` set and no completions: the
caller records it as failed and a rerun retries it. Nothing here turns a failure into text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from darling.core.devices import free_accelerator_memory
from darling.core.engine_api import ENGINE_NAMES, ChatRequest, ChatResult, Completion, Engine, check_request
from darling.core.engine_config import EngineConfig, engine_options
from darling.core.errors import UserInputError
from darling.core.hf_engine import HFEngine
from darling.core.local_models import resolve_model
from darling.core.openai_engine import OpenAIEngine
from darling.core.ray_engine import RayDataEngine
from darling.core.vllm_engine import VLLMServerEngine


class OfflineVLLMEngine:
    """``vllm-offline``: the in-process ``vllm.LLM`` engine, one ``LLM`` per model, requests sent ``chunk_size``
    at a time. A second model replaces the first in the same process, freed by garbage collection only; the
    ``vllm`` engine (a server process per model) frees each model with its process.

    Structured output uses ``SamplingParams(structured_outputs=StructuredOutputsParams(choice=/regex=))``
    (vLLM >= 0.12; the older ``guided_decoding`` was removed). A chunk vLLM rejects (e.g. a prompt longer
    than ``max_model_len``) is retried one request at a time, so only the offending requests fail.
    ``llm_kwargs`` go to ``vllm.LLM`` as they are (``enforce_eager``, ``kv_cache_memory_bytes``, ...).
    """

    name = "vllm-offline"

    def __init__(
        self,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        trust_remote_code: bool = False,
        llm_kwargs: dict[str, Any] | None = None,
        chunk_size: int = 1024,
    ):
        self.options: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
            "seed": seed,
            "trust_remote_code": trust_remote_code,
            **({"max_model_len": max_model_len} if max_model_len else {}),
            **(llm_kwargs or {}),
        }
        self.chunk_size = chunk_size
        self._model_name: str | None = None
        self._llm: Any = None

    @staticmethod
    def _vllm():
        try:
            import vllm
        except ImportError:
            raise UserInputError(
                "the vllm-offline engine needs vLLM in this environment: pip install 'darling[gpu]'"
            ) from None
        return vllm

    def _load(self, model: str) -> Any:
        vllm = self._vllm()
        if self._model_name != model:
            self.close()
            self._llm = vllm.LLM(model=resolve_model(model), **self.options)
            self._model_name = model
        return self._llm

    def close(self) -> None:
        if self._llm is not None:
            self._llm = self._model_name = None
            free_accelerator_memory()

    def _params(self, request: ChatRequest):
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        s = request.sampling
        structured = None
        if request.choices is not None:
            structured = StructuredOutputsParams(choice=list(request.choices))
        elif request.regex is not None:
            structured = StructuredOutputsParams(regex=request.regex)
        return SamplingParams(
            n=s.n,
            temperature=s.temperature,
            top_p=s.top_p,
            max_tokens=s.max_tokens,
            seed=s.seed,
            structured_outputs=structured,
        )

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        for request in requests:
            check_request(request)
        llm = self._load(model)
        rejected: tuple[type[BaseException], ...] = (ValueError,)
        try:  # vLLM >= 0.2x raises its own request errors, not ValueError
            from vllm.exceptions import VLLMClientError

            rejected = (ValueError, VLLMClientError)
        except ImportError:
            pass
        for start in range(0, len(requests), self.chunk_size):
            chunk = list(requests[start : start + self.chunk_size])
            try:
                messages = [list(r.messages) for r in chunk]
                outputs = llm.chat(messages, sampling_params=[self._params(r) for r in chunk], use_tqdm=False)
            except rejected as exc:
                if len(chunk) == 1:
                    on_result(ChatResult(chunk[0], error=f"{type(exc).__name__}: {exc}"))
                    continue
                for request in chunk:  # find the offending requests; the others still run
                    self.run(model, [request], on_result)
                continue
            for request, output in zip(chunk, outputs, strict=True):
                completions = tuple(
                    Completion(o.text, o.finish_reason or "length", len(o.token_ids))
                    for o in sorted(output.outputs, key=lambda o: o.index)
                )
                on_result(ChatResult(request, completions))


def make_engine(name: str, **options: Any) -> Engine:
    """An engine by name (``hf``, ``openai``, ``vllm``, ``vllm-offline``, ``ray``) with its constructor options."""
    if name == "hf":
        cls: type = HFEngine
    elif name == "openai":
        cls = OpenAIEngine
    elif name == "vllm":
        cls = VLLMServerEngine
    elif name == "vllm-offline":
        cls = OfflineVLLMEngine
    elif name == "ray":
        cls = RayDataEngine
    else:
        raise UserInputError(f"unknown engine {name!r}: choose one of {', '.join(ENGINE_NAMES)}")
    try:
        return cls(**options)
    except TypeError as exc:  # an unknown or missing engine option
        raise UserInputError(f"engine {name}: {exc}") from None


def build_engine(settings: EngineConfig, options: dict[str, Any] | None = None) -> Engine:
    """The engine ``settings`` name, with ``options`` (default: ``engine_options(settings)``)."""
    return make_engine(settings.engine, **(engine_options(settings) if options is None else options))
