"""Issue 82: the world chain's levers side by side, from `darling pipeline --preset cpu-world` runs made with one
setting changed each (bench/studies/world_levers.sh). Reads each run's study folders (pooled over its seeds) and
stages.json files; writes the lever table and the per-seed table as markdown, and every figure as JSON.

    python bench/studies/world_levers.py plain=runs/m-plain long=runs/m-long ... --output results/world_levers

Frozen with its results (bench/studies/README.md): run at the commit named in docs/measurements.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

METRIC = "novelty/distinct_items"
PAIRS = {
    "D-G": ("study", "darling-rl - grpo-rl"),
    "C-G": ("study-checker-ceiling-vs-grpo", "checker-ceiling-rl - grpo-rl"),
    "N-G": ("study-darling-ngram-vs-grpo", "darling-ngram-rl - grpo-rl"),
    "D-N": ("study-darling-vs-darling-ngram", "darling-rl - darling-ngram-rl"),
}


def pooled(run: Path, folder: str, metric: str = METRIC) -> dict | None:
    path = run / folder / "study.json"
    if not path.exists():
        return None
    figures = json.loads(path.read_text())["metrics"].get(metric)
    return figures


def cell(figures: dict | None) -> str:
    if not figures:
        return "–"
    p = figures["pooled"]
    return f"{p['mean']:+.2f} [{p['interval'][0]:+.2f}, {p['interval'][1]:+.2f}]"


def seconds(run: Path) -> float:
    total = 0.0
    for stages in run.glob("*/stages.json"):
        for record in json.loads(stages.read_text())["stages"].values():
            total += record.get("seconds") or 0
    return total


def lever_row(name: str, run: Path) -> dict:
    row: dict = {"lever": name, "seconds": seconds(run)}
    for part, prefix in (("held_out", "study"), ("train", "study-train")):
        for key, (folder, _) in PAIRS.items():
            row[f"{part}/{key}"] = pooled(run, folder.replace("study", prefix, 1))
        row[f"{part}/quality D-G"] = pooled(run, prefix, "novelty/quality")
    held, ceiling = row["held_out/D-G"], row["held_out/C-G"]
    row["share_of_ceiling"] = (
        held["pooled"]["mean"] / ceiling["pooled"]["mean"] if held and ceiling and ceiling["pooled"]["mean"] else None
    )
    return row


def table(rows: list[dict]) -> list[str]:
    head = "| lever | held out: D−G | C−G | N−G | D−N | quality D−G | training: D−G | C−G | N−G | D−N | s of stages |"
    lines = [head, "|---|" + "---:|" * 10]
    for r in rows:
        cells = [cell(r[f"held_out/{k}"]) for k in PAIRS] + [cell(r["held_out/quality D-G"])]
        cells += [cell(r[f"train/{k}"]) for k in PAIRS] + [f"{r['seconds']:.0f}"]
        lines.append(f"| {r['lever']} | " + " | ".join(cells) + " |")
    return lines


def per_seed(run: Path) -> list[str]:
    lines = ["| pair | prompts | " + " | ".join(f"seed {s}" for s in ("1", "2", "3")) + " | pooled |", "|---|---|" + "---:|" * 4]
    for key, (folder, pair) in PAIRS.items():
        for part, prefix in (("held out", "study"), ("training", "study-train")):
            figures = pooled(run, folder.replace("study", prefix, 1))
            if not figures:
                continue
            seeds = [figures["per_seed"][s] for s in sorted(figures["per_seed"])]
            shown = [f"{s['mean']:+.2f} [{s['interval'][0]:+.2f}, {s['interval'][1]:+.2f}]" for s in seeds]
            lines.append(f"| {pair} | {part} | " + " | ".join(shown) + f" | {cell(figures)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="NAME=RUN folder of a cpu-world run, the first the base")
    parser.add_argument("--output", type=Path, required=True, help="Writes OUTPUT.md and OUTPUT.json")
    args = parser.parse_args()
    runs = {name: Path(path) for name, _, path in (r.partition("=") for r in args.runs)}
    rows = [lever_row(name, run) for name, run in runs.items()]
    base = next(iter(runs.values()))
    text = ["## Levers", "", *table(rows), "", "## Per seed (the base run)", "", *per_seed(base), ""]
    args.output.with_suffix(".md").write_text("\n".join(text))
    args.output.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
