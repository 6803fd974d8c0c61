"""Several seeds' RL runs as curves, each arm's mean over seeds and every seed beside it: the figure a ``--seeds``
study leads its report with. Per arm and seed, from its ``log_history.json``:

- **training prompts**: each optimiser step's distinct keys per group (the run's checker; the classifier's classes
  where no checker reads the prompts) and quality, on the groups the step trained on, as a running mean;
- **held-out prompts**: the same figures from TRL's evaluation (``rl-train --eval-problems``: before the first step
  and every ``eval_steps``), on prompts the run never trains on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from darling.core.shards import atomic_write_bytes
from darling.core.training_log import DISTINCT, DISTINCT_KEYS, QUALITY

EVAL_PREFIX = "eval_"  # TRL's prefix of its evaluation's figures
PARTS = ("train", "held_out")
PART_TITLES = {"train": "training prompts (each step's groups)", "held_out": "held-out prompts (TRL's evaluation)"}
WINDOW = 20  # steps in the training curves' running mean (a step trains on a few groups)


def run_curves(log: Path) -> dict[str, dict[str, list[float]]]:
    """One run's curves: per part, ``step``, ``distinct`` and ``quality`` (empty lists where it logged none)."""
    history = json.loads(Path(log).read_text())
    key = DISTINCT_KEYS.key if any(DISTINCT_KEYS.key in h for h in history) else DISTINCT.key
    curves: dict[str, dict[str, list[float]]] = {}
    for part, prefix in (("train", ""), ("held_out", EVAL_PREFIX)):
        rows = [h for h in history if prefix + key in h and prefix + QUALITY.key in h]
        curves[part] = {
            "step": [float(h["step"]) for h in rows],
            "distinct": [float(h[prefix + key]) for h in rows],
            "quality": [float(h[prefix + QUALITY.key]) for h in rows],
        }
    curves["measure"] = {"checker": [1.0 if key == DISTINCT_KEYS.key else 0.0]}
    return curves


def study_curves(logs: Mapping[str, Mapping[str, Path]]) -> dict[str, dict[str, Any]]:
    """``{arm: {seed: run_curves}}`` from ``{arm: {seed: its log_history.json}}``."""
    return {arm: {seed: run_curves(path) for seed, path in seeds.items()} for arm, seeds in logs.items()}


def smoothed(values: list[float], window: int) -> list[float]:
    from darling.evals.compare import running_mean  # loads numpy

    return running_mean(values, window) if values else []


def mean_curve(runs: list[dict[str, list[float]]], metric: str, window: int) -> tuple[list[float], list[float]]:
    """The seeds' (smoothed) curves averaged step by step, over the steps every seed logged."""
    steps = sorted(set.intersection(*(set(r["step"]) for r in runs))) if runs else []
    curves = [dict(zip(r["step"], smoothed(r[metric], window), strict=True)) for r in runs]
    return steps, [sum(c[s] for c in curves) / len(curves) for s in steps]


def final_means(curves: dict[str, dict[str, Any]], part: str, metric: str, window: int = WINDOW) -> dict[str, float]:
    """Each arm's last point of its mean curve (the training part smoothed over ``window`` steps)."""
    out = {}
    for arm, seeds in curves.items():
        steps, values = mean_curve([c[part] for c in seeds.values()], metric, window if part == "train" else 1)
        if values:
            out[arm] = values[-1]
    return out


def plot_study_curves(
    curves: dict[str, dict[str, Any]],
    path: Path,
    window: int = WINDOW,
    labels: Mapping[str, str] | None = None,
    title: str = "",
) -> Path:
    """Distinct (top) and quality (bottom) over optimiser steps, training prompts (left) and held-out prompts
    (right): each arm's mean over seeds as a line, each seed as a faint line of the same colour; ``labels``: each
    arm's name in the legend (default its own)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    checker = all(c["measure"]["checker"][0] for seeds in curves.values() for c in seeds.values())
    measure = "distinct keys per 8 answers (checker)" if checker else "distinct classes per group (classifier)"
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for col, part in enumerate(PARTS):
        smooth = window if part == "train" else 1
        for row, metric in enumerate(("distinct", "quality")):
            ax = axes[row][col]
            for arm, seeds in curves.items():
                runs = [c[part] for c in seeds.values() if c[part]["step"]]
                if not runs:
                    continue
                steps, mean = mean_curve(runs, metric, smooth)
                name = (labels or {}).get(arm, arm)
                (line,) = ax.plot(steps, mean, linewidth=2.2, label=f"{name}, mean of {len(runs)} seeds")
                for run in runs:
                    ax.plot(run["step"], smoothed(run[metric], smooth), color=line.get_color(), alpha=0.25, lw=0.9)
            ax.set_title(f"{measure if metric == 'distinct' else 'quality'}: {PART_TITLES[part]}", fontsize=9)
            if row == 1:
                ax.set_xlabel("optimiser step" + (f" (running mean of {window})" if part == "train" else ""))
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)
    return path


def write_study_curves(
    curves: dict[str, dict[str, Any]], output: Path, labels: Mapping[str, str] | None = None, title: str = ""
) -> Path:
    """``curves.json`` (every seed's points) beside ``curves.png``."""
    atomic_write_bytes(output / "curves.json", (json.dumps(curves) + "\n").encode())
    return plot_study_curves(curves, output / "curves.png", labels=labels, title=title)
