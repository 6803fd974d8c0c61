"""The settings every ``serve-*`` command shares (``serve-classifier``, ``serve-reward-model``), defined once and
import-light (the command line builds its flags from them): how many replicas, where, which vLLM, the check and the
ready file. Starting and stopping them is ``darling.core.replicas``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from darling.core.config import CommandConfig, option
from darling.core.devices import cuda_available
from darling.core.errors import UserInputError

SERVE_DTYPES = ("float32", "bfloat16", "float16")


@dataclass(kw_only=True, frozen=True)
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
