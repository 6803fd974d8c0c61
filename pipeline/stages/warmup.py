"""The GRPO warm-up (``rl-warmup/``): ``[rl]`` plus ``[rl_warmup]``, quality only, alone on the stage's
cores, first in the chain. Every RL run then starts from its policy, so that a diversity term meets groups with
repeated answers from its first step (a base policy's long answers rarely repeat); with ``rollouts_from = policy``
it is also the policy whose own answers train the classifier (the paper's chain: rollouts of the policy on the prompts
it will train on). It runs before any classifier exists, so it scores with none."""

from __future__ import annotations

from typing import Any

from darling.pipeline.folders import WARMUP_FOLDER
from darling.pipeline.rl_steps import (
    REWARD_SERVERS_FILE,
    born_policy,
    reward_serve_step,
    rl_run,
    run_section,
    run_summary,
)
from darling.pipeline.script import Block, start_in_background, stop_background
from darling.pipeline.stage import Plan, Stage, memoised
from darling.pipeline.steps import Step, block_threads, table_values
from darling.rl.methods import GRPO


def _with_warmup(plan: Plan) -> bool:
    return bool(plan.config.rl_warmup)


@memoised
def warmup_step(plan: Plan) -> Step:
    """The warm-up's ``rl-train`` (GRPO, quality only), on the cores ``jobs`` side-by-side commands would share."""
    c = plan.config
    own = {**table_values(c, "rl_warmup"), **born_policy(plan)}
    tables = ("rl", "rl_warmup")
    return rl_run(plan, WARMUP_FOLDER, GRPO.name, own, block_threads(c), tables=tables)


def warmup_block(plan: Plan) -> Block:
    c = plan.config
    step = warmup_step(plan)
    lines, steps = [step.guarded(c.run)], [step]
    if c.serve_reward_model:  # its quality from the reward model's replicas, started for this stage alone
        server = reward_serve_step(plan, WARMUP.name)
        lines = [*start_in_background(c, server, WARMUP.name, REWARD_SERVERS_FILE), *lines, stop_background(server)]
        steps = [server, *steps]
    where = f"{step.config.policy}, {step.config.max_steps} GRPO steps (quality only): the start of every RL run"
    return Block(WARMUP.name, where, lines, steps)


def warmup_summary(plan: Plan) -> dict[str, Any]:
    step = warmup_step(plan)
    return {"run": run_summary(step, "quality only (the GRPO warm-up every RL run starts from)")}


def warmup_section(s: dict[str, Any]) -> list[str]:
    return run_section(s["run"], WARMUP.name)


WARMUP = Stage(
    WARMUP_FOLDER,
    "GRPO warm-up: the policy every RL run starts from",
    warmup_block,
    warmup_summary,
    warmup_section,
    placement="nodes",
    runs=_with_warmup,
    tables=("rl_warmup",),
)
