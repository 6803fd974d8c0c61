"""``darling serve-classifier``: N vLLM replicas of an exported classifier, and the served-vs-in-process check.

Each replica is ``--runner pooling --convert classify`` (a cross-encoder export) or ``--convert embed`` (a
bi-encoder export) on its own port (on GPUs, pinned to its own device
through ``CUDA_VISIBLE_DEVICES``). The parity check sends sample pairs as token ids through the same client
the RL reward uses and compares with ``EquivalenceClassifier`` in this process.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from darling.classifier.serving import CPU_SERVER_ARGS, VLLMServer, cpu_server_env, free_port
from darling.core.config import CommandConfig, option
from darling.core.errors import UserInputError


@dataclass(kw_only=True)
class ServeConfig(CommandConfig):
    """Settings of ``darling serve-classifier`` (no presets: every default is the command's)."""

    PRESET_PACKAGE: ClassVar[str | None] = None

    model: Path = option(help="An exported classifier directory (train-classifier).")
    replicas: int = option(1, help="Number of vLLM servers (one per GPU).")
    port: int = option(8000, help="Port of the first replica; the others follow (0 = free ports).")
    host: str = option("127.0.0.1", help="Bind address (127.0.0.1 unless you need remote access).")
    gpus: str | None = option(None, help="Comma-separated GPU ids, one per replica (e.g. 0,1,2,3).")
    cpu: bool = option(False, help="vLLM's CPU build: fp32, eager, small KV cache.")
    python: str | None = option(None, help="vLLM's Python (default: $DARLING_VLLM_PYTHON or the venv).")
    # The flag --check hides CommandConfig.check (the rules hook): this class's rules extend validate() instead.
    check: bool = option(False, help="Compare served vs in-process probabilities on sample pairs.")  # type: ignore[assignment]
    exit_after_check: bool = option(False, help="Stop the servers after --check (scripts, CI).")

    def validate(self) -> None:
        super().validate()
        if self.replicas < 1:
            raise UserInputError(f"replicas must be >= 1, got {self.replicas}")

    def devices(self) -> list[str] | None:
        """``--gpus 0,1`` as the list ``start_replicas`` takes."""
        return self.gpus.split(",") if self.gpus else None


def default_vllm_python() -> str:
    """vLLM's Python: ``$DARLING_VLLM_PYTHON``, the venv ``.ci/setup.sh`` makes, or this interpreter."""
    if os.environ.get("DARLING_VLLM_PYTHON"):
        return os.environ["DARLING_VLLM_PYTHON"]
    venv = Path(os.environ.get("DARLING_VLLM_VENV", Path.home() / ".cache/darling/vllm-venv")) / "bin/python"
    return str(venv) if venv.exists() else sys.executable


def start_replicas(
    model_dir: Path,
    replicas: int = 1,
    python: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    gpus: list[str] | None = None,
    cpu: bool = False,
    max_model_len: int | None = None,
    timeout: float = 600.0,
) -> list[VLLMServer]:
    """Start ``replicas`` servers on ports ``port, port+1, ...`` (0: free ports) and wait until all are healthy."""
    from darling.classifier.config import BI_ENCODER
    from darling.classifier.export import read_export_meta

    meta = read_export_meta(model_dir)  # fails with one line unless this is a darling export
    runner = "embed" if meta["kind"] == BI_ENCODER else "classify"
    max_model_len = max_model_len or meta["max_length"]  # the longest input the encoder ever builds
    if gpus and len(gpus) < replicas:
        raise UserInputError(f"{replicas} replicas need {replicas} --gpus, got {len(gpus)}")
    servers = []
    cache = Path(tempfile.mkdtemp(prefix="darling-serve-"))
    for k in range(replicas):
        env = cpu_server_env(cache / str(k), threads=max(1, (os.cpu_count() or 2) // replicas)) if cpu else {}
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = gpus[k]
        servers.append(
            VLLMServer(
                model_dir,
                python=python or default_vllm_python(),
                host=host,
                port=port + k if port else free_port(host),
                max_model_len=max_model_len,
                dtype="float32" if cpu else "auto",
                runner=runner,
                extra_args=list(CPU_SERVER_ARGS) if cpu else [],
                env=env,
            ).start()
        )
    try:
        for server in servers:
            server.wait_healthy(timeout)
    except BaseException:
        stop_all(servers)
        raise
    return servers


def stop_all(servers: list[VLLMServer]) -> None:
    for server in servers:
        server.stop()


@dataclass(frozen=True)
class ParityReport:
    pairs: int
    max_abs_diff: float
    decisions_agree: int

    @property
    def ok(self) -> bool:
        return self.max_abs_diff < 1e-3 and self.decisions_agree == self.pairs


def parity_check(model_dir: Path, urls: list[str], pairs: list[tuple[str, str]]) -> ParityReport:
    """Served P(equivalent) vs in-process, same pairs, same token ids (both orders when a cross-encoder export
    is symmetric; a bi-encoder's served embeddings go through the same cosine map as the local ones)."""
    from darling.classifier.loading import load_scorer

    local = load_scorer(model_dir)
    served = load_scorer(model_dir, urls)
    try:
        remote_p = served.prob_equivalent(pairs)
        remote_d = served.is_equivalent(pairs)
    finally:
        served.client.close()
    local_p, local_d = local.prob_equivalent(pairs), local.is_equivalent(pairs)
    return ParityReport(len(pairs), float(np.max(np.abs(remote_p - local_p))), int(np.sum(remote_d == local_d)))


def sample_pairs(n: int = 32) -> list[tuple[str, str]]:
    """Real response pairs for the check: the built-in NoveltyBench pairs."""
    from darling.classifier.data import load_pairs

    return [p.texts for p in load_pairs("noveltybench").pairs[:n]]
