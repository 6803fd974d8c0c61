"""``darling eval novelty`` — a thin wrapper over ``darling.evals.novelty.evaluate_novelty``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from darling.cli.common import out, user_errors
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


@user_errors
def eval_novelty_cmd(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for generations, scores and the report.")],
    classifier: Annotated[
        str, typer.Option(help="Exported darling classifier, or a 2-label HF pair classifier (then give --threshold).")
    ],
    prompts: Annotated[
        str | None, typer.Option(help="Prompts: JSONL/Parquet (field prompt; id, category if present), dataset.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Generator model; smollm2 = packaged.")] = None,
    engine: Engine = "hf",
    k: Annotated[int, typer.Option("--k", "-k", help="Responses per prompt.")] = 10,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Max new tokens per response.")] = 512,
    limit: Annotated[int | None, typer.Option(help="Use the first N prompts.")] = None,
    seed: Annotated[int, typer.Option(help="Seed (per-request seeds derive from it and prompt ids).")] = 0,
    classifier_url: Annotated[
        list[str] | None, typer.Option(help="Served replica of --classifier (repeatable), e.g. http://127.0.0.1:8000.")
    ] = None,
    threshold: Annotated[
        float | None, typer.Option(help="Equivalence threshold; default: the export's calibrated one.")
    ] = None,
    partition: Annotated[
        str,
        typer.Option(
            help="noveltybench: NoveltyBench's greedy partition (each response vs each class's first member, "
            "P > threshold, its <=5-word rule); union-find: DARLING's training partition (P >= threshold, transitive)."
        ),
    ] = "noveltybench",
    utility: Annotated[
        str,
        typer.Option(
            help="noveltybench: credited qualities weighted patience^i (NoveltyBench's leaderboard); "
            "darling-fork: their sum / k (DARLING's evaluation fork, no patience)."
        ),
    ] = "noveltybench",
    reward_model: Annotated[
        str | None, typer.Option(help="One-output HF reward model for quality; none: quality = 1 (diversity only).")
    ] = None,
    cut_points: Annotated[
        str | None, typer.Option(help="Comma-separated reward cut points -> quality 1..n+1; default NoveltyBench's.")
    ] = None,
    patience: Annotated[
        float, typer.Option(help="Utility discount per position (NoveltyBench: 0.8); unused by darling-fork.")
    ] = 0.8,
    generate: Annotated[
        bool, typer.Option("--generate/--no-generate", help="--no-generate: rescore the stored generations only.")
    ] = True,
    batch_size: Annotated[int, typer.Option(help="Pairs per classifier forward pass.")] = 32,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: Concurrency = 32,
    timeout: Timeout = 300.0,
    max_retries: Retries = 4,
    tensor_parallel_size: TensorParallel = 1,
    threads: Threads = None,
    progress: Progress = INTERACTIVE,
) -> None:
    """NoveltyBench's diversity of a generator: k responses per prompt, partitioned by an equivalence classifier
    (NoveltyBench's greedy first-member partition unless --partition union-find); distinct = classes per prompt,
    utility = patience-weighted quality of each class's first response (--utility darling-fork: sum / k).

    Example (CPU, the packaged SmolLM2, NoveltyBench's curated prompts):

        darling eval novelty --prompts curated.jsonl --model smollm2 --classifier runs/clf --limit 20 \\
            --reward-model runs/rm --output runs/novelty-smollm2

    GPUs: `--engine vllm` (or `--engine openai --base-url ...`) and `--classifier-url` per served replica.
    Rerun the same command to resume; `--no-generate --classifier other` rescores without generating (so do
    --partition, --utility and --threshold: they are not part of the generations' identity).
    Writes metrics.json, report.md, novelty.png, scores.parquet, per_prompt.parquet and generations/.
    A prompt with a failed generation is excluded from the metrics and counted; the exit code is then 1.
    """
    from darling.evals.novelty import NOVELTYBENCH_CUT_POINTS, NoveltyConfig, evaluate_novelty, parse_cut_points

    if threads:
        import torch

        torch.set_num_threads(threads)
    config = NoveltyConfig(
        output=output, prompts=prompts, model=model, engine=engine, k=k, temperature=temperature,
        max_tokens=max_tokens, limit=limit, seed=seed, classifier=classifier, classifier_urls=classifier_url or [],
        threshold=threshold, partition=partition, utility=utility, reward_model=reward_model,
        cut_points=parse_cut_points(cut_points) if cut_points else NOVELTYBENCH_CUT_POINTS, patience=patience,
        generate=generate, batch_size=batch_size,
        engine_options=engine_options(engine, base_url, api_key_env, concurrency, timeout, max_retries,
                                      tensor_parallel_size, threads) if generate else {},
    )  # fmt: skip
    m = evaluate_novelty(config, progress=progress)
    run = m["run"]
    if run:
        out.print(f"generations: {run['generated']} new, {run['reused']} already there, {run['failed']} failed")
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    out.print(
        f"{m['n_prompts']} prompts x {m['k']}: distinct {fmt(m['mean_distinct'])} (partition {partition})  "
        f"utility {fmt(m['mean_utility'])} ({utility})  quality {fmt(m['mean_quality'])}  "
        f"-> {output}/metrics.json, report.md"
    )
    if m["n_prompts_incomplete"]:
        out.print(f"{m['n_prompts_incomplete']} prompts excluded: a generation failed; rerun to retry")
        raise typer.Exit(code=1)
