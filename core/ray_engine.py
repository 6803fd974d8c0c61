"""The ``ray`` engine: chat requests spread over a Ray cluster by Ray Data's LLM processor (``ray.data.llm``).

``run(model, requests, on_result)`` turns the requests into a Ray Dataset and maps it through
``build_processor(vLLMEngineProcessorConfig(...))``: ``replicas`` vLLM engines as Ray actors placed anywhere on the
cluster (each ``tensor_parallel_size`` x ``pipeline_parallel_size`` devices), chat templates and sampling applied by
Ray Data's own stages. It is the same interface as the other engines, so rollouts, judge labels and evaluation
generations keep their inputs, shards and resumability: results stream back as Ray Data finishes blocks and the
caller writes each as it arrives, a killed run sends only what its shards lack, and a batch on a lost worker is
retried by Ray Data on a restarted actor (``ActorPoolStrategy``'s actors restart; the row comes back once).

Two things the vLLM stage of ``ray.data.llm`` (2.60) does differently from vLLM's own API, handled here:
- it returns the first of a request's outputs only, so a request of ``n`` samples becomes ``n`` rows, gathered back
  by key (sample ``i`` of a seeded request is seeded ``seed_for_sample(seed, i)``; greedy rows are identical, as
  vLLM's ``n`` copies are);
- it does not return vLLM's finish reason: a sample that used all its ``max_tokens`` is ``length``, others ``stop``.
Structured output (the judge's choices or regex) goes in ``sampling_params.structured_outputs`` as vLLM takes it.

A replica ends its vLLM engine (a process vLLM spawns) when Ray Data lets the actor exit gracefully, as it does at
the end of a run; an actor killed by force (``ray stop --force``, a crash) leaves that process behind, holding its
memory or GPU until it is killed: on a long-lived cluster, look for ``VLLM::EngineCore`` processes without a parent.

The driver (this process) needs ``ray[data]``; the cluster's workers need vLLM (``pip install 'darling[ray]'`` on a
GPU image). A model given as a local folder must be at the same path on every node (a shared file system), or give
a hub id. ``devices="cpu"``: vLLM's CPU build on every worker, one CPU bundle per engine, fp32, eager.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from darling.core.engine_api import ChatRequest, ChatResult, Completion, check_request
from darling.core.errors import UserInputError
from darling.core.local_models import resolve_model

CPU_KV_CACHE_BYTES = 256 * 2**20  # as the vllm engine: holds CPU_MAX_MODEL_LEN tokens of a small model
CPU_MAX_MODEL_LEN = 2048


def seed_for_sample(seed: int, sample: int) -> int:
    """Sample ``sample`` of a request seeded ``seed``: distinct per sample, the same on every rerun."""
    return (seed * 1_000_003 + sample) % 2**31


def request_rows(requests: Sequence[ChatRequest]) -> list[dict[str, Any]]:
    """One Ray Data row per sample: the request's index and sample number, its messages, vLLM sampling params."""
    rows = []
    for index, request in enumerate(requests):
        s = request.sampling
        params: dict[str, Any] = {"temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens}
        if request.choices is not None:
            params["structured_outputs"] = {"choice": list(request.choices)}
        elif request.regex is not None:
            params["structured_outputs"] = {"regex": request.regex}
        for sample in range(s.n):
            seeded = {"seed": seed_for_sample(s.seed, sample)} if s.seed is not None else {}
            messages = [dict(m) for m in request.messages]
            rows.append({"request": index, "sample": sample, "messages": messages, "sampling_params": params | seeded})
    return rows


def row_shape(row: dict[str, Any]) -> tuple[str, ...]:
    """Rows of one dataset must share a schema: (structured kind, seeded or not)."""
    structured = row["sampling_params"].get("structured_outputs") or {}
    return (*sorted(structured), "seed" if "seed" in row["sampling_params"] else "")


class Gatherer:
    """Collects the sample rows of each request and hands a ``ChatResult`` on once all ``n`` are in."""

    def __init__(self, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]):
        self.requests, self.on_result = requests, on_result
        self.samples: dict[int, dict[int, dict[str, Any]]] = {}
        self.done: set[int] = set()

    def add(self, row: dict[str, Any]) -> None:
        index, sample = int(row["request"]), int(row["sample"])
        if index in self.done:
            return  # a retried batch's second copy: the caller already has this request
        got = self.samples.setdefault(index, {})
        got[sample] = row
        request = self.requests[index]
        if len(got) < request.sampling.n:
            return
        self.done.add(index)
        del self.samples[index]
        errors = [str(r.get("__inference_error__") or "") for r in got.values()]
        if any(errors):
            self.on_result(ChatResult(request, error=next(e for e in errors if e)))
            return
        completions = []
        for _, r in sorted(got.items()):
            tokens = int(r.get("num_generated_tokens") or 0)
            finish = "length" if tokens >= request.sampling.max_tokens else "stop"
            completions.append(Completion(str(r.get("generated_text") or ""), finish, tokens))
        self.on_result(ChatResult(request, tuple(completions)))

    def missing(self) -> list[int]:
        return [i for i in range(len(self.requests)) if i not in self.done]


class RayDataEngine:
    """``run(model, ...)`` maps the requests through a ``ray.data.llm`` vLLM processor on the Ray cluster at
    ``address`` (``auto``/``$RAY_ADDRESS``: an existing one; ``local``: start one in this process)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        replicas: int = 1,
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        batch_size: int = 16,
        devices: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float | None = None,
        dtype: str | None = None,
        threads: int | None = None,
        trust_remote_code: bool = False,
        engine_kwargs: dict[str, Any] | None = None,
    ):
        if replicas < 1 or tensor_parallel_size < 1 or pipeline_parallel_size < 1 or batch_size < 1:
            raise UserInputError("--engine ray: replicas, tensor/pipeline parallel sizes and batch size must be >= 1")
        self.address = address or os.environ.get("RAY_ADDRESS") or "local"
        self.replicas, self.batch_size, self.devices, self.threads = replicas, batch_size, devices, threads
        self.parallel = tensor_parallel_size * pipeline_parallel_size
        cpu = devices == "cpu"
        self.engine_kwargs: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "pipeline_parallel_size": pipeline_parallel_size,
            "trust_remote_code": trust_remote_code,
            "dtype": dtype or ("float32" if cpu else "auto"),
            **({"max_model_len": max_model_len or CPU_MAX_MODEL_LEN} if cpu or max_model_len else {}),
            **({"gpu_memory_utilization": gpu_memory_utilization} if gpu_memory_utilization else {}),
            **({"enforce_eager": True, "kv_cache_memory_bytes": CPU_KV_CACHE_BYTES} if cpu else {}),
            **(engine_kwargs or {}),
        }

    def _connect(self) -> Any:
        try:
            import ray
        except ImportError:
            raise UserInputError("--engine ray needs Ray: pip install 'darling[ray]'") from None
        if not ray.is_initialized():
            address = None if self.address == "local" else self.address
            ray.init(address=address, runtime_env={"env_vars": self._worker_env()}, log_to_driver=False)
        return ray

    def _worker_env(self) -> dict[str, str]:
        env = {"VLLM_NO_USAGE_STATS": "1"}
        if "HF_HUB_OFFLINE" in os.environ:  # only what the driver sets: a node's own setting is not overridden
            env["HF_HUB_OFFLINE"] = os.environ["HF_HUB_OFFLINE"]
        if self.devices == "cpu":
            threads = str(self.threads or 1)
            env |= {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": threads}
            env |= {"VLLM_CPU_OMP_THREADS_BIND": "nobind"}
        return env

    def processor_config(self, model_path: str) -> Any:
        """The ``vLLMEngineProcessorConfig`` of a run on ``model_path``."""
        from ray.data.llm import vLLMEngineProcessorConfig

        cpu = self.devices == "cpu"
        # devices=cpu: no GPU in the bundles, so Ray places each engine on CPUs only.
        placement = {"bundles": [{"CPU": 1}] * self.parallel, "strategy": "PACK"} if cpu else None
        return vLLMEngineProcessorConfig(
            model_source=model_path,
            engine_kwargs=dict(self.engine_kwargs),
            concurrency=self.replicas,
            batch_size=self.batch_size,
            placement_group_config=placement,
            should_continue_on_error=True,  # a refused prompt is that request's failure, not the run's
            log_engine_metrics=False,
            # On CPU the engine tokenizes and detokenizes in its own process: Ray Data's stages for that are two more
            # actor pools, each a worker process importing transformers beside the engines on the same cores.
            tokenize_stage=not cpu,
            detokenize_stage=not cpu,
        )

    def _processor(self, model_path: str) -> Any:
        from ray.data.llm import build_processor

        return build_processor(self.processor_config(model_path))

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        for request in requests:
            check_request(request)
        if not requests:
            return

        ray = self._connect()
        processor = self._processor(resolve_model(model))
        gatherer = Gatherer(requests, on_result)
        rows = request_rows(requests)
        for shape in dict.fromkeys(map(row_shape, rows)):  # one dataset per schema, in request order
            items = [r for r in rows if row_shape(r) == shape]
            # A block per batch: one block goes to one replica, so a single block would leave the others idle.
            dataset = ray.data.from_items(items, override_num_blocks=-(-len(items) // self.batch_size))
            for row in processor(dataset).iter_rows():
                gatherer.add(row)
        for index in gatherer.missing():  # Ray Data returned no row for it: recorded, a rerun retries it
            on_result(ChatResult(requests[index], error="ray: no output returned for this request"))

    def close(self) -> None:
        try:
            import ray
        except ImportError:
            return
        if ray.is_initialized():
            ray.shutdown()
