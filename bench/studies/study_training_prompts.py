"""A ``darling pipeline --seeds`` study measured again on the prompts the RL runs trained on.

The pipeline evaluates its policies on held-out prompts (``naming-heldout``): whether DARLING's effect carries to
prompts neither run saw. What the reward itself targets is diversity on the training prompts, so this script takes
each seed's three policies of a finished study (the start policy ``rl-warmup/final``, or the base policy when the
chain had no warm-up; DARLING ``rl/final``; GRPO ``rl-grpo/final``) and, with the commands a user runs, evaluates
them on ``naming-train`` (``eval novelty``, the seed's own classifier, the same sampling as the pipeline's eval
stage), compares them paired over prompts (``eval compare``, with the runs' training logs) and pools the seeds
(``eval study``, hierarchical bootstrap). Every command resumes; a rerun skips what is done.

    .venv/bin/python bench/studies/study_training_prompts.py --run runs/study

Writes ``RUN/train-prompts/seed-S/{eval-novelty/NAME, compare}`` and ``RUN/train-prompts/study`` and prints the
pooled DARLING minus GRPO figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from darling.evals.prompt_metrics import has_every_metric

DARLING = str(Path(sys.executable).parent / "darling")


def run(argv: list[str], log: Path) -> None:
    """One darling command, its output to ``log``; a failure stops the script (a rerun resumes)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        if subprocess.call([DARLING, *argv], stdout=sink, stderr=subprocess.STDOUT):
            sys.exit(f"failed: darling {' '.join(argv)}; see {log}")


def side_by_side(commands: list[tuple[list[str], Path]]) -> None:
    """The commands two at a time (one core each)."""
    for k in range(0, len(commands), 2):
        procs = []
        for argv, log in commands[k : k + 2]:
            log.parent.mkdir(parents=True, exist_ok=True)
            procs.append((subprocess.Popen([DARLING, *argv], stdout=log.open("ab"), stderr=subprocess.STDOUT), log))
        for proc, log in procs:
            if proc.wait():
                sys.exit(f"failed ({proc.returncode}); see {log}")


def policies(seed_run: Path) -> dict[str, str]:
    warm = seed_run / "rl-warmup" / "final"
    return {
        "base": str(warm) if warm.exists() else "smollm2",
        "darling-rl": str(seed_run / "rl" / "final"),
        "grpo-rl": str(seed_run / "rl-grpo" / "final"),
    }


def one_seed(args, seed: int) -> Path:
    seed_run = args.run / f"seed-{seed}"
    out = args.run / "train-prompts" / f"seed-{seed}"
    models = policies(seed_run)
    evals = []
    for name, model in models.items():
        folder = out / "eval-novelty" / name
        if has_every_metric(folder):
            continue
        argv = ["eval", "novelty", "--output", str(folder), "--classifier", str(seed_run / "classifier")]
        argv += ["--prompts", args.prompts, "--limit", str(args.limit), "--model", model, "--k", str(args.k)]
        argv += ["--temperature", str(args.temperature), "--max-tokens", str(args.max_tokens), "--seed", str(seed)]
        argv += ["--engine", "hf", "--threads", "1"]
        evals.append((argv, folder.with_suffix(".log")))
    side_by_side(evals)
    compare = out / "compare"
    if not (compare / "compare.json").exists():
        argv = ["eval", "compare", "--output", str(compare), "--quality", args.quality, "--seed", str(seed)]
        argv += ["--strict-length"] if args.strict_length else []
        argv += [w for name in models for w in ("--novelty", f"{name}={out / 'eval-novelty' / name}")]
        argv += ["--training", f"darling-rl={seed_run / 'rl'}", "--training", f"grpo-rl={seed_run / 'rl-grpo'}"]
        argv += ["--pairs", "darling-rl:grpo-rl", "--pairs", "darling-rl:base", "--pairs", "grpo-rl:base"]
        run(argv, compare.with_suffix(".log"))
    return compare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="The output of `darling pipeline --seeds ...`.")
    parser.add_argument("--prompts", default="naming-train")
    parser.add_argument("--limit", type=int, default=48)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--quality", default="relevant-short-answer")
    parser.add_argument("--strict-length", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    seeds = sorted(int(p.name.split("-")[1]) for p in args.run.glob("seed-*") if (p / "rl-grpo" / "final").exists())
    if len(seeds) < 2:
        sys.exit(f"{args.run}: need at least two seed-S folders with finished RL runs, found {seeds}")
    compares = {seed: one_seed(args, seed) for seed in seeds}
    study = args.run / "train-prompts" / "study"
    argv = ["eval", "study", "--output", str(study), "--pair", "darling-rl - grpo-rl"]
    argv += [w for seed, folder in compares.items() for w in ("--compare", f"{seed}={folder}")]
    run(argv, study.with_suffix(".log"))
    metrics = json.loads((study / "study.json").read_text())["metrics"]
    for metric, figures in metrics.items():
        pooled = figures["pooled"]
        lo, hi = pooled["interval"]
        print(f"{metric}: darling-rl - grpo-rl = {pooled['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}] (seeds {seeds})")


if __name__ == "__main__":
    main()
