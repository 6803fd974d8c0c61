"""The report of ``darling eval novelty``: summary metrics (overall and per category), a figure of distinct
and utility per prompt, and ``report.md``. Pure functions of the per-prompt table, so a report can be rebuilt
from ``per_prompt.parquet`` without regenerating or rescoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from darling.core.numbers import fmt as fmt_number
from darling.core.shards import atomic_write_bytes, atomic_write_parquet
from darling.evals.prompt_metrics import PROMPT_METRIC_NAMES, mean_key

EMPTY_PER_PROMPT = {"prompt_id": pl.String, "category": pl.String, **{m: pl.Float64 for m in PROMPT_METRIC_NAMES}}


def write_outputs(output: Path, scored: pl.DataFrame, per_prompt: pl.DataFrame, metrics: dict[str, Any]) -> None:
    """scores.parquet, per_prompt.parquet, novelty.png, report.md, then metrics.json (last: marks a finished eval)."""
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_parquet(scored, output / "scores.parquet")
    atomic_write_parquet(per_prompt, output / "per_prompt.parquet")
    plot_distributions(per_prompt, metrics["k"], output / "novelty.png", metric_names(metrics))
    atomic_write_bytes(output / "report.md", render_report(metrics).encode())
    atomic_write_bytes(output / "metrics.json", (json.dumps(metrics, indent=2) + "\n").encode())


def summarise(per_prompt: pl.DataFrame) -> dict[str, Any]:
    def means(frame: pl.DataFrame) -> dict[str, Any]:
        def mean(col: str) -> float | None:  # None: no prompt the metric applies to (nulls are skipped)
            value = None if frame.is_empty() else frame[col].mean()
            return None if value is None else float(cast(float, value))

        return {"n_prompts": frame.height, **{mean_key(name): mean(name) for name in PROMPT_METRIC_NAMES}}

    distinct = per_prompt["distinct"].cast(pl.Int64)
    histogram = {str(d): int(n) for d, n in distinct.value_counts().sort("distinct").iter_rows()}
    categories = sorted(c for c in per_prompt["category"].unique().to_list() if c is not None)
    per_category = {c: means(per_prompt.filter(pl.col("category") == c)) for c in categories}
    extra = {"per_category": per_category} if per_category else {}
    return {**means(per_prompt), "distinct_histogram": histogram, **extra}


def metric_names(m: dict[str, Any]) -> tuple[str, str]:
    """How a distinct and a utility figure were made, e.g. ("partition noveltybench", "utility noveltybench,
    patience 0.8"): every number says which partition and which utility it comes from."""
    utility = m["utility"]
    patience = f", patience {utility['patience']}" if utility["patience"] is not None else ""
    return f"partition {m['partition']['method']}", f"utility {utility['method']}{patience}"


def plot_distributions(per_prompt: pl.DataFrame, k: int, path: Path, names: tuple[str, str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
    left.hist(per_prompt["distinct"].to_list(), bins=np.arange(0.5, k + 1.5), rwidth=0.85)
    left.set(xlabel=f"distinct classes of {k} responses", ylabel="prompts", title=f"distinct per prompt ({names[0]})")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.hist(per_prompt["utility"].to_list(), bins=20)
    right.set(xlabel="utility", ylabel="prompts", title=f"per prompt ({names[1]})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def render_report(m: dict[str, Any]) -> str:
    fmt = lambda x: fmt_number(x if x is None else float(x), 3)  # noqa: E731  # counts too, as 3-decimal floats
    g, partition, utility = m["generation"], m["partition"], m["utility"]
    distinct_name, utility_name = metric_names(m)
    source = f" (`{m['reward_model']}`, cut points {m['cut_points']})" if m["reward_model"] else ""
    made = (  # NoveltyBench's generations (--noveltybench) say where they came from; darling's how they were made
        f"NoveltyBench's generations `{g['noveltybench']}`"
        if "noveltybench" in g
        else f"{g['engine']} engine, temperature {g['temperature']}, max {g['max_tokens']} tokens, seed {g['seed']}"
    )
    lines = [
        f"# Novelty: {g['model']} on {g.get('prompts', g.get('noveltybench'))}",
        "",
        f"k = {m['k']} responses per prompt ({made}); classifier `{m['classifier']}` ({m['kind']}), "
        f"threshold {m['threshold']} ({m['threshold_source']}).",
        "",
        f"Partition `{partition['method']}`: {partition['definition']}. Equivalent when {partition['decision']}.",
        "",
        f"Utility `{utility['method']}`: {utility['definition']}"
        + (f"; patience {utility['patience']}." if utility["patience"] is not None else "."),
        "Credited: only the first response of each class, in generation order, earns its quality; repeats 0.",
        "",
        f"Quality: {m['quality']}{source}.",
        "",
        "| metric | value |",
        "| --- | ---: |",
        f"| prompts scored | {m['n_prompts']} |",
        f"| prompts excluded (a failed generation; rerun to retry) | {m['n_prompts_incomplete']} |",
    ]
    how = {"distinct": f"of {m['k']}; {distinct_name}", "utility": utility_name, "quality": "all responses"}
    for name in PROMPT_METRIC_NAMES:  # every per-prompt metric, as evals/prompt_metrics.py lists them
        detail = f" ({how[name]})" if name in how else ""
        lines.append(f"| mean {name.replace('_', ' ')}{detail} | {fmt(m[mean_key(name)])} |")
    if m.get("per_category"):
        lines += ["", "## Per category", "", f"Distinct by {distinct_name}; {utility_name}.", ""]
        lines += ["| category | prompts | mean distinct | mean utility |", "| --- | ---: | ---: | ---: |"]
        lines += [
            f"| {c} | {v['n_prompts']} | {fmt(v['mean_distinct'])} | {fmt(v['mean_utility'])} |"
            for c, v in m["per_category"].items()
        ]
    counts = m.get("distinct_histogram", {})
    lines += ["", f"## Distinct classes per prompt ({distinct_name})", "", "| distinct | prompts |", "| ---: | ---: |"]
    lines += [f"| {d} | {n} |" for d, n in counts.items()]
    lines += ["", "![distinct and utility per prompt](novelty.png)", ""]
    return "\n".join(lines)
