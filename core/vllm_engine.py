"""The ``vllm`` engine: one vLLM server process per model, talked to over HTTP.

Each model gets its own ``python -m vllm.entrypoints.openai.api_server`` (vLLM from ``default_vllm_python``: this
environment's, or the CPU build ``.ci/setup.sh`` makes) with that model's own tensor and data parallelism, context
length and GPU memory share; requests go through the ``openai`` engine (concurrency, timeouts, retries with backoff,
failures recorded, never turned into text); when the next model comes, or the engine closes, the server process
ends and its GPUs are free again. Loading several ``vllm.LLM`` engines one after another in one process relies on
garbage collection to free tensor-parallel workers, which vLLM does not reliably do (measured in
``bench/vllm_engines.py``; the in-process engine is ``vllm-offline``).

On a machine without CUDA (or ``devices="cpu"``) the server is vLLM's CPU build: fp32 by default, eager, a
KV cache of ``cpu_kv_cache`` bytes and (unless given) a context of ``CPU_MAX_MODEL_LEN`` tokens, which that cache
holds; the same commands as on GPUs.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from darling.core.devices import cuda_available
from darling.core.engine_api import ChatRequest, ChatResult
from darling.core.errors import UserInputError
from darling.core.local_models import resolve_model
from darling.core.openai_engine import OpenAIEngine
from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env, default_vllm_python

CPU_MAX_MODEL_LEN = 2048  # the CPU build's context unless --max-model-len says otherwise


class VLLMServerEngine:
    """``run(model, ...)`` starts (or reuses) the server of ``model``; ``close()`` stops it."""

    name = "vllm"

    def __init__(
        self,
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        max_model_len: int | None = None,
        gpu_memory_utilization: float | None = None,
        dtype: str = "auto",
        devices: str = "auto",
        python: str | None = None,
        concurrency: int = 64,
        timeout: float = 600.0,
        max_retries: int = 4,
        startup_timeout: float = 1800.0,
        cpu_kv_cache: str = "256M",
        threads: int | None = None,
        trust_remote_code: bool = False,
    ):
        for name, value in (("tensor_parallel_size", tensor_parallel_size), ("data_parallel_size", data_parallel_size)):
            if value < 1:
                raise UserInputError(f"vllm engine: {name} must be >= 1, got {value}")
        self.tensor_parallel_size, self.data_parallel_size = tensor_parallel_size, data_parallel_size
        self.max_model_len, self.gpu_memory_utilization = max_model_len, gpu_memory_utilization
        self.dtype, self.devices, self.python = dtype, devices, python
        self.concurrency, self.timeout, self.max_retries = concurrency, timeout, max_retries
        self.startup_timeout, self.cpu_kv_cache, self.threads = startup_timeout, cpu_kv_cache, threads
        self.trust_remote_code = trust_remote_code
        self.server: VLLMServer | None = None
        self._model: str | None = None
        self.servers_started = 0

    @property
    def on_cpu(self) -> bool:
        return self.devices == "cpu" or (self.devices == "auto" and not cuda_available())

    def server_for(self, model: str) -> VLLMServer:
        """The server of ``model`` (not started): its parallelism, memory, dtype and devices."""

        args: list[str] = []
        env: dict[str, str] = {}
        dtype = self.dtype
        scratch = None
        if self.on_cpu:
            scratch = Path(tempfile.mkdtemp(prefix="darling-vllm-"))
            env = cpu_server_env(scratch, threads=self.threads or 1)
            args = [*CPU_SERVER_ARGS[:-1], self.cpu_kv_cache]
            dtype = "float32" if dtype == "auto" else dtype  # the CPU build's auto picks bf16 where it can
        else:
            if self.devices != "auto":
                env["CUDA_VISIBLE_DEVICES"] = self.devices
            args = ["--tensor-parallel-size", str(self.tensor_parallel_size)]
            if self.data_parallel_size > 1:
                args += ["--data-parallel-size", str(self.data_parallel_size)]
            if self.gpu_memory_utilization is not None:
                args += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.trust_remote_code:
            args.append("--trust-remote-code")
        server = VLLMServer(
            Path(resolve_model(model)),
            python=self.python or default_vllm_python(),
            runner="generate",
            served_model_name=model,
            dtype=dtype,
            extra_args=args,
            env=env,
            scratch=scratch,
        )
        # None on GPUs: the model's own context length; on the CPU build a KV cache of a few hundred MB holds less.
        server.max_model_len = self.max_model_len or (CPU_MAX_MODEL_LEN if self.on_cpu else None)
        return server

    def _serve(self, model: str) -> VLLMServer:
        process = self.server.process if self.server is not None else None
        if self.server is not None and self._model == model and process is not None and process.poll() is None:
            return self.server
        self.close()
        server = self.server_for(model)
        start = time.monotonic()
        server.start()
        self.server, self._model = server, model
        self.servers_started += 1
        try:
            server.wait_healthy(self.startup_timeout)
        except (RuntimeError, TimeoutError):
            reason = server.failure()
            self.close()
            raise UserInputError(f"vllm engine: the server of {model} did not start: {reason}") from None
        where = "cpu" if self.on_cpu else f"tensor {self.tensor_parallel_size} x data {self.data_parallel_size}"
        pid = server.process.pid if server.process is not None else "?"
        _say(f"vllm: serving {model} ({where}, pid {pid}) after {time.monotonic() - start:.0f} s")
        return server

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        if not requests:
            return
        server = self._serve(model)
        client = OpenAIEngine(
            server.base_url + "/v1", concurrency=self.concurrency, timeout=self.timeout, max_retries=self.max_retries
        )
        client.run(model, requests, on_result)

    def close(self) -> None:
        """Stop the server: the process ends, and with it every GPU buffer it held."""
        if self.server is not None and self.server.process is not None:
            self.server.stop()
            _say(f"vllm: stopped {self._model} (pid {self.server.process.pid})")
        self.server, self._model = None, None

    def __del__(self) -> None:  # a forgotten close() must not leave a server holding GPUs
        with contextlib.suppress(Exception):  # at interpreter shutdown the modules it needs may be gone
            self.close()


def _say(line: str) -> None:
    """A line on stderr (the command's log): which model each server process held, and when it ended."""
    print(line, file=sys.stderr, flush=True)
