"""``darling pipeline`` — its flags are the chain-level fields of ``PipelineConfig`` (cli/options.py); each stage's
settings are a table of it (``--set rl.max_steps=32``). It calls ``darling.pipeline.run_pipeline``."""

from __future__ import annotations

import sys

import typer

from darling.cli.common import err, out
from darling.cli.options import config_command
from darling.pipeline.config import PipelineConfig
from darling.pipeline.schema import TABLES

DOC = """The whole chain: rollouts -> same-answer pairs -> judge labels -> classifier (train, calibrate, export)
-> DARLING RL and, with the same settings and seeds, its GRPO baseline -> eval math (pass@k) -> eval novelty ->
DARLING against GRPO and the base policy, each stage in its own folder of OUTPUT, written up in OUTPUT/report.md.

Every stage runs as its `darling` commands, in their own processes, launched as OUTPUT/commands.sh launches them
(torchrun or accelerate launch for several processes, serve-classifier replicas, a vLLM server per model): the
pipeline writes commands.sh, then runs each of its blocks as written. CPU and GPU presets run the same way.

Examples:

    # the main job, ~10-15 min on 2 CPU cores: a world where the truth is
    # known, its policy, classifier and four arms over three seeds
    darling pipeline --preset cpu-world --output runs/pipe

    # the naming chain: SmolLM2 on the naming prompts, one seed (rerun: finished
    # stages skipped)
    darling pipeline --preset cpu --output runs/naming

    # DARLING against GRPO over three seeds (15-18 min a seed), pooled
    darling pipeline --preset cpu-compare --seeds 1,2,3 --output runs/cmp

    # six seeds side by side on one GPU, 64 steps of 8 prompts, pooled
    darling pipeline --preset gpu-compare --seeds 1,2,3,4,5,6 --output runs/gpu

    # the paper chain with tiny models, on CPU; the paper's, on 8 GPUs
    darling pipeline --preset paper-tiny --output runs/pt
    darling pipeline --preset paper --output runs/paper

    # a quick look at every stage; write and print commands.sh only
    darling pipeline --preset cpu --output runs/tiny --set rl.max_steps=2 \\
        --set datagen.limit=2 --set eval_novelty.limit=2
    darling pipeline --preset paper --output runs/paper --dry-run

A stage's settings are the fields of its command's config, in the table named after the stage: {tables};
`--set TABLE.FIELD=VALUE` or `--config FILE` (TOML) sets
them. On a machine without CUDA, `--preset paper` writes OUTPUT/commands.sh, says it needs GPUs and exits 0. An
interrupted run resumes with the same command; another preset or setting into the same OUTPUT is refused.
OUTPUT/manifest.json records the command line, config, versions and SHA-256 of every file; OUTPUT/logs/ each
stage's output.
""".format(tables=", ".join(f"[{name}] ({section.command})" for name, section in TABLES.items()))


def pipeline(config: PipelineConfig) -> None:
    from darling.pipeline.runner import StageFailed, run_pipeline  # loads every stage's code, when it runs

    try:
        result = run_pipeline(config, log=_print, argv=sys.argv)
    except StageFailed as exc:  # a command failed: the rerun resumes it
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None
    if result["status"] == "done":
        manifest = f"  (manifest: {result['manifest']})" if result.get("manifest") else ""
        _print(f"-> {result['report']}{manifest}")


def _print(line: str) -> None:
    out.print(line, highlight=False, markup=False, soft_wrap=True)


pipeline_cmd = config_command(PipelineConfig, pipeline, doc=DOC, preset="cpu")
