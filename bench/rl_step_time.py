"""Seconds per RL step of ``rl-train`` under sets of settings, side by side in one run (one core each).

The main job's RL is most of its time (SmolLM2-135M's forward and backward on the CPU). A cheaper step would let it
afford more prompts per step, the budget at which one seed shows DARLING's effect on the prompts it trained on. Each
lever's ``rl-train`` (the ``naming`` preset, DARLING with the given classifier, the same seed) runs at the same time
as the others, each on one thread, for ``--steps`` steps; TRL's ``step_time`` per step is read from its log, the
first step left out (it loads and warms up). Prints the median seconds per step of each lever and its ratio to the
first lever's.

    .venv/bin/python bench/rl_step_time.py --classifier runs/pipeline/classifier --out runs/step-time \\
        --lever p2=per_device_train_batch_size=16 \\
        --lever p4-top10=per_device_train_batch_size=32,trainable_layers=10
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

DARLING = str(Path(sys.executable).parent / "darling")


def lever(text: str) -> tuple[str, dict[str, str]]:
    name, _, settings = text.partition("=")
    pairs = [item.partition("=") for item in settings.split(",") if item]
    if not name or any(not key or not sep for key, sep, _ in pairs):
        raise argparse.ArgumentTypeError(f"--lever {text!r}: NAME=KEY=VALUE,KEY=VALUE")
    return name, {key: value for key, _, value in pairs}


def argv(args, name: str, settings: dict[str, str]) -> list[str]:
    out = args.out / name
    sets = {"save_steps": str(args.steps), "save_total_limit": "1", "prune_checkpoints": "true", "threads": "1"}
    sets.update(settings)
    line = ["rl-train", "--preset", "naming", "--output", str(out), "--classifier", str(args.classifier)]
    line += ["--max-steps", str(args.steps), "--seed", str(args.seed), "--policy", args.policy]
    return line + [w for key, value in sets.items() for w in ("--set", f"{key}={value}")]


def step_times(out: Path) -> list[float]:
    history = json.loads((out / "log_history.json").read_text())
    return [float(h["step_time"]) for h in history if "step_time" in h]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", type=Path, required=True, help="A darling classifier export.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lever", type=lever, action="append", required=True, help="NAME=KEY=VALUE,KEY=VALUE")
    parser.add_argument("--steps", type=int, default=5, help="Steps per lever (the first is left out).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", default="smollm2", help="The start policy (e.g. a warm-up's final/).")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    procs = []
    for name, settings in args.lever:  # all at once: side by side, one core each
        if not (args.out / name / "log_history.json").exists():  # a rerun times only what did not finish
            log = (args.out / f"{name}.log").open("ab")
            procs.append((name, subprocess.Popen([DARLING, *argv(args, name, settings)], stdout=log, stderr=log)))
    for name, proc in procs:
        if proc.wait():
            sys.exit(f"{name}: rl-train failed ({proc.returncode}); see {args.out / f'{name}.log'}")
    first = None
    print("| lever | steps timed | median s/step | ratio to the first |\n| --- | ---: | ---: | ---: |")
    for name, _ in args.lever:
        times = step_times(args.out / name)[1:]
        median = statistics.median(times)
        first = first or median
        print(f"| {name} | {len(times)} | {median:.1f} | {median / first:.2f} |")


if __name__ == "__main__":
    main()
