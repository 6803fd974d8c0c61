"""``darling pipeline`` — its flags are the fields of ``PipelineConfig`` (cli/options.py); it calls
``darling.pipeline.run_pipeline``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from darling.cli.common import err, out
from darling.cli.options import config_command, param
from darling.pipeline.config import PipelineConfig

DOC = """The whole chain: rollouts -> same-answer pairs -> judge labels -> classifier (train, calibrate, export)
-> DARLING RL (and, with --grpo-baseline as in the cpu preset, GRPO with the same settings and seeds) -> eval
math (pass@k) -> eval novelty -> DARLING against GRPO on held-out prompts, each stage in its own folder of
OUTPUT, written up in OUTPUT/report.md.

Examples:

    darling pipeline --preset cpu --output runs/pipe             # ~9 min on 2 CPU cores

    darling pipeline --preset cpu --output runs/pipe             # again: every finished stage is skipped

    darling pipeline --preset cpu-compare --output runs/cmp      # 48 RL steps per run, ~18 min

    darling pipeline --preset cpu --output runs/tiny --datagen-limit 2 --judge-limit 3 --rl-steps 1 \\
        --eval-limit 2 --eval-n 2 --novelty-limit 2 --eval-max-tokens 16

    darling pipeline --preset cpu --output runs/pipe --dry-run   # print and write commands.sh only

    darling pipeline --preset paper --output runs/paper          # GPUs: vLLM, Llama-3.3-70B judge,
                                                                 # Qwen3-Embedding-4B, TRL paper-math

On a machine without CUDA, `--preset paper` writes OUTPUT/commands.sh, says it needs GPUs and exits 0. An
interrupted run resumes with the same command; another preset or option into the same OUTPUT is refused.
OUTPUT/manifest.json records the command line, config, versions and SHA-256 of every file. Every setting below is
a field of `darling.pipeline.PipelineConfig`; each `darling` line of OUTPUT/commands.sh is built from the same
config objects the run uses. `--set rl_options.floor=0.1` sets one entry of a stage's options.
"""
PARAMS = [param("progress", Annotated[bool, typer.Option(help="Show the stages' progress bars.")], sys.stderr.isatty())]


def pipeline(config: PipelineConfig, progress: bool) -> None:
    from darling.pipeline import run_pipeline
    from darling.pipeline.stages import StageFailed

    try:
        result = run_pipeline(config, progress=progress, log=_print, argv=sys.argv)
    except StageFailed as exc:  # failed items (judge calls, generations): the rerun retries them
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None
    if result["status"] == "done":
        _print(f"-> {result['report']}  (manifest: {result['manifest']})")


def _print(line: str) -> None:
    out.print(line, highlight=False, markup=False, soft_wrap=True)


pipeline_cmd = config_command(PipelineConfig, pipeline, PARAMS, doc=DOC, preset="cpu")
