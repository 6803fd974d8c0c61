"""GPU memory in a pipeline run: what each command peaked at (read back into its stage's record and the report), and
how many side-by-side commands the card holds (a one-GPU study runs only as many at once as fit).

Each ``darling`` command under the runner appends its peak (``darling.core.gpu_memory``) to ``RUN/logs/
gpu-memory.jsonl``; ``stage_peaks`` reads one stage's lines back, one entry per command (its ``--output`` folder
under RUN), the highest of its processes and attempts. ``fit_side_by_side`` caps ``seed_jobs`` (then ``jobs``) so that
the GPU commands running at once, each ``gpu_memory_per_process`` GiB at its peak, fit in 90% of the card.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from darling.core.gpu_memory import GIB

MEMORY_LOG = "gpu-memory.jsonl"  # under RUN/logs/
HEADROOM = 0.9  # the share of a card side-by-side commands may fill (CUDA contexts, fragmentation, the evaluations)


def stage_peaks(log: Path, stage: str, run: Path) -> dict[str, dict[str, Any]]:
    """``{command folder: {peak_allocated_gib, peak_reserved_gib, processes, device, card_gib}}`` of ``stage``'s
    lines in ``log`` (none: the stage used no GPU, or ran where none was)."""
    if not log.exists():
        return {}
    out: dict[str, dict[str, Any]] = {}
    for line in log.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line cut by a full disk: the others still count
            continue
        if record.get("stage") != stage:
            continue
        output = Path(record.get("output") or record.get("command") or "?")
        name = output.relative_to(run).as_posix() if output.is_relative_to(run) else output.as_posix()
        entry = out.setdefault(name, {"peak_allocated_gib": 0.0, "peak_reserved_gib": 0.0, "processes": 0})
        entry["peak_allocated_gib"] = max(entry["peak_allocated_gib"], round(record["peak_allocated_bytes"] / GIB, 2))
        entry["peak_reserved_gib"] = max(entry["peak_reserved_gib"], round(record["peak_reserved_bytes"] / GIB, 2))
        entry["processes"] += 1
        entry.update(device=record.get("device"), card_gib=round(record.get("card_bytes", 0) / GIB, 1))
    return out


def peaks_line(peaks: dict[str, dict[str, Any]]) -> str | None:
    """One report line: each command's peak (allocated, reserved) in GiB, on which card."""
    if not peaks:
        return None
    cards = sorted({f"{p['device']} ({p['card_gib']:.0f} GiB)" for p in peaks.values()})
    shown = ", ".join(
        f"`{name}` {p['peak_allocated_gib']:.1f} ({p['peak_reserved_gib']:.1f})" for name, p in sorted(peaks.items())
    )
    return (
        f"GPU peak memory per command, GiB allocated (reserved by the caching allocator; `torch.cuda."
        f"max_memory_allocated`, the highest of its processes) on {', '.join(cards)}: {shown}."
    )


def fit_side_by_side(card_gib: float, per_process_gib: float, jobs: int, seed_jobs: int) -> tuple[int, int]:
    """(jobs, seed_jobs) with at most as many GPU commands at once as fit ``HEADROOM`` of the card: fewer seeds side
    by side first (each seed keeps its own commands together), then fewer commands per seed; never below one."""
    fit = max(1, int(card_gib * HEADROOM // per_process_gib))
    if jobs * seed_jobs <= fit:
        return jobs, seed_jobs
    seed_jobs = max(1, fit // jobs)
    return min(jobs, fit), seed_jobs
