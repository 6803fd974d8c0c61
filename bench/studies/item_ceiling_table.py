"""The lever table of issue 68 from ``item_ceiling_levers.sh``'s folders: per lever and seed, checker-ceiling minus
GRPO on the 30 held-out categories (distinct items by the checker, quality; each seed's interval covers prompts, not
runs), each policy's own distinct items, the ceiling's acted share, and the RL and eval seconds; a lever with two
seeds or more also pooled by ``darling eval study`` (hierarchical bootstrap: seeds, then prompts).

    .venv/bin/python bench/studies/item_ceiling_table.py /work/runs/levers68 > table.md   # + OUT/levers.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

PAIR = "checker-ceiling - grpo"
DARLING = str(Path(sys.executable).parent / "darling")


def interval(figure: dict) -> str:
    lo, hi = figure["interval"]
    return f"{figure['mean']:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def seed_row(folder: Path) -> dict:
    compare = json.loads((folder / "compare" / "compare.json").read_text())
    difference = compare["novelty"]["differences"][PAIR]
    policies = compare["novelty"]["policies"]
    term = compare["term"]["checker-ceiling"]
    return {
        "distinct_items": difference["distinct_items"],
        "quality": difference["quality"],
        "ceiling_items": policies["checker-ceiling"]["distinct_items"],
        "grpo_items": policies["grpo"]["distinct_items"],
        "grpo_quality": policies["grpo"]["quality"],
        "acted": term["share"],
    }


def seconds(out: Path) -> dict[tuple[str, str, str], int]:
    found = {}
    for line in (out / "times.log").read_text().splitlines():
        match = re.match(r"(\S+) seed (\d+): (RL|eval) (\d+) s", line)
        if match:
            found[match.group(1), match.group(2), match.group(3)] = int(match.group(4))
    return found


def pooled(out: Path, lever: str, seeds: list[str]) -> dict | None:
    if len(seeds) < 2:
        return None
    compares = [arg for s in seeds for arg in ("--compare", f"{s}={out / lever / f'seed-{s}' / 'compare'}")]
    study = out / lever / "study"
    subprocess.run([DARLING, "eval", "study", *compares, "--pair", PAIR, "-o", study], check=True, capture_output=True)
    metrics = json.loads((study / "study.json").read_text())["metrics"]
    return {name: metrics[key]["pooled"] for name, key in (("distinct_items", "novelty/distinct_items"),
                                                           ("quality", "novelty/quality")) if key in metrics}


def main(out: Path) -> None:
    times = seconds(out)
    table = {}
    for lever in sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("warmup")):
        seeds = sorted(p.name.split("-")[1] for p in (out / lever).glob("seed-*") if (p / "compare").exists())
        rows = {s: seed_row(out / lever / f"seed-{s}") for s in seeds}
        for s, row in rows.items():
            row["seconds"] = {k: times.get((lever, s, k)) for k in ("RL", "eval")}
        table[lever] = {"seeds": rows, "pooled": pooled(out, lever, seeds)}
    (out / "levers.json").write_text(json.dumps(table, indent=2) + "\n")
    print("| lever | seed | ceiling - GRPO, distinct items (held out) | quality | ceiling / GRPO items | GRPO quality "
          "| acted | RL s | eval s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for lever, entry in table.items():
        for s, r in entry["seeds"].items():
            print(f"| {lever} | {s} | {interval(r['distinct_items'])} | {interval(r['quality'])} | "
                  f"{r['ceiling_items']:.2f} / {r['grpo_items']:.2f} | {r['grpo_quality']:.2f} | {r['acted']:.0%} | "
                  f"{r['seconds']['RL']} | {r['seconds']['eval']} |")
        if entry["pooled"]:
            p = entry["pooled"]
            print(f"| {lever} | pooled | {interval(p['distinct_items'])} | {interval(p['quality'])} | | | | | |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
