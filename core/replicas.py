"""Replicas of a vLLM pooling server, one per GPU (or on vLLM's CPU build): the settings, starting and stopping them,
the ready file and SIGTERM, shared by ``darling serve-classifier`` and ``darling serve-reward-model``."""

from __future__ import annotations

import json
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from darling.core.config import CommandConfig, option
from darling.core.errors import UserInputError
from darling.core.shards import atomic_write_bytes
from darling.core.vllm_server import (
    CPU_SERVER_ARGS,
    VLLMServer,
    cpu_server_env,
    cuda_available,
    default_vllm_python,
    free_port,
)

SERVE_DTYPES = ("float32", "bfloat16", "float16")


@dataclass(kw_only=True)
class ReplicaConfig(CommandConfig):
    """The replica settings every ``serve-*`` command shares (``serve-classifier``, ``serve-reward-model``): how
    many, where, which vLLM, the check and the ready file. Each command's class names its model and dtype."""

    PRESET_PACKAGE: ClassVar[str | None] = None

    model: Path | str = option(help="The model the replicas serve.")
    replicas: int = option(1, help="Number of vLLM servers (one per GPU).")
    port: int = option(8000, help="Port of the first replica; the others follow (0 = free ports).")
    host: str = option("127.0.0.1", help="Bind address (127.0.0.1 unless you need remote access).")
    devices: str = option(
        "auto",
        aliases=("--gpus",),
        help="Where the replicas run: comma-separated GPU ids, one per replica (6,7); cpu (vLLM's CPU build, fp32 "
        "or bf16, eager, a small KV cache); auto: GPUs 0.. when CUDA is visible, else cpu.",
    )
    dtype: str | None = option(None, choices=SERVE_DTYPES, help="Serving dtype.")
    gpu_memory_utilization: float | None = option(
        None, help="Share of each replica's GPU that vLLM may take (default: vLLM's, 0.9)."
    )
    python: str | None = option(
        None, help="vLLM's Python (default: $DARLING_VLLM_PYTHON, this environment if it has vLLM, else the CPU build)."
    )
    # The flag --check hides CommandConfig.check (the rules hook): this class's rules extend validate() instead.
    check: bool = option(False, help="Compare served vs in-process scores on sample inputs.")  # type: ignore[assignment]
    exit_after_check: bool = option(False, help="Stop the servers after --check (scripts, CI).")
    ready_file: Path | None = option(
        None,
        help="Written (URLs and process ids, as JSON) once every replica is healthy and --check passed: a script "
        "waits for it before it starts the jobs that use the replicas.",
    )

    def validate(self) -> None:
        super().validate()
        if self.replicas < 1:
            raise UserInputError(f"replicas must be >= 1, got {self.replicas}")
        gpus = self.gpu_ids()
        if gpus is not None and len(gpus) < self.replicas:
            raise UserInputError(f"{self.replicas} replicas need {self.replicas} --devices, got {len(gpus)}")

    def gpu_ids(self) -> list[str] | None:
        """``--devices 6,7`` as a list; None for cpu and auto."""
        if self.devices in ("auto", "cpu"):
            return None
        return [d.strip() for d in self.devices.split(",") if d.strip()]

    def on_cpu(self) -> bool:
        if self.devices == "cpu":
            return True
        if self.devices == "auto":
            return not cuda_available()
        return False


def pooling_replicas(
    config: ReplicaConfig, model: Path | str, runner: str, dtype: str, max_model_len: int
) -> list[VLLMServer]:
    """``config.replicas`` vLLM pooling servers of ``model`` (not started): ``--convert runner``, one GPU each (or
    the CPU build), ports ``port, port+1, ...`` (0: free ports)."""
    cpu = config.on_cpu()
    gpus = config.gpu_ids() or ([str(k) for k in range(config.replicas)] if not cpu else None)
    servers = []
    for k in range(config.replicas):
        scratch = Path(tempfile.mkdtemp(prefix="darling-serve-")) if cpu else None
        env = cpu_server_env(scratch, threads=max(1, (os.cpu_count() or 2) // config.replicas)) if scratch else {}
        extra = list(CPU_SERVER_ARGS) if cpu else []
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = gpus[k]
        if config.gpu_memory_utilization is not None and not cpu:
            extra += ["--gpu-memory-utilization", str(config.gpu_memory_utilization)]
        servers.append(
            VLLMServer(
                Path(model),
                python=config.python or default_vllm_python(),
                host=config.host,
                port=config.port + k if config.port else free_port(config.host),
                max_model_len=max_model_len,
                dtype=dtype,
                runner=runner,
                extra_args=extra,
                env=env,
                scratch=scratch,
            )
        )
    return servers


def start_servers(servers: list[VLLMServer], timeout: float = 600.0) -> list[VLLMServer]:
    """Start ``servers`` and wait until all are healthy (all are stopped again if one fails)."""
    try:
        for server in servers:
            server.start()
        for server in servers:
            server.wait_healthy(timeout)
    except BaseException:
        stop_all(servers)
        raise
    return servers


def stop_all(servers: list[VLLMServer]) -> None:
    for server in servers:
        server.stop()


def stop_on_sigterm() -> None:
    """SIGTERM (a script's ``kill``, a scheduler's stop) ends the command as Ctrl-C does, through its cleanup:
    the replicas run in sessions of their own, so nothing else would stop them."""
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))


def write_ready_file(path: Path, servers: list[VLLMServer]) -> None:
    data = {"urls": [s.base_url for s in servers], "pids": [s.process.pid for s in servers if s.process]}
    atomic_write_bytes(Path(path), (json.dumps(data, indent=2) + "\n").encode())


def free_gpu_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
