"""``darling pipeline`` — a thin wrapper over ``darling.pipeline.run_pipeline``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from darling.cli.common import err, out, user_errors

INTERACTIVE = sys.stderr.isatty()


@user_errors
def pipeline_cmd(
    output: Annotated[Path, typer.Option("--output", "-o", help="Run folder: one subfolder per stage, report.md.")],
    preset: Annotated[
        str, typer.Option(help="cpu (2 cores, ~10 min, runs in process) or paper (GPUs; writes commands.sh).")
    ] = "cpu",
    dry_run: Annotated[bool, typer.Option(help="Write RUN/commands.sh and print it; run nothing.")] = False,
    champ_problems: Annotated[
        int | None, typer.Option(help="datagen: problems (CHAMP problems imported, or problems generated for).")
    ] = None,
    pairs_per_problem: Annotated[int | None, typer.Option(help="pairs: at most N pairs per problem.")] = None,
    judge_pairs: Annotated[int | None, typer.Option(help="labels: judge only the first N pairs.")] = None,
    classifier_steps: Annotated[int | None, typer.Option(help="classifier: optimiser steps.")] = None,
    fallback_pairs: Annotated[
        int | None, typer.Option(help="classifier: NoveltyBench pairs mixed in when the judge gives one class.")
    ] = None,
    rl_steps: Annotated[int | None, typer.Option(help="rl: optimiser steps.")] = None,
    eval_problems: Annotated[int | None, typer.Option(help="eval math: first N problems of each set.")] = None,
    eval_n: Annotated[int | None, typer.Option(help="eval math: samples per problem (pass@k up to n).")] = None,
    novelty_prompts: Annotated[int | None, typer.Option(help="eval novelty: first N prompts.")] = None,
    novelty_k: Annotated[int | None, typer.Option(help="eval novelty: responses per prompt.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Any pipeline option: --set eval_max_tokens=32, --set rl_options.floor=0.1."),
    ] = None,
    keep_checkpoints: Annotated[
        bool | None, typer.Option("--keep-checkpoints/--prune-checkpoints", help="Keep rl/checkpoint-* after RL.")
    ] = None,
    threads: Annotated[int | None, typer.Option(help="torch CPU threads per stage (cpu preset: 1).")] = None,
    progress: Annotated[bool, typer.Option(help="Show the stages' progress bars.")] = INTERACTIVE,
) -> None:
    """The whole chain: rollouts -> same-answer pairs -> judge labels -> classifier (train, calibrate, export)
    -> DARLING RL -> eval math (pass@k before/after RL) -> eval novelty, each stage in its own folder of
    OUTPUT, written up in OUTPUT/report.md.

    Examples:

        darling pipeline --preset cpu --output runs/pipe             # ~10 min on 2 CPU cores

        darling pipeline --preset cpu --output runs/pipe             # again: every finished stage is skipped

        darling pipeline --preset cpu --output runs/tiny --champ-problems 2 --judge-pairs 3 --rl-steps 1 \\
            --eval-problems 2 --eval-n 2 --novelty-prompts 2 --set eval_max_tokens=16

        darling pipeline --preset cpu --output runs/pipe --dry-run   # print and write commands.sh only

        darling pipeline --preset paper --output runs/paper          # GPUs: vLLM, Llama-3.3-70B judge,
                                                                     # Qwen3-Embedding-4B, TRL paper-math

    On a machine without CUDA, `--preset paper` writes OUTPUT/commands.sh, says it needs GPUs and exits 0.
    An interrupted run resumes with the same command; another preset or option into the same OUTPUT is refused.
    OUTPUT/manifest.json records the command line, config, versions and SHA-256 of every file.
    """
    from darling.core.config import parse_set_options
    from darling.pipeline import build_config, run_pipeline
    from darling.pipeline.stages import StageFailed

    flags = dict(
        dry_run=dry_run or None, datagen_limit=champ_problems, pairs_per_problem=pairs_per_problem,
        judge_limit=judge_pairs, classifier_steps=classifier_steps, fallback_pairs=fallback_pairs, rl_steps=rl_steps,
        eval_limit=eval_problems, eval_n=eval_n, novelty_limit=novelty_prompts, novelty_k=novelty_k,
        keep_checkpoints=keep_checkpoints, threads=threads,
    )  # fmt: skip
    config = build_config(preset, output, **{**parse_set_options(set_ or []), **flags})
    try:
        result = run_pipeline(config, progress=progress, log=_print, argv=sys.argv)
    except StageFailed as exc:  # failed items (judge calls, generations): the rerun retries them
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None
    if result["status"] == "done":
        _print(f"-> {result['report']}  (manifest: {result['manifest']})")


def _print(line: str) -> None:
    out.print(line, highlight=False, markup=False, soft_wrap=True)
