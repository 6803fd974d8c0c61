"""The chain's stages, in order, one room each: ``world.py``, ``warmup.py``, ``datagen.py`` (rollouts, pairs, labels),
``classifier.py``, ``rl.py``, ``eval_math.py``, ``eval_novelty.py``, ``eval_creative.py``, ``compare.py``. A room
holds its stage's steps, block, summary, report section and ``Stage`` record (``pipeline/stage.py``), and names its
own folders; ``commands.sh``, the runner, the report and the SLURM and Ray launchers read everything from ``STAGES``
and a run's ``Plan``. Adding a stage is one room, one line below and its table in ``pipeline/schema.py``.
"""

from __future__ import annotations

from pathlib import Path

from darling.core.errors import UserInputError
from darling.pipeline.resources import INPUT_FILES
from darling.pipeline.schema import TABLES
from darling.pipeline.script import Block
from darling.pipeline.stage import Plan, Stage, memoised
from darling.pipeline.stages.classifier import CLASSIFIER
from darling.pipeline.stages.compare import COMPARE
from darling.pipeline.stages.datagen import DATAGEN, LABELS, PAIRS
from darling.pipeline.stages.eval_creative import EVAL_CREATIVE
from darling.pipeline.stages.eval_math import EVAL_MATH
from darling.pipeline.stages.eval_novelty import EVAL_NOVELTY
from darling.pipeline.stages.rl import RL
from darling.pipeline.stages.warmup import WARMUP
from darling.pipeline.stages.world import WORLD
from darling.pipeline.steps import input_path
from darling.pipeline.tables import INPUTS_PREFIX

STAGES: tuple[Stage, ...] = (
    WORLD,
    WARMUP,
    DATAGEN,
    PAIRS,
    LABELS,
    CLASSIFIER,
    RL,
    EVAL_MATH,
    EVAL_NOVELTY,
    EVAL_CREATIVE,
    COMPARE,
)
STAGE = {stage.name: stage for stage in STAGES}
STAGE_NAMES = tuple(STAGE)


def active_stages(plan: Plan) -> list[Stage]:
    """The stages this run's chain runs, in order (a shared run's plan: its own only)."""
    return [stage for stage in STAGES if stage.runs(plan) and (plan.only is None or stage.name in plan.only)]


@memoised
def blocks(plan: Plan) -> list[Block]:
    """Every block of the chain, in order, after every stage's own check: building them also builds, and so checks,
    every command's config. In a seed's chain a shared stage's block is a comment saying where it ran."""

    def build() -> list[Block]:
        stages = active_stages(plan)
        for stage in stages:
            stage.check(plan)
        return [shared_block(plan, stage) if plan.is_shared(stage.name) else stage.block(plan) for stage in stages]

    return build()


def shared_block(plan: Plan, stage: Stage) -> Block:
    where = f"shared: ran once for every seed, in {plan.shared}"
    return Block(stage.name, where, [f"# {stage.name}: ran once for every seed (see {plan.shared}/commands.sh)"], [])


def check_shared(plan: Plan) -> None:
    """``shared_stages`` are the chain's first stages, and some stage is left for the seeds (one line if not)."""
    names = [stage.name for stage in active_stages(plan)]
    shared = plan.config.shared_stages
    if shared != names[: len(shared)] or len(shared) >= len(names):
        raise UserInputError(
            f"shared_stages must be the chain's first stages, with some left for each seed: this chain's stages are "
            f"{', '.join(names)}; got {', '.join(shared)}"
        )


def input_files(plan: Plan) -> dict[Path, str]:
    """Every file the commands read from RUN/inputs, with its contents: the shipped files a table names
    (``inputs:NAME``), then what each stage writes for its commands."""
    c = plan.config
    files: dict[Path, str] = {}
    for name in TABLES:
        for value in getattr(c, name).values():
            if isinstance(value, str) and value.startswith(INPUTS_PREFIX):
                shipped = value.removeprefix(INPUTS_PREFIX)
                files[input_path(c, shipped)] = INPUT_FILES[shipped]
    for stage in active_stages(plan):
        files.update(stage.inputs(plan))
    return files


def plan_notes(plan: Plan) -> list[str]:
    """What the chain does by design that a reader could mistake for a rescue, said before it starts: each running
    stage's own (``Stage.design_notes``), in chain order."""
    return [note for stage in active_stages(plan) for note in stage.design_notes(plan)]
