"""The README's test command, timed per module: where the suite's minutes go, from pytest's own phase reports.

Runs ``.venv/bin/python -m pytest`` (the README's command, its addopts unchanged: two workers, a module whole to
one worker) with ``suite_clock.py`` (beside it) recording every phase, then writes per module its worker time (the
sum of its tests' setup, call and teardown: module and session fixtures count where they start), its wall span on its
worker, and the worker; per worker its busy time; the suite's wall time and outcome counts. ``--clone REV`` runs
from a fresh clone of REV (set-up timed apart from the tests), ``--empty-home`` with an empty HOME, as a new user
and CI do; the clone is deleted afterwards. tests/conftest.py schedules the modules longest first by the
``worker_s`` this script writes to ``tests/support/timing/suite_times.json`` (the default ``--out``).

    python tests/support/timing/suite_times.py --clone HEAD --empty-home    # the whole measurement, ~30 min on 2 cores
    python tests/support/timing/suite_times.py --out /tmp/t.json -- tests/core  # this tree, a subset
    python tests/support/timing/suite_times.py --report-only RAW.jsonl --out OUT.json  # the table again
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEFAULT_OUT = HERE / "suite_times.json"


class MachineClock(threading.Thread):
    """The whole machine's cumulative busy and idle CPU seconds, sampled every second from /proc/stat into
    ``machine.jsonl`` beside RAW. The test processes' own clocks miss what they do not wait for (Ray's daemonised
    workers, the servers the suite shares); the idle seconds are the cores neither worker kept busy."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.done = path, threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def sample(self) -> dict[str, float]:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
        busy = user + nice + system + irq + softirq + steal
        return {"t": time.time(), "busy": busy / self.tick, "idle": (idle + iowait) / self.tick}

    def run(self) -> None:
        with self.path.open("w") as out:
            while True:
                out.write(json.dumps(self.sample()) + "\n")
                out.flush()
                if self.done.wait(1.0):
                    out.write(json.dumps(self.sample()) + "\n")
                    return


def machine_between(samples: list[dict[str, float]], start: float, stop: float) -> dict[str, float]:
    """Busy and idle CPU seconds of the machine between two times (the nearest samples at or inside them)."""
    inside = [s for s in samples if start <= s["t"] <= stop] or samples[:1]
    first, last = inside[0], inside[-1]
    return {k: round(last[k] - first[k], 1) for k in ("busy", "idle")}


def run_suite(tree: Path, env: dict[str, str], raw: Path, pytest_args: list[str]) -> tuple[float, int, str]:
    """The README's test command in ``tree`` with the clock on; (seconds, return code, output tail). Its whole output
    goes to RAW's folder as ``pytest.log``."""
    env = {
        **env,
        "DARLING_SUITE_CLOCK": str(raw),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")])),
        "DARLING_REQUIRE_VLLM": "1",  # as CI runs it: a missing vLLM fails, it does not skip
    }
    clock = MachineClock(raw.parent / "machine.jsonl")
    clock.start()
    start = time.monotonic()
    proc = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), "-m", "pytest", "-p", "suite_clock", *pytest_args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    clock.done.set()
    clock.join()
    (raw.parent / "pytest.log").write_text(proc.stdout + proc.stderr)
    return time.monotonic() - start, proc.returncode, (proc.stdout + proc.stderr)[-6000:]


def cpu_seconds(raw: Path) -> dict[tuple[str, str], float]:
    """CPU seconds per (test, phase) from every process's CPU file beside ``raw`` (none from an older clock)."""
    cpu: dict[tuple[str, str], float] = defaultdict(float)
    for path in raw.parent.glob(f"{raw.name}.cpu.*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            cpu[entry["nodeid"], entry["when"]] += entry["cpu"]
    return cpu


def summarise(raw: Path) -> dict[str, Any]:
    """Per module and per worker, from the clock's phase lines."""
    lines = [json.loads(line) for line in raw.read_text().splitlines() if line.strip()]
    session = lines[0]["session"]
    phases = lines[1:]
    cpu = cpu_seconds(raw)
    modules: dict[str, dict[str, Any]] = {}
    workers: dict[str, float] = defaultdict(float)
    outcomes: dict[str, int] = defaultdict(int)
    for p in phases:
        m = modules.setdefault(
            p["module"],
            {"worker_s": 0.0, "cpu_s": 0.0, "start": p["start"], "stop": p["stop"], "workers": set(), "tests": set()},
        )
        m["worker_s"] += p["duration"]
        m["cpu_s"] += cpu.get((p["nodeid"], p["when"]), 0.0)
        m["start"], m["stop"] = min(m["start"], p["start"]), max(m["stop"], p["stop"])
        m["workers"].add(p["worker"])
        m["tests"].add(p["nodeid"])
        workers[p["worker"]] += p["duration"]
        if p["when"] == "call" or p["outcome"] != "passed":  # a setup error or skip is the test's outcome
            outcomes[p["outcome"]] += 1
    table = {
        name: {
            "worker_s": round(m["worker_s"], 1),
            "cpu_s": round(m["cpu_s"], 1),
            "wall_s": round(m["stop"] - m["start"], 1),
            "worker": ",".join(sorted(m["workers"])),
            "tests": len(m["tests"]),
            "starts_at_s": round(m["start"] - session["start"], 1),
        }
        for name, m in sorted(modules.items(), key=lambda kv: -kv[1]["worker_s"])
    }
    machine_file = raw.parent / "machine.jsonl"
    samples = [json.loads(x) for x in machine_file.read_text().splitlines()] if machine_file.exists() else []
    machine = {}
    if samples:
        machine = {"machine_cpu_s": machine_between(samples, session["start"], session["stop"])}
        for name, m in modules.items():  # the machine while the module ran (the other worker's tests beside it)
            table[name]["machine_idle_s"] = machine_between(samples, m["start"], m["stop"])["idle"]
    return {
        "pytest_wall_s": round(session["stop"] - session["start"], 1),
        "exitstatus": session["exitstatus"],
        "outcomes": dict(outcomes),
        "workers_busy_s": {w: round(s, 1) for w, s in sorted(workers.items())},
        "cpu_s": round(sum(cpu.values()), 1),  # the test processes' and their waited-for children's
        **machine,
        "modules": table,
    }


def markdown(result: dict[str, Any], top: int = 40) -> str:
    cpu_total = f"; CPU {result['cpu_s']:,.0f} s" if result.get("cpu_s") else ""
    if result.get("machine_cpu_s"):
        machine = result["machine_cpu_s"]
        cpu_total += f"; the machine busy {machine['busy']:,.0f} s, idle {machine['idle']:,.0f} s (all cores)"
    rows = [
        f"Suite at {result.get('commit', '?')}: pytest {result['pytest_wall_s']:,.0f} s wall"
        + (f", set-up {result['setup_s']:,.0f} s" if result.get("setup_s") is not None else "")
        + f"; workers busy {', '.join(f'{w} {s:,.0f} s' for w, s in result['workers_busy_s'].items())}{cpu_total}; "
        + ", ".join(f"{n} {k}" for k, n in sorted(result["outcomes"].items())),
        "",
        "| module | tests | worker s | CPU s | wall s | worker | starts at s | machine idle s |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for name, m in list(result["modules"].items())[:top]:
        cpu = f"{m['cpu_s']:,.1f}" if m.get("cpu_s") else "–"
        rows.append(
            f"| {name} | {m['tests']} | {m['worker_s']:,.1f} | {cpu} | {m['wall_s']:,.1f} | {m['worker']} | "
            f"{m['starts_at_s']:,.0f} | {m.get('machine_idle_s', '–')} |"
        )
    rest = list(result["modules"].values())[top:]
    if rest:
        rows.append(
            f"| {len(rest)} other modules | {sum(m['tests'] for m in rest)} | {sum(m['worker_s'] for m in rest):,.1f} "
            f"| {sum(m.get('cpu_s', 0) for m in rest):,.1f} | | | | |"
        )
    return "\n".join(rows) + "\n"


def clone(rev: str, where: Path) -> Path:
    tree = where / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(tree)], check=True)
    subprocess.run(["git", "checkout", "-q", "--detach", rev], cwd=tree, check=True)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clone", metavar="REV", help="Run from a fresh clone of REV (deleted afterwards).")
    parser.add_argument("--empty-home", action="store_true", help="An empty HOME (set-up installs everything).")
    parser.add_argument("--no-setup", action="store_true", help="Skip `bash .ci/setup.sh` (this tree is set up).")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON written here, the table beside it (.md).")
    parser.add_argument("--report-only", type=Path, metavar="RAW", help="Recompute from a recorded phase file.")
    parser.add_argument("pytest_args", nargs="*", help="After --: arguments added to the README's command.")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="suite-times-"))
    try:
        if args.report_only:
            result: dict[str, Any] = {"commit": None, "setup_s": None, **summarise(args.report_only)}
        else:
            tree = clone(args.clone, scratch) if args.clone else ROOT
            env = dict(os.environ)
            if args.empty_home:
                (scratch / "home").mkdir()
                env["HOME"] = str(scratch / "home")
            setup_s = None
            if not args.no_setup:
                start = time.monotonic()
                subprocess.run(["bash", ".ci/setup.sh"], cwd=tree, env=env, check=True, capture_output=True)
                setup_s = round(time.monotonic() - start, 1)
            raw = args.out.with_suffix(".phases.jsonl")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            seconds, rc, tail = run_suite(tree, env, raw, args.pytest_args)
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
            result = {
                "commit": commit.stdout.strip(),
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "cores": os.cpu_count(),
                "clean_clone": bool(args.clone),
                "empty_home": args.empty_home,
                "setup_s": setup_s,
                "pytest_process_s": round(seconds, 1),
                "returncode": rc,
                **summarise(raw),
            }
            print(tail[-3000:])
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        table = markdown(result)
        args.out.with_suffix(".md").write_text(table)
        print(table)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
