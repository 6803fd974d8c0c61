"""``darling rl-train``: its flags are the fields of ``RLTrainConfig`` (cli/options.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from darling.cli.common import err, out
from darling.cli.options import config_command, param
from darling.core.training_log import DISTINCT, DIVERSITY, GROUPS_CHANGED, QUALITY, TRL_REWARD
from darling.rl.config import RLTrainConfig

if TYPE_CHECKING:
    pass

RL_DOC = """GRPO / DARLING training on TRL with the DARLING reward (quality x normalised diversity).

Examples (CPU: SmolLM2-135M policy, built-in arithmetic problems, the classifier from `darling train-classifier`):

    darling rl-train --preset cpu --classifier runs/clf --output runs/rl

    # the GRPO baseline; other arms: --method darling-ngram | darling-add |
    # entropy --entropy-coef 0.001 | passk --passk-k 4
    darling rl-train --preset cpu --method grpo --output runs/rl-grpo

Multi-GPU: `accelerate launch --config_file deepspeed_zero3.yaml -m darling rl-train --preset paper-math
--classifier runs/qwen3-clf --classifier-url http://node1:8000 --output runs/rl` (see README). Every setting
below is a field of `darling.rl.config.RLTrainConfig`; `--config FILE` (TOML/JSON/YAML) takes the same keys.
"""

RL_PARAMS = [
    param(
        "resume",
        Annotated[
            bool,
            typer.Option(help="Continue from the last checkpoint in OUTPUT (same settings; --max-steps may grow)."),
        ],
        False,
    ),
]


def rl_train(config: RLTrainConfig, resume: bool) -> None:
    if config.engine == "verl":
        from darling.rl.verl_recipe import run_verl  # loads polars when run

        script = run_verl(config)
        out.print(f"verl's command: {script}" if config.dry_run else f"policy saved to {config.output}/final")
        return
    from darling.core.pooling_client import PoolingServerError  # loads httpx, numpy when run
    from darling.core.reward_model import RewardServerError  # loads httpx, numpy when run
    from darling.rl.train import rl_train as train  # loads polars when run

    try:
        trainer = train(config, resume=resume)
    except PoolingServerError as exc:
        # No decision (or no score), no reward: stop loudly; checkpoints up to the last saved step are intact.
        server = "reward model" if isinstance(exc, RewardServerError) else "classifier"
        err.print(
            f"[bold red]error:[/] the {server} server failed ({exc}); fix it and rerun with --resume",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(code=1) from None
    if not trainer.is_world_process_zero():  # one report per run, from the rank that saved it
        return
    logs = [h for h in trainer.state.log_history if TRL_REWARD.key in h]
    for h in logs:
        out.print(
            f"step {h.get('step')}: reward {h.get(TRL_REWARD.key, 0):.3f}  quality {h.get(QUALITY.key, 0):.3f}  "
            f"diversity {h.get(DIVERSITY.key, 0):.3f}  "
            f"distinct/group {h.get(DISTINCT.key, 0):.2f}"
            + (
                f"  term changed {h[GROUPS_CHANGED.key]:.0%} of groups"
                if GROUPS_CHANGED.key in h and config.reward().combine != "quality"
                else ""
            )
        )
    out.print(f"policy saved to {config.output}/final")


rl_train_cmd = config_command(RLTrainConfig, rl_train, RL_PARAMS, doc=RL_DOC, preset="cpu")
