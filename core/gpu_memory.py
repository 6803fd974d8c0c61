"""The peak GPU memory of a ``darling`` process, recorded where the pipeline asks for it.

``darling pipeline`` runs each stage's block with ``DARLING_GPU_MEMORY_LOG`` (a JSON-lines file under ``RUN/logs``)
and ``DARLING_STAGE`` set; every ``darling`` command of the block, at its exit, appends one line when it used a GPU:
its stage, its ``--output``, and ``torch.cuda.max_memory_allocated`` (and ``max_memory_reserved``, what the caching
allocator held, closer to what ``nvidia-smi`` shows) of each device it touched. A process that never initialised
CUDA writes nothing, so a CPU run leaves no file. One short append per process: lines of concurrent processes never
interleave.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

LOG_ENV = "DARLING_GPU_MEMORY_LOG"  # where a process appends its record (set by the pipeline's runner)
STAGE_ENV = "DARLING_STAGE"  # the stage whose block started the process
GIB = 1024**3


def record_at_exit() -> None:
    """Append this process's peak GPU memory to ``$DARLING_GPU_MEMORY_LOG`` when it exits (nothing when unset)."""
    if os.environ.get(LOG_ENV):
        atexit.register(_write_record)


def output_of(argv: list[str]) -> str | None:
    """The ``--output`` / ``-o`` a command line names (``--output=X`` too), None when it names none."""
    for i, word in enumerate(argv):
        if word in ("--output", "-o") and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--output="):
            return word.split("=", 1)[1]
    return None


def process_record(argv: list[str], peaks: dict[int, tuple[int, int]], device: str, total: int) -> dict[str, Any]:
    """One process's line: ``peaks`` maps a device index to (max allocated, max reserved) bytes."""
    return {
        "stage": os.environ.get(STAGE_ENV),
        "output": output_of(argv),
        "command": " ".join(w for w in argv[:3] if not w.startswith("-")),
        "rank": int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", 0))),
        "host": socket.gethostname(),
        "device": device,
        "card_bytes": total,
        "peak_allocated_bytes": max(a for a, _ in peaks.values()),
        "peak_reserved_bytes": max(r for _, r in peaks.values()),
        "devices": {str(i): {"allocated": a, "reserved": r} for i, (a, r) in peaks.items()},
    }


def append_record(path: Path, record: dict[str, Any]) -> None:
    """One line, in one write to a file opened for appending (concurrent writers' lines stay whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _write_record() -> None:
    torch = sys.modules.get("torch")  # never imported here: a process that did not load torch used no GPU
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return
    peaks = {
        i: (torch.cuda.max_memory_allocated(i), torch.cuda.max_memory_reserved(i))
        for i in range(torch.cuda.device_count())
    }
    peaks = {i: p for i, p in peaks.items() if p[1] > 0}
    if not peaks:
        return
    first = min(peaks)
    props = torch.cuda.get_device_properties(first)
    append_record(Path(os.environ[LOG_ENV]), process_record(sys.argv[1:], peaks, props.name, props.total_memory))
