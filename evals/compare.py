"""``darling eval compare``: policies side by side (DARLING against its GRPO baseline and the base policy), from
what their runs saved: ``eval novelty``'s generations, ``eval math``'s graded samples and the RL training logs.

Per prompt, eval novelty's own metrics as its ``per_prompt.parquet`` holds them (``evals/prompt_metrics.py``:
``distinct`` from its partition, ``distinct_answers`` from the texts alone, ``utility``, ``quality``), with two
that depend on this comparison's settings, from the stored texts: ``short`` (the share of answers of at most
``max_words`` words) and, with ``--quality`` other than ``eval``, an open-ended ``quality`` of
``darling.core.quality``; per math problem, unbiased pass@k. A difference between two policies is paired (the same
prompts or problems, the same sampling seeds) with a percentile bootstrap over prompts or problems.
Writes ``OUTPUT/compare.json``, ``OUTPUT/report.md`` and (with training logs) ``OUTPUT/curves.png``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from darling.core.devices import resolve_device
from darling.core.errors import UserInputError
from darling.core.numbers import percentile_interval
from darling.core.quality import open_ended_quality
from darling.core.shards import atomic_write_bytes
from darling.core.training_log import (
    ADVANTAGE_CHANGE,
    ALL_DISTINCT,
    CURVES,
    GROUPS_CHANGED,
    QUALITY_ADVANTAGE,
    REWARD,
    TRL_ENTROPY,
    TRL_ENTROPY_COEF,
    WOULD_CHANGE,
)
from darling.evals.compare_report import render_comparison
from darling.evals.config import EVAL_QUALITY, CompareConfig, named
from darling.evals.math import pass_at_k, scored_problems
from darling.evals.prompt_metrics import COMPARE_COLUMNS, PROMPT_METRIC_NAMES, QualityScorer, compared_figures

N_BOOT = 2000
METRICS = tuple(COMPARE_COLUMNS)


# -- eval novelty: per prompt ------------------------------------------------------------------------------------


def quality_scorer(quality: str, max_words: int, strict: bool = False, device: str = "cpu") -> QualityScorer | None:
    """The open-ended quality ``quality`` names, loaded once on ``device`` (its encoder, for relevant-short-answer);
    ``None`` for eval novelty's own quality, which is read, not recomputed."""
    return None if quality == EVAL_QUALITY else open_ended_quality(quality, max_words, device, strict)


def per_prompt_figures(folder: Path, score: QualityScorer | None, max_words: int) -> dict[str, dict[str, float | None]]:
    """``{prompt_id: {metric: value}}`` of one policy's eval novelty folder: every metric eval novelty wrote to
    ``per_prompt.parquet``, and those that depend on this comparison's settings (``COMPARED_METRICS``), from the
    texts of ``scores.parquet``: ``short`` and, with a ``score`` (``quality_scorer``), ``quality``."""
    import polars as pl

    per_prompt_file, scores_file = folder / "per_prompt.parquet", folder / "scores.parquet"
    for path in (per_prompt_file, scores_file):
        if not path.exists():
            raise UserInputError(f"{path}: no eval novelty scores (run `darling eval novelty` into that folder)")
    per_prompt = pl.read_parquet(per_prompt_file)
    missing = [name for name in PROMPT_METRIC_NAMES if name not in per_prompt.columns]
    if missing:
        raise UserInputError(
            f"{per_prompt_file}: no column {missing[0]!r} (written by an older darling): rerun `darling eval "
            "novelty` into that folder (its generations are reused)"
        )
    out = {
        str(row["prompt_id"]): {m: None if row[m] is None else float(row[m]) for m in PROMPT_METRIC_NAMES}
        for row in per_prompt.to_dicts()
    }
    frame = pl.read_parquet(scores_file).sort("prompt_id", "sample_index")
    if score is not None:  # every answer scored in one call (the encoder's batches), then looked up per prompt
        score = scored_once(score, frame["prompt"].to_list(), [t.strip() for t in frame["response"].to_list()])
    for (prompt_id,), group in frame.group_by("prompt_id", maintain_order=True):
        if str(prompt_id) not in out:
            continue
        texts = [text.strip() for text in group["response"].to_list()]
        out[str(prompt_id)].update(compared_figures(group["prompt"].to_list(), texts, max_words, score))
    return out


def scored_once(score: QualityScorer, prompts: list[str], answers: list[str]) -> QualityScorer:
    """``score`` of these answers computed at once; the scorer returned looks them up."""
    known = dict(zip(zip(prompts, answers, strict=True), score(prompts, answers), strict=True))
    return lambda ps, ts: [known[(p, t)] for p, t in zip(ps, ts, strict=True)]


def paired_difference(a: list[float], b: list[float], seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Mean of ``a - b`` over prompts with a percentile bootstrap interval (prompts resampled together)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diff.size == 0:
        return {"mean": None, "interval": None, "n": 0, "values": []}  # a metric no prompt has (distinct_items)
    idx = np.random.default_rng(seed).integers(0, diff.size, (N_BOOT, diff.size))
    interval = percentile_interval(diff[idx].mean(axis=1), level)
    values = [round(float(v), 6) for v in diff]  # per prompt: what a study over seeds resamples (eval study)
    return {"mean": float(diff.mean()), "interval": interval, "n": int(diff.size), "values": values}


def compare_novelty(
    folders: dict[str, Path],
    quality: str,
    max_words: int,
    pairs: list[tuple[str, str]],
    seed: int = 0,
    strict: bool = False,
    device: str = "cpu",
) -> dict[str, Any]:
    """Mean METRICS per policy over the prompts every policy completed, and the paired differences of ``pairs``
    (``(a, b)``: a minus b) among the policies ``folders`` names; an open-ended ``quality`` is scored on ``device``."""
    score = quality_scorer(quality, max_words, strict, device)
    figures = {name: per_prompt_figures(f, score, max_words) for name, f in folders.items()}
    prompts = sorted(set.intersection(*(set(f) for f in figures.values()))) if figures else []

    def values(name: str, metric: str, among: list[str]) -> list[float]:  # ``among``: prompts with a value
        return [cast(float, figures[name][p][metric]) for p in among]

    def applies(metric: str) -> list[str]:  # the prompts a metric has a value for under every policy
        return [p for p in prompts if all(f[p].get(metric) is not None for f in figures.values())]

    policies = {
        name: {m: float(np.mean(values(name, m, applies(m)))) if applies(m) else None for m in METRICS}
        for name in figures
    }
    differences = {
        f"{a} - {b}": {m: paired_difference(values(a, m, applies(m)), values(b, m, applies(m)), seed) for m in METRICS}
        for a, b in pairs
        if a in figures and b in figures
    }
    return {"prompts": len(prompts), "policies": policies, "differences": differences, "bootstrap": N_BOOT}


# -- eval math: per problem --------------------------------------------------------------------------------------
def compare_math(folders: dict[str, Path], ks: list[int], pairs: list[tuple[str, str]], seed: int = 0) -> dict:
    """pass@k per policy over the problems every policy scored, and paired differences over problems."""

    counts = {}
    for name, folder in folders.items():
        models = scored_problems(folder)
        if len(models) == 1:
            counts[name] = next(iter(models.values()))
        elif name in models:  # a several-model eval math folder: the model of this name
            counts[name] = models[name]
        else:
            raise UserInputError(
                f"--math {name}={folder}: expected one model's generations or one named {name!r}, found "
                f"{sorted(models)}"
            )
    problems = sorted(set.intersection(*(set(c) for c in counts.values()))) if counts else []
    n = min((counts[name][p][0] for name in counts for p in problems), default=0)
    ks = sorted({k for k in ks if k <= n})
    value = {name: {k: [pass_at_k(*c[p], k) for p in problems] for k in ks} for name, c in counts.items()}
    return {
        "problems": len(problems),
        "n": n,
        "policies": {
            name: {f"pass@{k}": float(np.mean(v[k])) if problems else None for k in ks} for name, v in value.items()
        },
        "differences": {
            f"{a} - {b}": {f"pass@{k}": paired_difference(value[a][k], value[b][k], seed) for k in ks}
            for a, b in pairs
            if a in value and b in value
        },
        "bootstrap": N_BOOT,
    }


# -- training curves ---------------------------------------------------------------------------------------------
def training_curves(log_files: dict[str, Path]) -> dict[str, dict[str, list[float]]]:
    """Per run, per metric (CURVES): the value at each logged optimiser step (TRL's ``log_history``)."""
    curves: dict[str, dict[str, list[float]]] = {}
    for name, path in log_files.items():
        if not path.exists():
            raise UserInputError(f"{path}: no training log (an rl-train output holds log_history.json)")
        history = [h for h in json.loads(path.read_text()) if REWARD.key in h]
        curves[name] = {"step": [float(h["step"]) for h in history]}
        for key, label in CURVES.items():
            curves[name][label] = [float(h[key]) for h in history if key in h]
        would = [
            float(h[WOULD_CHANGE.key]) for h in history if WOULD_CHANGE.key in h
        ]  # a GRPO run's would-be share: dashed
        if would:
            curves[name][CURVES[GROUPS_CHANGED.key]] = []  # it changed none: its would-be share instead
            curves[name]["would change"] = would
    return curves


def term_activity(log_file: Path) -> dict[str, Any] | None:
    """Whether a run's diversity term acted (``darling.rl.reward.TermEffect``, logged per step by ``rl-train``): the
    mean share of groups whose advantages it changed, the steps at which it changed any, the mean absolute change
    against the mean absolute advantage from quality alone. For the GRPO baseline (``applied`` False), what DARLING's
    term would have changed in its groups. None for a log without these figures (no classifier, older darling)."""
    history = [h for h in json.loads(log_file.read_text()) if REWARD.key in h]
    if not history or not any(GROUPS_CHANGED.key in h for h in history):
        return None
    applied = not any(WOULD_CHANGE.key in h for h in history)
    shares = [float(h.get(GROUPS_CHANGED.key if applied else WOULD_CHANGE.key, 0.0)) for h in history]

    def mean(key: str) -> float:
        return float(np.mean([h.get(key, 0.0) for h in history]))

    entropy, coef = TRL_ENTROPY.key, TRL_ENTROPY_COEF.key
    bonus = [float(h[entropy]) * float(h[coef]) for h in history if h.get(coef) and entropy in h]
    return {
        "applied": applied,
        # TRL's entropy bonus (the entropy arm): coefficient x mean token entropy, subtracted from the loss per step
        **({"entropy_bonus": float(np.mean(bonus)), "entropy_steps": len(bonus)} if bonus else {}),
        "steps": len(history),
        "share": float(np.mean(shares)),
        "steps_acted": sum(1 for v in shares if v > 0),
        "first_step_acted": next((int(h["step"]) for h, v in zip(history, shares, strict=True) if v > 0), None),
        "advantage_change": mean(ADVANTAGE_CHANGE.key),
        "quality_advantage": mean(QUALITY_ADVANTAGE.key),
        "all_distinct": mean(ALL_DISTINCT.key),
    }


def running_mean(values: Sequence[float], window: int) -> list[float]:
    """The mean of each value and the ``window - 1`` before it (fewer at the start): the trend of a per-step metric
    that, at a few groups a step, jumps from step to step."""
    sums = np.cumsum(np.asarray(values, dtype=float))
    return [
        float((sums[i] - (sums[i - window] if i >= window else 0.0)) / min(i + 1, window)) for i in range(len(sums))
    ]


def trend_window(steps: int) -> int:
    """A quarter of the run, at least 2 steps and at most 8."""
    return max(2, min(8, steps // 4))


def plot_curves(curves: dict[str, dict[str, list[float]]], path: Path) -> None:
    """One figure, one panel per metric; per run its per-step points, faint, and their running mean as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(CURVES.values())
    fig, axes = plt.subplots(1, len(labels), figsize=(4 * len(labels), 3.2))
    for ax, label in zip(axes, labels, strict=True):
        for name, curve in curves.items():
            if curve.get(label):
                steps, values = curve["step"][: len(curve[label])], curve[label]
                window = trend_window(len(values))
                (raw,) = ax.plot(steps, values, marker="o", markersize=3, linestyle="none", alpha=0.35)
                mean = running_mean(values, window)
                ax.plot(steps, mean, color=raw.get_color(), label=f"{name} (mean of {window} steps)")
            if label == CURVES[GROUPS_CHANGED.key] and curve.get("would change"):
                would, steps = curve["would change"], curve["step"][: len(curve["would change"])]
                (raw,) = ax.plot(steps, would, marker="o", markersize=3, linestyle="none", alpha=0.35)
                window = trend_window(len(would))
                ax.plot(
                    steps, running_mean(would, window), color=raw.get_color(), linestyle="--", label=f"{name} (would)"
                )
        if label == CURVES[GROUPS_CHANGED.key]:
            ax.set_ylim(-0.05, 1.05)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize="small")
        ax.set_title(label)
        ax.set_xlabel("optimiser step (points: each step)")
    axes[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)


def compare(config: CompareConfig) -> dict[str, Any]:
    """Everything the config names, compared: writes compare.json, report.md and curves.png; returns compare.json."""
    pairs = config.difference_pairs()
    result: dict[str, Any] = {
        "policies": config.policy_names(),
        "pairs": [f"{a} - {b}" for a, b in pairs],
        "quality": config.quality,
        "max_words": config.max_words,
        "strict_length": config.strict_length,
    }
    if config.novelty:
        folders = named(config.novelty, "--novelty")
        result["novelty"] = compare_novelty(
            folders,
            config.quality,
            config.max_words,
            pairs,
            config.seed,
            config.strict_length,
            resolve_device(config.device),
        )
    if config.math:
        result["math"] = compare_math(named(config.math, "--math"), config.ks, pairs, config.seed)
    output = Path(config.output)
    if config.training:
        logs = {name: folder / "log_history.json" for name, folder in named(config.training, "--training").items()}
        result["curves"] = training_curves(logs)
        activity = {name: term_activity(log) for name, log in logs.items()}
        result["term"] = {name: figures for name, figures in activity.items() if figures is not None}
        plot_curves(result["curves"], output / "curves.png")
        result["figure"] = str(output / "curves.png")
    atomic_write_bytes(output / "compare.json", (json.dumps(result, indent=2) + "\n").encode())
    atomic_write_bytes(output / "report.md", render_comparison(result).encode())
    return result
