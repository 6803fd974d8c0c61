"""Which processes a test run starts and what they cost: runs the README's test command (or a part of it) with
``process_trace/`` on PYTHONPATH, then sums the CPU seconds of every process by its command (``darling rl-train``,
``darling eval novelty``, a vLLM server, ...), with how many ran and what each imported.

The suite is bound by its processes: a ``darling`` command imports torch, transformers and (train-classifier)
Lightning before any work, so at the chains' tiny sizes most of a command's CPU is its imports. This table says where
a cut would count.

    python tests/support/timing/process_costs.py --out /tmp/trace.jsonl                 # the whole suite, ~25-35 min
    python tests/support/timing/process_costs.py --out /tmp/t.jsonl -- tests/pipeline   # a part of it
    python tests/support/timing/process_costs.py --report-only /tmp/trace.jsonl          # the table again
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def command_of(argv: list[str]) -> str:
    """``darling eval novelty``, ``darling rl-train``, ``vllm api_server``, ``python -c``...: a process's kind."""
    if argv and argv[0] == "-m":
        argv = argv[1:]
    if not argv:
        return "python"
    program = Path(argv[0]).name
    if program in ("darling", "__main__.py"):
        words = [w for w in argv[1:3] if not w.startswith("-") and "/" not in w and ":" not in w]
        return " ".join(["darling", *words])
    if program == "api_server.py":
        return "vllm api_server"
    if program == "-c":  # pytest's xdist workers among them (execnet starts them so): the tests run in process
        return "python -c"
    return program


def table(trace: Path) -> list[str]:
    costs: dict[str, list[float]] = defaultdict(list)
    imported: dict[str, set[str]] = defaultdict(set)
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        kind = command_of(record["argv"])
        costs[kind].append(record["cpu"])
        imported[kind].update(record.get("imported", []))
    total = sum(sum(v) for v in costs.values())
    lines = [
        f"{sum(map(len, costs.values()))} processes, {total:,.1f} CPU-s recorded (killed ones write nothing)",
        "",
        "| command | processes | CPU s | share | median CPU s | imported |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind, seconds in sorted(costs.items(), key=lambda item: -sum(item[1])):
        share = sum(seconds) / total if total else 0.0
        lines.append(
            f"| {kind} | {len(seconds)} | {sum(seconds):,.1f} | {share:.0%} | {statistics.median(seconds):.1f} | "
            f"{', '.join(sorted(imported[kind])) or '-'} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="The trace (JSON lines) written here, the table beside it (.md).")
    parser.add_argument("--report-only", type=Path, help="Print the table of a recorded trace.")
    parser.add_argument("pytest_args", nargs="*", help="After --: arguments added to the README's command.")
    args = parser.parse_args()
    if args.report_only:
        print("\n".join(table(args.report_only)))
        return
    if args.out is None:
        parser.error("--out is required (or --report-only)")
    args.out.unlink(missing_ok=True)
    path = os.pathsep.join(filter(None, [str(HERE / "process_trace"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "DARLING_PROCESS_TRACE": str(args.out.resolve())}
    result = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "pytest", *args.pytest_args], cwd=ROOT, env=env)
    lines = table(args.out) if args.out.exists() else ["no process wrote a line"]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    sys.exit(result.returncode)


if __name__ == "__main__":
    main()
