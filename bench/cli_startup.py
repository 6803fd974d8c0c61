"""`darling --help` and refused inputs, this tree against another commit, side by side: the command line's start-up
cost (issue 22 asks that moving imports to the top does not slow them). The other commit is checked out into a
temporary git worktree and put first on PYTHONPATH (the repository root is the `darling` package), so both run in
the same environment; the runs alternate, and each case reports the median.

    python bench/cli_startup.py --before e391ecd --runs 20 --out bench/results/cli_startup.json
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

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "--help": ["--help"],
    "refused input (train-classifier)": ["train-classifier", "--data", "/nonexistent.jsonl", "--output", "/tmp/x"],
    "refused input (rl-train)": ["rl-train", "--classifier", "/nonexistent", "--output", "/tmp/x"],
}


def seconds(argv: list[str], pythonpath: str) -> float:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": pythonpath}
    subprocess.run([sys.executable, "-m", "darling", *argv], env=env, capture_output=True, cwd=tempfile.gettempdir())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="The commit to compare with (a git revision).")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tree, path = Path(scratch) / "tree", Path(scratch) / "path"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), args.before], cwd=ROOT, check=True)
        try:
            path.mkdir()
            (path / "darling").symlink_to(tree)
            trees = {"before": str(path), "after": ""}
            times: dict[str, dict[str, list[float]]] = {case: {t: [] for t in trees} for case in CASES}
            for _ in range(args.runs):
                for case, argv in CASES.items():
                    for name, pythonpath in trees.items():
                        times[case][name].append(seconds(argv, pythonpath))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    result = {
        "before": args.before,
        "runs": args.runs,
        "median_seconds": {case: {t: statistics.median(v) for t, v in by.items()} for case, by in times.items()},
    }
    for case, by in result["median_seconds"].items():
        print(f"{case:34s} before {by['before']:.2f} s  after {by['after']:.2f} s")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
