"""Replicas of a vLLM pooling server, one per GPU (or on vLLM's CPU build): starting and stopping them, the ready
file and SIGTERM, shared by ``darling serve-classifier`` and ``darling serve-reward-model`` (their shared settings:
``darling.core.replica_config``)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path

from darling.core.replica_config import ReplicaConfig
from darling.core.shards import atomic_write_bytes
from darling.core.vllm_server import (
    CPU_SERVER_ARGS,
    VLLMServer,
    cpu_server_env,
    default_vllm_python,
    free_port,
)


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
