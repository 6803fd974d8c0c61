"""``darling eval math``: its flags are the fields of ``darling.evals.config.MathEvalConfig`` (the engine's from
``darling.core.engine_config``, as in ``datagen rollouts``: generation *is* datagen's rollouts stage)."""

from __future__ import annotations

import typer
from rich.table import Table

from darling.cli.common import err, out
from darling.cli.datagen import PROGRESS
from darling.cli.options import config_command
from darling.evals.config import MathEvalConfig

DOC = """Math pass@k: n samples per problem, graded by math-verify, per dataset and averaged over datasets.

Rerun the same command to resume (only missing or failed samples are generated). A problem with a
failed sample is left out of pass@k, never counted wrong; the report says how many.

Examples:

    darling eval math --problems aime24 --problems amc23 --engine vllm \\
        --model base=Qwen/Qwen2.5-Math-1.5B \\
        --model darling=runs/rl/checkpoint-500 -n 16 --output runs/math

    darling eval math --problems arithmetic --limit 20 --model smollm2 \\
        -n 4 --max-tokens 64 --output runs/math-cpu

    # report again from the saved generations
    darling eval math --output runs/math --no-generate

Every setting below is a field of `darling.evals.config.MathEvalConfig`.
"""


def _summary_table(metrics: dict) -> Table:
    table = Table(title="pass@1 / pass@n (%)", title_justify="left")
    table.add_column("model")
    for name in [*metrics["datasets"], "mean"]:
        table.add_column(name, justify="right")

    def cell(m: dict, d: dict | None) -> str:
        if d is None or d["pass@k"].get("1") is None:
            return "–"
        return f"{100 * d['pass@k']['1']:.1f} / {100 * d['pass@k'][str(m['n'])]:.1f}"

    for model, m in metrics["models"].items():
        table.add_row(model, *[cell(m, m["datasets"].get(d)) for d in metrics["datasets"]], cell(m, m["mean"]))
    return table


def eval_math(config: MathEvalConfig, progress: bool) -> None:
    from darling.evals.math import evaluate_math  # loads polars, httpx when run

    metrics = evaluate_math(config, progress=progress)
    counts = metrics["generation"]
    if counts is not None:
        out.print(
            f"generated {counts['generated']} samples ({counts['skipped']} already there, {counts['failed']} failed)"
        )
    out.print(_summary_table(metrics))
    for name, m in metrics["models"].items():
        failed = sum(d["samples_failed"] + d["samples_missing"] for d in m["datasets"].values())
        excluded = sum(d["excluded_incomplete"] for d in m["datasets"].values())
        if failed:
            err.print(f"{name}: {failed} samples failed or missing; {excluded} problems left out of pass@k (rerun)")
    output = config.output
    out.print(f"-> {output}/metrics.json, {output}/report.md, {output}/passk.png")
    if counts is not None and counts["failed"]:
        raise typer.Exit(code=1)


eval_math_cmd = config_command(MathEvalConfig, eval_math, [PROGRESS], doc=DOC)
