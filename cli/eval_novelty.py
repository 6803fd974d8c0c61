"""``darling eval novelty``: its flags are the fields of ``darling.evals.config.NoveltyConfig`` (the engine's
from ``darling.core.engine_config``)."""

from __future__ import annotations

import typer

from darling.cli.common import err, out
from darling.cli.datagen import PROGRESS
from darling.cli.options import config_command
from darling.evals.config import NoveltyConfig

DOC = """NoveltyBench's diversity of a generator: k responses per prompt, partitioned by an equivalence classifier
(NoveltyBench's greedy first-member partition unless --partition union-find); distinct = classes per prompt,
utility = patience-weighted quality of each class's first response (--utility darling-fork: sum / k).

Examples (CPU, the packaged SmolLM2):

    darling eval novelty --prompts curated.jsonl --model smollm2 \\
        --classifier runs/clf --limit 20 --reward-model runs/rm \\
        --output runs/novelty-smollm2

    # several policies in one process: runs/novelty/base/, runs/novelty/rl/
    darling eval novelty --prompts naming-heldout --classifier runs/clf \\
        --model base=smollm2 --model rl=runs/rl/final --output runs/novelty

GPUs: `--engine vllm` (or `--engine openai --base-url ...`), `--classifier-url` per served replica (`darling
serve-classifier`) and `--reward-model-url` per reward-model replica (`darling serve-reward-model`).
Rerun the same command to resume; `--no-generate --classifier other` rescores without generating (so do
--partition, --utility and --threshold: they are not part of the generations' identity), every
OUTPUT/NAME/ of a several-model run when no --model is given.
Writes metrics.json, report.md, novelty.png, scores.parquet, per_prompt.parquet and generations/.
A prompt with a failed generation is excluded from the metrics and counted; the exit code is then 1.
Every setting below is a field of `darling.evals.config.NoveltyConfig`.
"""


def eval_novelty(config: NoveltyConfig, progress: bool) -> None:
    from darling.core.pooling_client import PoolingServerError  # loads httpx, numpy when run
    from darling.core.reward_model import RewardServerError  # loads httpx, numpy when run
    from darling.evals.novelty import evaluate_novelty  # loads polars, httpx, numpy when run

    try:
        results = evaluate_novelty(config, progress=progress)
    except PoolingServerError as exc:
        # No decision or no score: no metrics (the stored generations stay; a rerun scores them without generating).
        server = "reward model" if isinstance(exc, RewardServerError) else "classifier"
        err.print(
            f"[bold red]error:[/] the {server} server failed ({exc}); fix it and rerun", highlight=False, soft_wrap=True
        )
        raise typer.Exit(code=1) from None
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    incomplete = 0
    for folder, m in results.items():
        run = m["run"]
        if run:
            out.print(f"generations: {run['generated']} new, {run['reused']} already there, {run['failed']} failed")
        out.print(
            f"{m['n_prompts']} prompts x {m['k']}: distinct {fmt(m['mean_distinct'])} (partition {config.partition})  "
            f"utility {fmt(m['mean_utility'])} ({config.utility})  quality {fmt(m['mean_quality'])}  "
            f"-> {folder}/metrics.json, report.md"
        )
        incomplete += m["n_prompts_incomplete"]
    if incomplete:
        out.print(f"{incomplete} prompts excluded: a generation failed; rerun to retry")
        raise typer.Exit(code=1)


eval_novelty_cmd = config_command(NoveltyConfig, eval_novelty, [PROGRESS], doc=DOC)
