"""``--launcher ray``: the chain as one Ray job. ``RUN/ray/submit.sh`` submits ``commands.sh`` with ``ray job submit``:
the entrypoint runs on the cluster's head node, and every generating command (rollouts, the judge, eval math, eval
novelty, eval creative) runs with ``--engine ray --ray-address auto``, so its vLLM replicas spread over the cluster's
nodes (``data_parallel_size`` of them, ``tensor_parallel_size`` devices each). Training (the classifier, RL) and
the classifier's replicas stay on the head node, as ``commands.sh`` places them (for multi-node training:
``--launcher slurm``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import PipelineConfig

RAY_DIR = "ray"
SUBMIT = "submit.sh"


def render_submit(config: PipelineConfig) -> str:
    commands = shlex.quote(str(config.run / "commands.sh"))
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            f"# darling pipeline, preset {config.preset}, as one Ray job: commands.sh runs on the head node; every",
            "# generating command spreads its vLLM replicas over the cluster (--engine ray --ray-address auto).",
            "# RUN must be on a file system every node reads. Resumable: resubmit after an interruption.",
            "set -euo pipefail",
            'ray job submit --address "${RAY_ADDRESS:-http://127.0.0.1:8265}" -- bash ' + commands,
            "",
        ]
    )


def write_ray_job(config: PipelineConfig) -> Path:
    path = config.run / RAY_DIR / SUBMIT
    atomic_write_bytes(path, render_submit(config).encode())
    path.chmod(0o755)
    return path
