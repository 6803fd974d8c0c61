"""What the suite's process settings (tests/support/helpers.py, SUITE_PROCESS_ENV) save a tiny ``rl-train``, the
chains' commonest command: the same command without them, with them, and with the settings tried and not kept, alone
and beside a process keeping one core busy (the suite's other worker), alternating within each repetition; wall, user
and kernel CPU seconds and peak memory per run, then the medians and their ratios to the run without any.

    .venv/bin/python tests/support/timing/process_env.py --reps 2

The command is the chains' tiny random Qwen3 (its 151,643-token vocabulary makes its logits the large blocks) for 3
GRPO steps of 16 sequences on 2 threads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/support
from helpers import SUITE_PROCESS_ENV  # noqa: E402  (the settings the suite runs with, defined once there)

# Tried and not kept: glibc keeping freed blocks for reuse (the tiny policy's logits are blocks of hundreds of MB made
# and freed at every step). It cut the kernel's CPU 3-4x, but the whole process's CPU moved 0.70-1.11x over two runs
# (more user time beside a busy core in one), and it raised peak memory 1.2-1.3x.
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(2**31 - 1), "MALLOC_TRIM_THRESHOLD_": str(2**32), "MALLOC_TOP_PAD_": str(2**29)}
SUBSETS = {"none": {}, "suite": SUITE_PROCESS_ENV, "malloc kept": MALLOC, "both": {**SUITE_PROCESS_ENV, **MALLOC}}
SETTINGS = {name for subset in SUBSETS.values() for name in subset}


def command(output: Path, threads: int) -> list[str]:
    return [
        *(sys.executable, "-m", "darling", "rl-train", "--preset", "naming", "--output", str(output)),
        *("--policy", "tiny:qwen3-lm", "--limit", "4", "--method", "grpo", "--no-strict-length"),
        *("--per-device-train-batch-size", "16", "--max-completion-length", "16", "--set", "trainable_layers=none"),
        *("--temperature", "1.0", "--max-steps", "3", "--save-steps", "100", "--seed", "0"),
        *("--threads", str(threads)),
    ]


def run_once(settings: dict[str, str], busy: bool, threads: int) -> dict[str, float]:
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **settings}
    for name in SETTINGS:  # only the subset under test, whatever this shell has
        if name not in settings:
            env.pop(name, None)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            start = time.perf_counter()
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            child = subprocess.Popen(command(Path(scratch) / "rl", threads), env=env, **quiet)
            _, status, usage = os.wait4(child.pid, 0)  # this process's own figures, not every child's so far
            wall = time.perf_counter() - start
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"rl-train failed with {settings}")
    return {"wall_s": wall, "user_s": usage.ru_utime, "sys_s": usage.ru_stime, "peak_gib": usage.ru_maxrss / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2, help="each subset this many times, alternating")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    runs: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for _ in range(args.reps):
        for busy in (False, True):
            for name, settings in SUBSETS.items():
                figures = run_once(settings, busy, args.threads)
                runs.setdefault((name, busy), []).append(figures)
                where = "beside a busy core" if busy else "alone"
                print(f"{name:12} {where:18}", json.dumps({k: round(v, 2) for k, v in figures.items()}), flush=True)
    print("\n| settings | where | wall s | user s | kernel s | peak GiB | CPU / none's | wall / none's |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for busy in (False, True):
        base = {k: statistics.median(r[k] for r in runs[("none", busy)]) for k in ("wall_s", "user_s", "sys_s")}
        for name in SUBSETS:
            m = {k: statistics.median(r[k] for r in runs[(name, busy)]) for k in runs[(name, busy)][0]}
            cpu = (m["user_s"] + m["sys_s"]) / (base["user_s"] + base["sys_s"])
            where = "beside a busy core" if busy else "alone"
            print(
                f"| {name} | {where} | {m['wall_s']:.1f} | {m['user_s']:.1f} | {m['sys_s']:.1f} | "
                f"{m['peak_gib']:.2f} | {cpu:.2f} | {m['wall_s'] / base['wall_s']:.2f} |"
            )


if __name__ == "__main__":
    main()
