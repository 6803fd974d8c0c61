"""``darling eval math`` — a thin wrapper over ``darling.evals.math.evaluate_math``.

Engine options are datagen's (same names, same parsing), because generation *is* datagen's rollouts stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from darling.cli.common import err, out, user_errors
from darling.cli.datagen import (
    INTERACTIVE,
    ApiKeyEnv,
    BaseUrl,
    Concurrency,
    Engine,
    Progress,
    Retries,
    TensorParallel,
    Threads,
    Timeout,
    engine_options,
)


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


@user_errors
def eval_math_cmd(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Writes generations/, metrics.json, report.md, passk.png.")
    ],
    problems: Annotated[
        list[str] | None,
        typer.Option(
            help="Problems: a file (.jsonl/.parquet), HF dataset, or a built-in set by name: aime24, aime25, amc23, "
            "hmmt, minerva_math, olympiadbench, gsm8k, arithmetic, champ (repeatable)."
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Model/checkpoint: PATH or NAME=PATH (repeatable); smollm2 = packaged."),
    ] = None,
    generators: Annotated[
        Path | None, typer.Option(help="TOML/JSON/YAML listing models with their own prompts and sampling.")
    ] = None,
    engine: Engine = "hf",
    n: Annotated[int, typer.Option("--n", "-n", help="Samples per problem (pass@k for k up to n).")] = 8,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.6,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling.")] = 0.95,
    max_tokens: Annotated[int, typer.Option(help="Max new tokens per response.")] = 4096,
    seed: Annotated[int, typer.Option(help="Seed (per-request seeds derive from it and stable ids).")] = 0,
    system_prompt: Annotated[str | None, typer.Option(help="System prompt ('' for none).")] = None,
    limit: Annotated[int | None, typer.Option(help="Use the first N problems of each file.")] = None,
    k: Annotated[
        list[int] | None, typer.Option("--k", help="k to report (repeatable); default 1, 2, 4, ... n; 1 and n always.")
    ] = None,
    generate: Annotated[
        bool, typer.Option("--generate/--no-generate", help="--no-generate: recompute the report from the Parquet.")
    ] = True,
    shard_size: Annotated[int, typer.Option(help="Responses per Parquet shard (flush interval).")] = 64,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: Concurrency = 32,
    timeout: Timeout = 300.0,
    max_retries: Retries = 4,
    tensor_parallel_size: TensorParallel = 1,
    threads: Threads = None,
    progress: Progress = INTERACTIVE,
) -> None:
    """Math pass@k: n samples per problem, graded by math-verify, per dataset and averaged over datasets.

    Rerun the same command to resume (only missing or failed samples are generated). A problem with a
    failed sample is left out of pass@k, never counted wrong; the report says how many.

    Examples:

        darling eval math --problems aime24 --problems amc23 --engine vllm \\
            --model base=Qwen/Qwen2.5-Math-1.5B --model darling=runs/rl/checkpoint-500 -n 16 --output runs/math

        darling eval math --problems arithmetic --limit 20 --model smollm2 -n 4 --max-tokens 64 --output runs/math-cpu

        darling eval math --output runs/math --no-generate      # report again from the saved generations
    """
    from darling.datagen.rollouts import DEFAULT_SYSTEM_PROMPT, load_generator_config
    from darling.evals.math import MathEvalConfig, evaluate_math, parse_model

    system = DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt or None
    specs = load_generator_config(generators) if generators else []
    specs += [parse_model(m, system) for m in model or []]
    options = engine_options(engine, base_url, api_key_env, concurrency, timeout, max_retries,
                             tensor_parallel_size, threads) if generate else {}  # fmt: skip
    config = MathEvalConfig(
        output, list(problems or []), specs, engine, n, temperature, top_p, max_tokens, seed, limit,
        list(k) if k else None, generate, shard_size, options, progress,
    )  # fmt: skip
    metrics = evaluate_math(config)
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
    out.print(f"-> {output}/metrics.json, {output}/report.md, {output}/passk.png")
    if counts is not None and counts["failed"]:
        raise typer.Exit(code=1)
