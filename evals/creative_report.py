"""The report of ``darling eval creative``, recomputed from the stored pieces and judgments alone: per piece its
score (``darling.evals.creative_bench.piece_score``), per writer the benchmark's score (mean over scored pieces,
x 5: 0-100) with a percentile bootstrap 95% interval over prompts, the mean of each criterion as the judge gave
it, and the criteria on which writer A (DARLING) beats writer B (GRPO) most often on the same prompt and
iteration (the paper's Figure 4). Writes pieces.parquet, criteria.parquet, creative.png, report.md, metrics.json.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from darling.core.numbers import MISSING, fmt
from darling.core.schemas import stable_id
from darling.core.shards import atomic_write_bytes, atomic_write_parquet
from darling.evals.creative_bench import SCORE_MAX, Bench, oriented, piece_score
from darling.evals.creative_config import CreativeConfig

PIECE_SCORE = "piece score"  # the versus table's row of whole pieces
PIECE_SCHEMA: dict[str, Any] = {
    "model": pl.String,
    "prompt_id": pl.String,
    "iteration": pl.Int64,
    "seed_modifier": pl.String,
    "status": pl.String,  # the piece's: ok | short | failed
    "judge_status": pl.String,  # ok | failed | null (not judged: not ok, or judged an earlier text)
    "piece_score": pl.Float64,  # 0-20; null when unscored
    "scores": pl.String,  # JSON {name: value} as parsed
    "error": pl.String,
}
LONG_SCHEMA: dict[str, Any] = {
    "model": pl.String,
    "prompt_id": pl.String,
    "iteration": pl.Int64,
    "metric": pl.String,
    "value": pl.Float64,  # as the judge gave it (<= 20)
    "oriented": pl.Float64,  # higher is better: 20 - value for a negative criterion
    "kept": pl.Boolean,  # oriented <= 20: counts in the piece's score
    "listed": pl.Boolean,  # a name of the criteria file
    "negative": pl.Boolean,
}


# -- tables --------------------------------------------------------------------------------------------------
def build_tables(
    pieces: pl.DataFrame, judgments: pl.DataFrame | None, bench: Bench
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One row per piece (its status, its judgment's, its score) and one per parsed (piece, name, value)."""
    verdicts: dict[tuple[str, str, int], dict[str, Any]] = {}
    if judgments is not None:
        for row in judgments.iter_rows(named=True):
            verdicts[(row["model"], row["prompt_id"], row["iteration"])] = row
    negative, listed = bench.negative_criteria, set(bench.criteria)
    rows, long = [], []
    for p in pieces.iter_rows(named=True):
        key = (p["model"], p["prompt_id"], p["iteration"])
        verdict = verdicts.get(key) if p["status"] == "ok" else None
        if verdict is not None and verdict["piece_id"] != stable_id(p["piece"]):
            verdict = None  # judged an earlier text of this piece
        scores = json.loads(verdict["scores"]) if verdict is not None and verdict["status"] == "ok" else {}
        for name, value in scores.items():
            o = oriented(name, value, negative)
            long.append((*key, name, value, o, o <= SCORE_MAX, name in listed, name in negative))
        rows.append(
            {
                "model": p["model"],
                "prompt_id": p["prompt_id"],
                "iteration": p["iteration"],
                "seed_modifier": p["seed_modifier"],
                "status": p["status"],
                "judge_status": None if verdict is None else verdict["status"],
                "piece_score": piece_score(scores, negative),
                "scores": json.dumps(scores) if scores else None,
                "error": p["error"] if p["status"] != "ok" else (verdict or {}).get("error"),
            }
        )
    table = pl.DataFrame(rows, schema=PIECE_SCHEMA)
    return table, pl.DataFrame(long, schema=LONG_SCHEMA, orient="row")


def bootstrap_interval(groups: list[list[float]], resamples: int, seed: int, level: float = 0.95) -> list[float] | None:
    """Percentile interval of the mean over all values when whole groups (prompts) are resampled; the indices
    of ``bootstrap_benchmark_stability_creative``: sorted, ``int((1 - level) / 2 * B)`` and ``int((1 + level)
    / 2 * B) - 1``."""
    if not groups:
        return None
    sums = np.array([sum(g) for g in groups])
    counts = np.array([len(g) for g in groups])
    draws = np.random.default_rng(seed).integers(0, len(groups), size=(resamples, len(groups)))
    means = np.sort(sums[draws].sum(axis=1) / counts[draws].sum(axis=1))
    lower = max(0, int((1 - level) / 2 * resamples))
    upper = min(resamples - 1, int((1 + level) / 2 * resamples) - 1)
    return [float(means[lower]), float(means[max(lower, upper)])]


def _writer(name: str, table: pl.DataFrame, long: pl.DataFrame, bench: Bench, config: CreativeConfig) -> dict:
    mine = table.filter(pl.col("model") == name)
    status = lambda col, value: mine.filter(pl.col(col) == value).height  # noqa: E731
    scored = mine.filter(pl.col("piece_score").is_not_null())
    groups: dict[str, list[float]] = defaultdict(list)
    for prompt_id, score in scored.select("prompt_id", "piece_score").iter_rows():
        groups[prompt_id].append(score)
    mean = float(scored["piece_score"].mean()) if scored.height else None  # type: ignore[arg-type]
    interval = bootstrap_interval(list(groups.values()), config.bootstrap, config.seed)
    values = long.filter((pl.col("model") == name) & pl.col("kept"))
    criteria = {}
    for criterion in bench.criteria:
        v = values.filter(pl.col("metric") == criterion)
        raw = None if v.is_empty() else float(v["value"].mean())  # type: ignore[arg-type]
        criteria[criterion] = {"mean": raw, "n": v.height, "negative": criterion in bench.negative_criteria}
    expected = len(bench.prompts) * config.iterations if config.generate else mine.height
    ok = status("status", "ok")
    return {
        "pieces": mine.height,
        "missing": max(0, expected - mine.height),
        "ok": ok,
        "short": status("status", "short"),
        "failed": status("status", "failed"),
        "judged": status("judge_status", "ok"),
        "judge_failed": status("judge_status", "failed"),
        "unjudged": ok - status("judge_status", "ok") - status("judge_status", "failed"),
        "scored": scored.height,
        "prompts_scored": len(groups),
        "score_0_20": mean,
        "score": None if mean is None else mean * 5,
        "interval_95": None if interval is None else [x * 5 for x in interval],
        "criteria": criteria,
        "other_names": values.filter(~pl.col("listed")).height,
    }


def versus(a: str, b: str, table: pl.DataFrame, long: pl.DataFrame, bench: Bench) -> dict[str, Any]:
    """Per criterion (and whole pieces), over the same (prompt, iteration) where both have a value: how often
    A's oriented value beats, ties or loses to B's; rows ordered by wins (the criteria A wins most often first)."""
    key = ["prompt_id", "iteration"]
    kept = long.filter(pl.col("kept") & pl.col("listed")).select("model", *key, "metric", "oriented")
    whole = table.filter(pl.col("piece_score").is_not_null()).select(
        "model", *key, pl.lit(PIECE_SCORE).alias("metric"), pl.col("piece_score").alias("oriented")
    )
    both = pl.concat([kept, whole])
    left = both.filter(pl.col("model") == a).drop("model")
    right = both.filter(pl.col("model") == b).drop("model")
    paired = left.join(right, on=[*key, "metric"], suffix="_b")
    rows: list[dict[str, Any]] = []
    for metric in [*bench.criteria, PIECE_SCORE]:
        m = paired.filter(pl.col("metric") == metric)
        wins = m.filter(pl.col("oriented") > pl.col("oriented_b")).height
        losses = m.filter(pl.col("oriented") < pl.col("oriented_b")).height
        n = m.height
        rows.append(
            {
                "criterion": metric,
                "negative": metric in bench.negative_criteria,
                "wins": wins,
                "ties": n - wins - losses,
                "losses": losses,
                "paired": n,
                "win_rate": wins / n if n else None,
            }
        )
    rows.sort(key=lambda r: (-r["wins"], -(r["win_rate"] or 0.0), r["criterion"]))
    return {"a": a, "b": b, "criteria": rows}


def summarise(
    config: CreativeConfig, bench: Bench, names: list[str], table: pl.DataFrame, long: pl.DataFrame
) -> dict[str, Any]:
    models = {name: _writer(name, table, long, bench, config) for name in names}
    a, b = config.versus_pair()
    incomplete = sum(m["missing"] + m["failed"] + m["judge_failed"] + m["unjudged"] for m in models.values())
    return {
        "models": models,
        "versus": versus(a, b, table, long, bench) if a in names and b in names else None,
        "incomplete": incomplete,
        "benchmark": {
            "bench_dir": str(Path(config.bench_dir).resolve()),
            "files": dict(bench.files),
            "prompts": len(bench.prompts),
            "skipped_without_seed_modifiers": list(bench.skipped),
            "iterations": config.iterations,
            "criteria": list(bench.criteria),
            "negative_criteria": list(bench.negative_criteria),
        },
        "writing": {
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "min_chars": config.min_chars,
            "attempts": 3,
            "min_p": "not sent (the benchmark's 0.1: darling's engines have no min_p)",
        },
        "bootstrap": {"resamples": config.bootstrap, "unit": "prompt, with all its iterations", "seed": config.seed},
    }


# -- outputs -------------------------------------------------------------------------------------------------
def write_outputs(output: Path, table: pl.DataFrame, long: pl.DataFrame, metrics: dict[str, Any]) -> None:
    """pieces.parquet, criteria.parquet, creative.png, report.md, then metrics.json (last: marks a finished eval)."""
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_parquet(table, output / "pieces.parquet")
    atomic_write_parquet(long, output / "criteria.parquet")
    plot(metrics, output / "creative.png")
    atomic_write_bytes(output / "report.md", render_report(metrics).encode())
    atomic_write_bytes(output / "metrics.json", (json.dumps(metrics, indent=2) + "\n").encode())


def render_report(m: dict[str, Any]) -> str:
    bench, writing, judge = m["benchmark"], m["writing"], m.get("judge") or {}
    models = m["models"]
    lines = [
        "# EQ-Bench creative writing v3: rubric scores",
        "",
        f"{bench['prompts']} prompts x {bench['iterations']} iteration(s) from `{bench['bench_dir']}`; writers at "
        f"temperature {writing['temperature']}, max {writing['max_tokens']} tokens (min_p {writing['min_p']}); "
        f"judge `{judge.get('judge_model')}` at temperature 0. Score: the mean over scored pieces of each piece's "
        "mean criterion score (negative criteria as 20 - x, values over 20 dropped), x 5 (0-100); 95% interval: "
        f"{m['bootstrap']['resamples']} bootstrap resamples of prompts.",
        "",
        "| writer | score (0-100) | 95% interval | pieces scored | short (left out) | failed | judge failed |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, w in models.items():
        ci = w["interval_95"]
        shown = f"[{fmt(ci[0], 2)}, {fmt(ci[1], 2)}]" if ci else MISSING
        failed = w["failed"] + w["missing"]
        lines.append(
            f"| {name} | {fmt(w['score'], 2)} | {shown} | {w['scored']} of {w['pieces'] + w['missing']} | {w['short']} "
            f"| {failed} | {w['judge_failed'] + w['unjudged']} |"
        )
    names = list(models)
    lines += ["", "## Per criterion (mean as judged, 0-20; ↓ lower is better)", ""]
    lines += ["| criterion | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for criterion in m["benchmark"]["criteria"]:
        arrow = " ↓" if criterion in m["benchmark"]["negative_criteria"] else ""
        cells = [fmt(models[n]["criteria"][criterion]["mean"], 2) for n in names]
        lines.append(f"| {criterion}{arrow} | " + " | ".join(cells) + " |")
    if m["versus"]:
        v = m["versus"]
        lines += [
            "",
            f"## Where {v['a']} beats {v['b']} (same prompt and iteration; most wins first)",
            "",
            "| criterion | wins | ties | losses | paired | win rate |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in v["criteria"]:
            arrow = " ↓" if r["negative"] else ""
            lines.append(
                f"| {r['criterion']}{arrow} | {r['wins']} | {r['ties']} | {r['losses']} | {r['paired']} "
                f"| {fmt(r['win_rate'], 2)} |"
            )
    if m["incomplete"]:
        lines += ["", f"{m['incomplete']} piece(s) failed, missing or unjudged: rerun the command to retry them."]
    lines += ["", "![scores and wins](creative.png)", ""]
    return "\n".join(lines)


def plot(m: dict[str, Any], path: Path) -> None:
    """Left: each writer's score with its interval. Right (with --versus): win/tie/loss share per criterion."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    v = m["versus"]
    fig, axes = plt.subplots(
        1, 2 if v else 1, figsize=(12 if v else 5, 0.5 + 0.35 * max(6, len(m["benchmark"]["criteria"])))
    )
    axes = np.atleast_1d(axes)
    names = [n for n, w in m["models"].items() if w["score"] is not None]
    scores = [m["models"][n]["score"] for n in names]
    errors = [
        [s - m["models"][n]["interval_95"][0] for n, s in zip(names, scores, strict=True)],
        [m["models"][n]["interval_95"][1] - s for n, s in zip(names, scores, strict=True)],
    ]
    axes[0].barh(names, scores, xerr=errors if names else None, capsize=4)
    axes[0].set(xlabel="score (0-100), 95% interval", title="rubric score", xlim=(0, 100))
    axes[0].invert_yaxis()
    if v:
        rows = [r for r in v["criteria"] if r["paired"]]
        labels = [r["criterion"] + (" ↓" if r["negative"] else "") for r in rows]
        share = {k: [r[k] / r["paired"] for r in rows] for k in ("wins", "ties", "losses")}
        left = np.zeros(len(rows))
        for k, colour in (("wins", "tab:green"), ("ties", "tab:gray"), ("losses", "tab:red")):
            axes[1].barh(labels, share[k], left=left, color=colour, label=k)
            left += np.array(share[k])
        axes[1].invert_yaxis()
        axes[1].set(xlabel="share of paired pieces", title=f"{v['a']} vs {v['b']}", xlim=(0, 1))
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
