"""``darling eval study``: one comparison run with several seeds, pooled. Each seed's ``eval compare`` folder holds
its paired per-prompt differences (``compare.json``); the study reports each seed's mean difference with its own
interval (prompts resampled) and one pooled mean with a hierarchical bootstrap interval: seeds resampled, then
prompts within each drawn seed, each seed weighing the same. The pooled interval carries the run-to-run variation a
single seed hides (at 16 RL steps the sign of DARLING minus GRPO changed from one run to the next).
Writes ``OUTPUT/study.json`` and ``OUTPUT/study.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from darling.core.errors import UserInputError
from darling.core.numbers import percentile_interval
from darling.core.shards import atomic_write_bytes
from darling.evals.compare import N_BOOT
from darling.evals.compare_report import ACTED_BELOW
from darling.evals.config import StudyConfig, named


def hierarchical_bootstrap(groups: list[np.ndarray], seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Mean over seeds of each seed's mean, and a percentile interval from resampling seeds, then prompts within
    each drawn seed (``N_BOOT`` times)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(groups) < 2:
        raise UserInputError("a pooled interval needs per-prompt differences from at least two seeds")
    rng = np.random.default_rng(seed)
    means = np.empty(N_BOOT)
    for b in range(N_BOOT):
        drawn = rng.integers(0, len(groups), len(groups))
        means[b] = np.mean([groups[i][rng.integers(0, groups[i].size, groups[i].size)].mean() for i in drawn])
    interval = percentile_interval(means, level)
    return {"mean": float(np.mean([g.mean() for g in groups])), "interval": interval, "seeds": len(groups)}


def seed_differences(compare_json: Path, pair: str) -> dict[str, dict[str, Any]]:
    """``{"novelty/distinct": difference, "math/pass@1": difference, ...}`` of ``pair`` in one compare.json."""
    if not compare_json.exists():
        raise UserInputError(f"{compare_json}: no comparison (run `darling eval compare` into that folder)")
    result = json.loads(compare_json.read_text())
    out = {}
    for section in ("novelty", "math"):
        differences = result.get(section, {}).get("differences", {})
        if section in result and pair not in differences:
            raise UserInputError(f"{compare_json}: no difference {pair!r} (it has {', '.join(differences)})")
        for metric, difference in differences.get(pair, {}).items():
            if "values" not in difference:
                raise UserInputError(f"{compare_json}: no per-prompt values (made by an older darling: run it again)")
            if difference["n"]:  # a metric that applies to none of these prompts (distinct_items) has no row
                out[f"{section}/{metric}"] = difference
    return out


def seed_term(compare_json: Path, pair: str) -> dict[str, Any] | None:
    """What the first policy of ``pair``'s diversity term did in that seed's run (``eval compare``'s ``term``), if
    its training log was compared."""
    first = pair.split(" - ")[0]
    term = json.loads(compare_json.read_text()).get("term", {}).get(first)
    return term if term and term.get("applied") else None


def study(config: StudyConfig) -> dict[str, Any]:
    """Each seed's difference and the pooled one, per metric: writes study.json and study.md; returns study.json."""
    folders = named(config.compare, "--compare")
    per_seed = {name: seed_differences(folder / "compare.json", config.pair) for name, folder in folders.items()}
    metrics = sorted(set.intersection(*(set(d) for d in per_seed.values())))
    result: dict[str, Any] = {"pair": config.pair, "seeds": list(per_seed), "bootstrap": N_BOOT, "metrics": {}}
    result["term"] = {name: seed_term(folder / "compare.json", config.pair) for name, folder in folders.items()}
    for metric in metrics:
        seeds = {name: d[metric] for name, d in per_seed.items()}
        pooled = hierarchical_bootstrap([s["values"] for s in seeds.values()], config.seed)
        result["metrics"][metric] = {
            "per_seed": {name: {k: s[k] for k in ("mean", "interval", "n")} for name, s in seeds.items()},
            "pooled": pooled,
        }
    output = Path(config.output)
    atomic_write_bytes(output / "study.json", (json.dumps(result, indent=2) + "\n").encode())
    atomic_write_bytes(output / "study.md", render_study(result).encode())
    return result


def _cell(d: dict[str, Any]) -> str:
    lo, hi = d["interval"]
    return f"{d['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def render_study(result: dict[str, Any]) -> str:
    seeds = result["seeds"]
    lines = [
        f"# {result['pair']} over {len(seeds)} seeds",
        "",
        "Each seed: the mean paired difference over prompts (problems for pass@k) with its bootstrap 95% interval. "
        f"Pooled: the mean of the seeds' means, 95% interval from a hierarchical bootstrap ({result['bootstrap']} "
        "draws: seeds resampled, then prompts within each drawn seed).",
        "",
        "| metric | " + " | ".join(f"seed {s}" for s in seeds) + " | pooled |",
        "|---|" + "---|" * (len(seeds) + 1),
    ]
    for metric, figures in result["metrics"].items():
        cells = [_cell(figures["per_seed"][s]) for s in seeds]
        lines.append(f"| {metric} | " + " | ".join(cells) + f" | **{_cell(figures['pooled'])}** |")
    return "\n".join([*lines, "", *term_lines(result)])


def term_lines(result: dict[str, Any]) -> list[str]:
    """Per seed, the share of groups the first policy's diversity term changed; a seed below ``ACTED_BELOW`` is named:
    its difference cannot show that term's effect."""
    terms = result.get("term") or {}
    known = {seed: t for seed, t in terms.items() if t}
    if not known:
        return []
    first = result["pair"].split(" - ")[0]
    shares = ", ".join(f"seed {seed}: {t['share']:.0%}" for seed, t in known.items())
    lines = [f"Groups whose advantages `{first}`'s diversity term changed in training: {shares}."]
    idle = [seed for seed, t in known.items() if t["share"] < ACTED_BELOW]
    if idle:
        lines.append(
            f"In seed {', '.join(idle)} the term changed fewer than {ACTED_BELOW:.0%} of the groups: "
            "that seed's difference cannot show its effect."
        )
    return [*lines, ""]


def render_pooled(studies: dict[str, dict[str, Any]], metrics: tuple[str, ...]) -> str:
    """Several studies' pooled differences in one table (``pipeline --seeds`` with other arms: ``RUN/arms.md``): a
    row per study (its folder and pair), a column per metric that any of them has."""
    metrics = tuple(m for m in metrics if any(m in result["metrics"] for result in studies.values()))
    lines = [
        "# Every pair pooled over seeds",
        "",
        "Each cell: the mean of the seeds' mean paired differences, with its hierarchical bootstrap 95% interval "
        "(seeds, then prompts); each study's own table is its folder's study.md.",
        "",
        "| study | pair | " + " | ".join(metrics) + " |",
        "|---|---|" + "---|" * len(metrics),
    ]
    for folder, result in studies.items():
        cells = [_cell(result["metrics"][m]["pooled"]) if m in result["metrics"] else "–" for m in metrics]
        lines.append(f"| [{folder}]({folder}/study.md) | {result['pair']} | " + " | ".join(cells) + " |")
    return "\n".join([*lines, ""])
