"""``darling eval creative``: its flags are the fields of ``darling.evals.creative_config.CreativeConfig`` (the
engine's from ``darling.core.engine_config``)."""

from __future__ import annotations

import typer
from rich.table import Table

from darling.cli.common import out
from darling.cli.datagen import PROGRESS
from darling.cli.options import config_command
from darling.evals.creative_config import CreativeConfig

DOC = """EQ-Bench creative writing v3's rubric scoring: each writer writes a piece per prompt and iteration (seed
modifiers rotate per iteration), a judge scores it at temperature 0 on the benchmark's criteria, and the score is
the benchmark's (negative criteria as 20 - x, values over 20 dropped, mean per piece, mean over pieces x 5).

The benchmark's repository has no licence, so none of its prompts, criteria or judge prompt ship here: clone
github.com/EQ-bench/creative-writing-bench yourself and point --bench-dir at it.

Example (writers served by vLLM, one server each; the judge behind an OpenAI-compatible URL):

    darling eval creative --bench-dir ~/src/creative-writing-bench \\
        --engine vllm --model darling=runs/rl-darling/final \\
        --model grpo=runs/rl-grpo/final \\
        --judge-model meta-llama/Llama-3.3-70B-Instruct \\
        --judge-engine openai --judge-base-url http://judge:8000/v1 \\
        --iterations 3 --output runs/creative

Rerun the same command to resume (only missing or failed pieces and judgments are asked for);
`--no-generate` reports again from what is stored. Writes metrics.json, report.md, creative.png (scores with
bootstrap 95% intervals over prompts; where --versus A beats B, per criterion), pieces.parquet, criteria.parquet.
A failed piece or judgment is left out of the scores and counted; the exit code is then 1.
Every setting below is a field of `darling.evals.creative_config.CreativeConfig`.
"""


def eval_creative(config: CreativeConfig, progress: bool) -> None:
    from darling.evals.creative import evaluate_creative  # loads polars, httpx, numpy when run

    m = evaluate_creative(config, progress=progress)
    for name, c in m["run"].get("pieces", {}).items():
        out.print(
            f"{name}: {c['written']} pieces new, {c['reused']} already there, {c['short']} short, {c['failed']} failed"
        )
    if "judgments" in m["run"]:
        c = m["run"]["judgments"]
        out.print(f"judgments: {c['judged']} new, {c['reused']} already there, {c['failed']} failed")
    table = Table(title="rubric score (0-100)", title_justify="left")
    for column in ("writer", "score", "95% interval", "scored", "short", "failed", "judge failed"):
        table.add_column(column, justify="left" if column == "writer" else "right")
    fmt = lambda x: "n/a" if x is None else f"{x:.2f}"  # noqa: E731
    for name, w in m["models"].items():
        ci = w["interval_95"]
        interval = f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "n/a"
        failed, judge_failed = w["failed"] + w["missing"], w["judge_failed"] + w["unjudged"]
        row = (name, fmt(w["score"]), interval, str(w["scored"]), str(w["short"]), str(failed), str(judge_failed))
        table.add_row(*row)
    out.print(table)
    if m["versus"]:
        v = m["versus"]
        top = [r for r in v["criteria"] if r["wins"]][:3]
        shown = ", ".join(f"{r['criterion']} ({r['wins']} of {r['paired']})" for r in top) or "no criterion"
        out.print(f"{v['a']} beats {v['b']} most often on: {shown}")
    out.print(f"-> {config.output}/metrics.json, report.md, creative.png")
    if m["incomplete"]:
        out.print(f"{m['incomplete']} piece(s) failed, missing or unjudged: rerun to retry them")
        raise typer.Exit(code=1)


eval_creative_cmd = config_command(CreativeConfig, eval_creative, [PROGRESS], doc=DOC)
