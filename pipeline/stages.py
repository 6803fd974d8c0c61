"""The chain's stages, each defined once. A ``Stage`` record holds everything the pipeline does per stage: its name
(its folder under RUN, its block in ``commands.sh``, its record in ``stages.json``, its table in a preset with ``-``
as ``_``), whether a config runs it, how its block of commands is built, what its summary reads, how its section of
``report.md`` renders it and where a cluster launcher places it. ``commands.sh``, the runner, the report and the
SLURM jobs are derived from ``STAGES``: adding a stage is one record here plus its block, summary and section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from darling.pipeline import summaries
from darling.pipeline.commands_sh import (
    StageCommands,
    classifier_block,
    compare_block,
    datagen_block,
    eval_creative_block,
    eval_math_block,
    eval_novelty_block,
    labels_block,
    pairs_block,
    rl_block,
)
from darling.pipeline.config import PipelineConfig
from darling.pipeline.report_sections import (
    classifier_section,
    compare_section,
    creative_section,
    datagen_section,
    eval_math_section,
    eval_novelty_section,
    labels_section,
    pairs_section,
    policy_note,
    rl_section,
)

Records = dict[str, dict[str, Any]]
# Where a cluster launcher runs a stage: on CPU only (math-verify, tables), on one node's devices, or on every node
# (the training stages: torchrun / accelerate across nodes).
Placement = Literal["cpu", "node", "nodes"]


def _always(config: PipelineConfig) -> bool:
    return True


def _with_rollouts(config: PipelineConfig) -> bool:
    return config.rollouts_from != "none"  # the chat track: no rollouts, pairs or labels


def _no_note(records: Records) -> list[str]:
    return []


@dataclass(frozen=True)
class Stage:
    name: str
    title: str  # of its report section, numbered there within the chain that runs
    block: Callable[[PipelineConfig], StageCommands]
    summary: Callable[[PipelineConfig], dict[str, Any]]
    section: Callable[[dict[str, Any]], list[str]]
    links: tuple[tuple[str, str], ...] = ()  # (text, path under RUN) shown under the section's title
    placement: Placement = "node"
    runs: Callable[[PipelineConfig], bool] = _always
    note: Callable[[Records], list[str]] = _no_note  # a line citing another stage's figures, after the section

    @property
    def table(self) -> str:
        """Its table in a preset and in ``--set TABLE.KEY=VALUE``."""
        return self.name.replace("-", "_")

    def render(self, summary: dict[str, Any], records: Records) -> list[str]:
        return [*self.section(summary), *self.note(records)]


STAGES: tuple[Stage, ...] = (
    Stage(
        "datagen", "Data generation: rollouts", datagen_block, summaries.datagen, datagen_section, runs=_with_rollouts
    ),
    Stage(
        "pairs",
        "Same-answer pairs",
        pairs_block,
        summaries.pairs,
        pairs_section,
        links=(("summary.json", "pairs/summary.json"),),
        placement="cpu",
        runs=_with_rollouts,
    ),
    Stage("labels", "Judge labels", labels_block, summaries.labels, labels_section, runs=_with_rollouts),
    Stage(
        "classifier",
        "Equivalence classifier: train, calibrate, export",
        classifier_block,
        summaries.classifier,
        classifier_section,
        placement="nodes",
        links=(
            ("validation metrics", "classifier/training/validation/metrics.json"),
            ("model card", "classifier/README.md"),
        ),
    ),
    Stage("rl", "RL: DARLING, and the GRPO baseline beside it", rl_block, summaries.rl, rl_section, placement="nodes"),
    Stage(
        "eval-math",
        "Math before/after RL: pass@k",
        eval_math_block,
        summaries.eval_math,
        eval_math_section,
        runs=lambda c: c.evaluate_math,
        note=policy_note,
    ),
    Stage(
        "eval-novelty",
        "Novelty (NoveltyBench-style distinct / utility)",
        eval_novelty_block,
        summaries.eval_novelty,
        eval_novelty_section,
    ),
    Stage(
        "eval-creative",
        "Creative writing (EQ-Bench v3 rubric)",
        eval_creative_block,
        summaries.eval_creative,
        creative_section,
        runs=lambda c: c.evaluate_creative,
    ),
    Stage(
        "compare",
        "DARLING against GRPO and the base policy",
        compare_block,
        summaries.compare,
        compare_section,
        placement="cpu",
    ),
)
STAGE = {stage.name: stage for stage in STAGES}
STAGE_NAMES = tuple(STAGE)


def active_stages(config: PipelineConfig) -> list[Stage]:
    """The stages this config's chain runs, in order."""
    return [stage for stage in STAGES if stage.runs(config)]


def stage_commands(config: PipelineConfig) -> list[StageCommands]:
    """Every block of the chain, in order: building them also builds, and so checks, every command's config."""
    return [stage.block(config) for stage in active_stages(config)]
