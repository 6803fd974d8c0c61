"""Start and stop a vLLM server: an exported classifier (``--runner pooling --convert classify`` for a
cross-encoder, ``--convert embed`` for a bi-encoder) or a chat model (a generator, a judge, a policy).

vLLM may live in its own environment (its torch/transformers pins can differ from training's), so the server is
started with that environment's Python (``python -m vllm.entrypoints.openai.api_server``; the console script of
CPU builds cannot find its own package metadata): ``default_vllm_python`` picks it. Binds 127.0.0.1 unless told.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from darling.core.local_models import cache_root


def default_vllm_python() -> str:
    """vLLM's Python: ``$DARLING_VLLM_PYTHON``; else this interpreter when its environment has vLLM (a GPU install,
    ``darling[gpu]``); else the CPU build ``.ci/setup.sh`` makes (``$DARLING_VLLM_VENV``, default
    ``~/.cache/darling/vllm-venv``); else this interpreter (and vLLM's own import error)."""
    if os.environ.get("DARLING_VLLM_PYTHON"):
        return os.environ["DARLING_VLLM_PYTHON"]
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    venv = Path(os.environ.get("DARLING_VLLM_VENV", Path.home() / ".cache/darling/vllm-venv")) / "bin/python"
    return str(venv) if venv.exists() else sys.executable


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class VLLMServer:
    model_dir: Path
    python: str = sys.executable
    host: str = "127.0.0.1"
    port: int = 0
    max_model_len: int | None = 1024  # None: the model's own context length
    dtype: str = "auto"
    extra_args: list[str] = field(default_factory=list)
    # "classify": a cross-encoder export; "embed": a bi-encoder export; "generate": a chat model (generator, judge)
    runner: str = "classify"
    served_model_name: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    process: subprocess.Popen | None = None
    scratch: Path | None = None  # a folder of this server's own (the CPU build's caches), removed by stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        return [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--host",
            self.host,
            "--port",
            str(self.port),
            *(["--runner", "pooling", "--convert", self.runner] if self.runner in ("classify", "embed") else []),
            *(["--served-model-name", self.served_model_name] if self.served_model_name else []),
            *(["--max-model-len", str(self.max_model_len)] if self.max_model_len else []),
            "--dtype",
            self.dtype,
            *self.extra_args,
        ]

    def start(self) -> VLLMServer:
        self.port = self.port or free_port(self.host)
        if self.log_path is None:
            self.log_path = Path(tempfile.mkstemp(prefix="vllm-", suffix=".log")[1])
        env = {**os.environ, "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", **self.env}
        log = self.log_path.open("wb")
        # A new session, so stop() can signal the server and any worker processes it spawned.
        self.process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        return self

    def log_tail(self, n: int = 40) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def failure(self) -> str:
        """Why the server stopped, in one line: the last error its log names, and where the log is."""
        lines = [line.strip() for line in self.log_tail(400).splitlines()]
        errors = [line for line in lines if "Error:" in line or "error:" in line]
        return f"{errors[-1] if errors else 'see its log'} (log: {self.log_path})"

    def wait_healthy(self, timeout: float = 300.0) -> VLLMServer:
        if self.process is None:
            raise RuntimeError("wait_healthy() before start()")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.base_url + "/health", timeout=2.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(1.0)
        self.stop()
        raise TimeoutError(f"vLLM did not become healthy in {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self, timeout: float = 20.0) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> VLLMServer:
        return self.start().wait_healthy()

    def __exit__(self, *exc) -> None:
        self.stop()


def cpu_server_env(cache_dir: Path, threads: int = 1) -> dict[str, str]:
    """Settings that start vLLM's CPU build quickly: its scratch files in ``cache_dir``, its cache of model
    inspections shared (``$VLLM_CACHE_ROOT``, else ``$DARLING_CACHE/vllm-cache``): without it every server start
    inspects the architecture again in a subprocess (~9 s of a ~28 s start here; vLLM writes the cache atomically)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    return {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CACHE_ROOT": os.environ.get("VLLM_CACHE_ROOT") or str(cache_root() / "vllm-cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "inductor"),
        "HF_HOME": str(cache_dir / "hf"),
        "TMPDIR": str(cache_dir),
        "OMP_NUM_THREADS": str(threads),
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    }


CPU_SERVER_ARGS = ["--enforce-eager", "--distributed-executor-backend", "uni", "--kv-cache-memory-bytes", "64M"]
