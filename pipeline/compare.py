"""DARLING against its GRPO baseline, from what the runs saved: the held-out evaluation (``eval novelty``'s
``scores.parquet`` of each policy) and the training logs (``log_history.json`` of each RL run).

Every figure is recomputed here from the stored generations: ``distinct`` per prompt from the partition's
class ids (eval novelty's partition), ``distinct_answers`` from the response texts alone (normalised exact
match: no classifier), ``quality`` per response with the training quality (``darling.rl.quality``) and
``short`` the share of answers within ``max_words`` words. Differences between two policies are paired over
prompts (the same prompts, the same sampling seeds) with a percentile bootstrap over prompts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from darling.rl.quality import distinct_answers, open_ended_quality

N_BOOT = 2000
METRICS = ("distinct", "distinct_answers", "quality", "short")
CURVE_KEYS = {
    "darling/reward": "reward",
    "darling/quality": "quality",
    "darling/distinct_per_group": "distinct (classifier)",
    "darling/distinct_answers": "distinct answers",
}


def per_prompt_figures(scores_file: Path, quality_fn, max_words: int) -> dict[str, dict[str, float]]:
    """``{prompt_id: {metric: value}}`` (METRICS) from one policy's ``scores.parquet``."""
    import polars as pl

    frame = pl.read_parquet(scores_file).sort("prompt_id", "sample_index")
    answers = [text.strip() for text in frame["response"].to_list()]
    quality = quality_fn(frame["prompt"].to_list(), answers)
    frame = frame.with_columns(pl.Series("answer", answers), pl.Series("quality_score", quality, dtype=pl.Float64))
    out = {}
    for (prompt_id,), group in frame.group_by("prompt_id", maintain_order=True):
        texts = group["answer"].to_list()
        out[str(prompt_id)] = {
            "distinct": float(group["class_id"].n_unique()),
            "distinct_answers": float(distinct_answers(texts)),
            "quality": float(np.mean(group["quality_score"].to_list())),
            "short": float(np.mean([0 < len(t.split()) <= max_words for t in texts])),
        }
    return out


def paired_difference(a: list[float], b: list[float], seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Mean of ``a - b`` over prompts with a percentile bootstrap interval (prompts resampled together)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diff.size == 0:
        return {"mean": None, "interval": None, "n": 0}
    idx = np.random.default_rng(seed).integers(0, diff.size, (N_BOOT, diff.size))
    means = diff[idx].mean(axis=1)
    tail = (1 - level) / 2 * 100
    interval = [float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))]
    return {"mean": float(diff.mean()), "interval": interval, "n": int(diff.size)}


def compare_policies(
    scores: dict[str, Path], quality: str, max_words: int, pairs: list[tuple[str, str]], seed: int = 0
) -> dict[str, Any]:
    """Mean METRICS per policy over the prompts every policy completed, and the paired differences named in
    ``pairs`` (``(a, b)`` -> a minus b); ``quality`` names the open-ended quality (``darling.rl.quality``)."""
    quality_fn = open_ended_quality(quality, max_words)
    figures = {name: per_prompt_figures(path, quality_fn, max_words) for name, path in scores.items()}
    prompts = sorted(set.intersection(*(set(f) for f in figures.values()))) if figures else []
    policies = {
        name: {metric: float(np.mean([f[p][metric] for p in prompts])) if prompts else None for metric in METRICS}
        for name, f in figures.items()
    }
    differences = {
        f"{a} - {b}": {
            metric: paired_difference(
                [figures[a][p][metric] for p in prompts], [figures[b][p][metric] for p in prompts], seed
            )
            for metric in METRICS
        }
        for a, b in pairs
    }
    return {"prompts": len(prompts), "policies": policies, "differences": differences, "bootstrap": N_BOOT}


def training_curves(log_files: dict[str, Path]) -> dict[str, dict[str, list[float]]]:
    """Per run, per metric (CURVE_KEYS): the value at each logged optimiser step (TRL's ``log_history``)."""
    curves: dict[str, dict[str, list[float]]] = {}
    for name, path in log_files.items():
        history = [h for h in json.loads(Path(path).read_text()) if "darling/reward" in h]
        curves[name] = {"step": [float(h["step"]) for h in history]}
        for key, label in CURVE_KEYS.items():
            curves[name][label] = [float(h[key]) for h in history if key in h]
    return curves


def plot_curves(curves: dict[str, dict[str, list[float]]], path: Path) -> None:
    """One figure, one panel per metric, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(CURVE_KEYS.values())
    fig, axes = plt.subplots(1, len(labels), figsize=(4 * len(labels), 3.2))
    for ax, label in zip(axes, labels, strict=True):
        for name, curve in curves.items():
            if curve.get(label):
                ax.plot(curve["step"][: len(curve[label])], curve[label], marker="o", label=name)
        ax.set_title(label)
        ax.set_xlabel("optimiser step")
    axes[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)
