"""The stage tables of ``darling pipeline``, each declared once: a field (its help) of ``StageTables``, which
``PipelineConfig`` derives from, with its ``Section`` (the command's settings class, the keys the pipeline wires,
refused in the table and the only ones a step may wire, and the pipeline's own keys). A stage's room names the tables
it reads (``Stage.tables``); ``TABLES`` holds them all, in chain order. Imports run one way: ``tables`` <- this
module <- the config <- the rooms, so the config never imports a room.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from darling.classifier.config import ClassifierTrainConfig, ServeConfig, TrainingPairsConfig
from darling.classifier.import_classifier import ImportConfig
from darling.core.config import NOT_IDENTITY, option
from darling.datagen.config import JudgeConfig, PairConfig, RolloutConfig
from darling.evals.config import CompareConfig, MathEvalConfig, NoveltyConfig
from darling.evals.creative_config import CreativeConfig
from darling.pipeline.tables import SECTION, Section
from darling.rl.config import RLTrainConfig
from darling.rl.serve_config import RewardServeConfig
from darling.world.config import PretrainConfig, WorldCorpusConfig

# The rl-train options the pipeline sets for every run (refused in the rl tables): where it writes, what scores it
# (the classifier, a checker arm's checker), its seed, threads and method; where it is served and runs.
RL_WIRED = ("output", "classifier", "seed", "threads", "method", "prune_checkpoints", "checker") + (
    ("classifier_urls", "reward_model_urls", "engine", "verl_gpus", "verl_nodes")
)


def table(section: Section, help_text: str, meta: dict[str, Any] | None = None) -> Any:
    """A stage table: a field of command settings (``--set NAME.KEY=VALUE``), its ``Section`` in its metadata."""
    return option(factory=dict, flag=False, help=help_text, meta={SECTION: section, **(meta or {})})


@dataclass(kw_only=True, frozen=True)
class StageTables:
    """One table per stage command (``[rl]``, ``--set rl.max_steps=32``), each with its ``Section``."""

    world: dict[str, Any] = table(
        Section(WorldCorpusConfig, ("output",), command="world corpus: the world's pretraining corpus"),
        "The world's corpus (world/corpus/: WorldCorpusConfig fields, e.g. wording): the chain's policy is then born "
        "in the world ([pretrain]) and every RL run starts from it; empty: no world, the policy is [rl]'s.",
    )
    pretrain: dict[str, Any] = table(
        Section(PretrainConfig, ("corpus", "output", "threads"), command="world pretrain: the policy born in it"),
        "world pretrain settings, with [world] (PretrainConfig fields: the policy's size, steps, learning rate).",
    )
    rl_warmup: dict[str, Any] = table(
        Section(RLTrainConfig, (*RL_WIRED, "policy"), command="rl-train: a GRPO warm-up every RL run starts from"),
        "A GRPO warm-up every RL run starts from (rl-warmup/: [rl] plus these RLTrainConfig fields, e.g. max_steps); "
        "empty: no warm-up, every run starts from [rl] policy.",
    )
    datagen: dict[str, Any] = table(
        Section(
            RolloutConfig, ("output", "seed", "threads", "specs", "model"), ("generators",), "datagen rollouts", True
        ),
        "datagen rollouts settings (RolloutConfig fields; generators = a list of tables).",
    )
    pairs: dict[str, Any] = table(
        Section(PairConfig, ("rollouts", "output", "seed", "workers", "checker"), command="datagen pairs"),
        "datagen pairs settings (PairConfig fields).",
    )
    labels: dict[str, Any] = table(
        Section(
            JudgeConfig, ("pairs", "output", "seed", "threads", "checker"), command="datagen label", generates=True
        ),
        "datagen label settings (JudgeConfig fields).",
    )
    training_pairs: dict[str, Any] = table(
        Section(TrainingPairsConfig, ("labels", "output", "seed"), command="datagen training-pairs"),
        "datagen training-pairs settings (TrainingPairsConfig fields).",
    )
    classifier: dict[str, Any] = table(
        Section(ClassifierTrainConfig, ("seed", "threads", "num_nodes"), ("preset",), "train-classifier"),
        "train-classifier settings (ClassifierTrainConfig fields; preset).",
    )
    import_classifier: dict[str, Any] = table(
        Section(ImportConfig, (), ("source",), "import-classifier"),
        "import-classifier settings, with classifier_from = import (source, ImportConfig fields).",
    )
    serve: dict[str, Any] = table(
        Section(ServeConfig, ("model", "ready_file", "exit_after_check"), command="serve-classifier"),
        "serve-classifier settings, with serve_classifier (ServeConfig fields).",
        meta=NOT_IDENTITY,
    )
    serve_reward: dict[str, Any] = table(
        Section(RewardServeConfig, ("model", "ready_file", "exit_after_check"), command="serve-reward-model"),
        "serve-reward-model settings, with serve_reward_model (RewardServeConfig fields).",
    )
    rl: dict[str, Any] = table(
        Section(RLTrainConfig, RL_WIRED, ("preset",), "rl-train, both runs"),
        "rl-train settings of both RL runs (RLTrainConfig fields; preset).",
    )
    rl_grpo: dict[str, Any] = table(
        Section(RLTrainConfig, RL_WIRED, command="rl-train: what the GRPO baseline sets differently"),
        "rl-train settings only the GRPO baseline changes (RLTrainConfig fields).",
    )
    rl_arms: dict[str, Any] = table(
        Section(RLTrainConfig, RL_WIRED, command="rl-train: what the other arms add (each reads its own)"),
        "rl-train settings of the other arms (RLTrainConfig fields); an arm's own (entropy_coef, passk_k, ngram_n, "
        "ngram_threshold) reach that arm only.",
    )
    eval_math: dict[str, Any] = table(
        Section(
            MathEvalConfig,
            ("output", "generators", "specs", "model", "seed", "paired_seeds", "threads"),
            command="eval math",
            generates=True,
        ),
        "eval math settings (MathEvalConfig fields).",
    )
    eval_novelty: dict[str, Any] = table(
        Section(
            NoveltyConfig,
            ("output", "model", "classifier", "seed", "threads", "reward_model_urls"),
            command="eval novelty",
            generates=True,
        ),
        "eval novelty settings (NoveltyConfig fields).",
    )
    eval_creative: dict[str, Any] = table(
        Section(
            CreativeConfig, ("output", "model", "seed", "threads", "versus"), command="eval creative", generates=True
        ),
        "eval creative settings (CreativeConfig fields; bench_dir, judge_model).",
    )
    compare: dict[str, Any] = table(
        Section(CompareConfig, ("output", "novelty", "math", "training", "pairs", "seed"), command="eval compare"),
        "eval compare settings (CompareConfig fields).",
    )


TABLES: dict[str, Section] = {f.name: f.metadata[SECTION] for f in fields(StageTables)}
