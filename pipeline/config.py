"""The pipeline's settings: a few chain-level fields, and one table per stage holding that stage's own settings,
the fields of its command's config (each room's ``Stage.tables``: ``[rl]`` takes ``RLTrainConfig``'s, ``[classifier]``
``ClassifierTrainConfig``'s, ...), with ``preset`` naming that command's preset. A value is set in one place: what
the chain wires between stages (output folders, the classifier a stage reads, the seed, CPU threads) is the
pipeline's and refused in a table. Presets are data files (``pipeline/presets/*.toml``); ``--set rl.max_steps=32``
sets one entry of a table.

A table value ``"inputs:NAME"`` names a file the pipeline ships and writes to ``RUN/inputs/NAME`` (the compact
judge prompt, the six toy novelty prompts). What defines a run's results (everything but where and how fast it
runs) is its *identity*, recorded in ``RUN/run.json``: a rerun into the same RUN with another identity is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from darling.core.checkers import CHECKER_NAMES
from darling.core.config import NOT_IDENTITY, CommandConfig, option
from darling.core.errors import UserInputError
from darling.pipeline.schema import TABLES, StageTables
from darling.pipeline.tables import checked_table
from darling.rl.methods import OTHER_ARMS

ACCELERATE_CONFIGS = ("deepspeed-zero3", "multi-gpu", "multi-cpu")


# The --help panels of PipelineConfig, essentials first.
CHAIN_PANEL = "The chain"
RESOURCES_PANEL = "Processes and devices"
CLUSTER_PANEL = "Clusters (--launcher slurm | ray)"


@dataclass(kw_only=True, frozen=True)
class PipelineConfig(CommandConfig, StageTables):
    """Settings of ``darling pipeline``: chain-level fields, and one table per stage (``darling.pipeline.schema``)."""

    PRESET_PACKAGE: ClassVar[str | None] = "darling.pipeline"

    output: Path = option(
        aliases=("-o",),
        help="Run folder: one subfolder per stage, report.md, commands.sh.",
        panel=CHAIN_PANEL,
        meta=NOT_IDENTITY,
    )
    preset: str = option("cpu", flag=False, help="The preset this config came from (set by its file).")
    about: str = option(
        "", flag=False, help="What the preset runs on, in a sentence or two (commands.sh, report).", meta=NOT_IDENTITY
    )
    requires_cuda: bool = option(
        False, flag=False, help="The chain needs CUDA GPUs: on a machine without, only commands.sh is written."
    )
    dry_run: bool = option(
        False,
        help="Write RUN/commands.sh (and the inputs it names) and print it; run nothing.",
        panel=CHAIN_PANEL,
        meta=NOT_IDENTITY,
    )
    seed: int = option(0, help="Seed of every stage.", panel=CHAIN_PANEL)
    seeds: list[int] = option(
        factory=list,
        help="A study: the whole chain once per seed (RUN/seed-S, each its own resumable run), then `eval study` "
        "pools DARLING minus GRPO over prompts and seeds (RUN/study). E.g. --seeds 1,2,3.",
        panel=CHAIN_PANEL,
        meta=NOT_IDENTITY,
    )
    threads: int | None = option(
        1,
        help="CPU threads of every command (torch's, the hf engine's); none: their own.",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    jobs: int = option(
        1,
        help="Commands of one stage run side by side (the two RL runs, one evaluation per model): 2 on 2 cores.",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    gpu_memory_per_process: float | None = option(
        None,
        help="GiB one side-by-side GPU command peaks at (as measured: stages.json gpu_memory); with the card's memory "
        "it caps the commands at once (seed_jobs, then jobs cut to fit 90% of it). none: no cap.",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    gpu_memory: float | None = option(
        None,
        help="GiB of the card to plan for with gpu_memory_per_process (default: the card found; e.g. 80 with "
        "--dry-run writes an 80 GB H100's commands.sh on a machine without one).",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    seed_jobs: int = option(
        1,
        help="With --seeds: the seeds' chains run side by side, this many at once (one GPU holds 6: gpu-compare).",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    rollouts_from: str = option(
        "champ",
        choices=("champ", "generate", "policy", "none"),
        help="champ: import CHAMP's real responses (4 models); generate: sample the [datagen] generators; policy: the "
        "RL start policy's own answers to the RL prompts (the paper's chain; the warm-up's policy when there is "
        "one); none: no rollouts, pairs or labels (the chat track: the classifier trains on human pairs, or is "
        "imported).",
        panel=CHAIN_PANEL,
    )
    rollout_temperatures: list[float] = option(
        factory=list,
        help="rollouts_from = policy: the start policy sampled at each of these temperatures, each a generator of its "
        "own in the rollouts (the paper's rollouts come from several models; here one policy at several "
        "temperatures), e.g. [0.7, 1.0]; empty: the RL runs' temperature alone.",
        panel=CHAIN_PANEL,
    )
    shared_stages: list[str] = option(
        factory=list,
        help="With --seeds: these first stages of the chain run once, into RUN/shared with the chain's --seed, and "
        "every seed's chain reads them (RUN/seed-S/<stage> links there), so a seed covers only the later stages' "
        "draws; e.g. world, datagen, pairs, labels, classifier: one world, policy and classifier, seeds over RL and "
        "evaluation. Empty, or without --seeds: every stage runs in RUN.",
        panel=CHAIN_PANEL,
    )
    checker: str | None = option(
        None,
        choices=CHECKER_NAMES,
        help="The task's checker, a rule reading each answer's key (items: the member an item prompt's answer "
        "names): pairs and labels by it ([labels] judge_model, if set, is scored against it), the checker-ceiling "
        "arm's partition, and `eval partitions` of every policy's answers.",
        panel=CHAIN_PANEL,
    )
    classifier_from: str = option(
        "train",
        choices=("train", "import"),
        help="train: train-classifier on the training pairs; import: import-classifier ([import_classifier] source, "
        "format), e.g. a released classifier.",
        panel=CHAIN_PANEL,
    )
    grpo_baseline: bool = option(
        True,
        help="Also train the GRPO baseline (rl-grpo/: [rl] with quality only, plus [rl_grpo]) and compare it with "
        "DARLING and the base policy (compare/).",
        panel=CHAIN_PANEL,
    )
    arms: list[str] = option(
        factory=list,
        help=f"More rl-train methods trained beside DARLING and GRPO ({', '.join(OTHER_ARMS)}), each in "
        "rl-METHOD/ from the same start with the same settings and seeds ([rl] plus [rl_arms]), evaluated like "
        "them and compared with both. E.g. --arms darling-ngram --arms passk.",
        panel=CHAIN_PANEL,
    )
    keep_checkpoints: bool = option(
        False, help="Keep rl*/checkpoint-* once rl*/final is saved.", panel=CHAIN_PANEL, meta=NOT_IDENTITY
    )
    serve_classifier: bool = option(
        False,
        help="RL scores with the classifier served by `serve-classifier` ([serve]), not in each process.",
        panel=RESOURCES_PANEL,
    )
    serve_reward_model: bool = option(
        False,
        help="RL and eval novelty score quality with [rl] reward_model served by `serve-reward-model` "
        "([serve_reward]), not in each process.",
        panel=RESOURCES_PANEL,
    )
    evaluate_training_prompts: bool = option(
        False,
        help="eval novelty also on the RL prompts (eval-novelty-train/, compare-train/): what DARLING's reward "
        "targets; the held-out prompts (eval-novelty/) show whether it carries to prompts neither run saw.",
        panel=CHAIN_PANEL,
    )
    evaluate_math: bool = option(
        True, help="Run eval-math (pass@k before/after RL); the chat track has none.", panel=CHAIN_PANEL
    )
    evaluate_creative: bool = option(
        False,
        help="Run eval-creative (EQ-Bench creative writing v3 rubric; [eval_creative] bench_dir is yours).",
        panel=CHAIN_PANEL,
    )
    rl_engine: str = option(
        "trl",
        choices=("trl", "verl"),
        help="trl: each RL run is `rl-train` on TRL (under rl_accelerate); verl: `rl-train --engine verl`, verl's "
        "main_ppo on rl_processes GPUs (rl_gpus) with darling's agent-loop manager (verl >= 0.7.1 on the node; "
        "math quality; rl_accelerate unused).",
        panel=RESOURCES_PANEL,
    )
    rl_processes: int = option(
        1,
        help="Processes of each RL run (`accelerate launch --num_processes`); rl_engine verl: its GPUs per node.",
        panel=RESOURCES_PANEL,
    )
    rl_accelerate: str | None = option(
        None,
        choices=ACCELERATE_CONFIGS,
        help="The accelerate config RL launches with (RUN/inputs/accelerate.yaml): deepspeed-zero3 (GPUs), "
        "multi-gpu (DDP), multi-cpu (gloo); none: the plain command.",
        panel=RESOURCES_PANEL,
    )
    rl_gpus: str | None = option(
        None,
        help="CUDA_VISIBLE_DEVICES of the RL runs (e.g. 0,1,2,3,4,5); none: unset.",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    trl_vllm_gpus: str | None = option(
        None,
        help="With [rl] vllm_mode = server: the GPUs of `trl vllm-serve` (CUDA_VISIBLE_DEVICES).",
        panel=RESOURCES_PANEL,
        meta=NOT_IDENTITY,
    )
    launcher: str = option(
        "local",
        choices=("local", "slurm", "ray"),
        help="local: run the chain here; slurm: also write RUN/slurm/ (an sbatch script per stage, submit.sh chaining "
        "them) and run nothing; ray: generate with --engine ray --ray-address auto and write RUN/ray/submit.sh (the "
        "chain as one Ray job) and run nothing.",
        panel=CLUSTER_PANEL,
        meta=NOT_IDENTITY,
    )
    nodes: int = option(
        1,
        help="slurm: nodes of the training jobs (classifier, RL); other stages use one.",
        panel=CLUSTER_PANEL,
        meta=NOT_IDENTITY,
    )
    gpus_per_node: int = option(
        8,
        help="slurm: GPUs per node (#SBATCH --gpus-per-node) of the GPU stages.",
        panel=CLUSTER_PANEL,
        meta=NOT_IDENTITY,
    )
    slurm: dict[str, Any] = option(
        factory=dict,
        flag=False,
        help="slurm: more #SBATCH options for every job, e.g. --set slurm.partition=gpu --set slurm.time=48:00:00.",
        meta=NOT_IDENTITY,
    )

    @property
    def run(self) -> Path:
        return Path(self.output).resolve()

    def __post_init__(self) -> None:
        """The tables read as their fields' types (an unknown key refused); then the checks, which change nothing.
        What one stage's table needs of another's is its room's check (``Stage.check``), run when the chain's plan
        is built."""
        for name, section in TABLES.items():
            object.__setattr__(self, name, checked_table(name, section, getattr(self, name)))  # frozen: while made
        super().__post_init__()

    def check(self) -> None:
        if self.preset not in self.preset_names():
            raise UserInputError(f"unknown preset {self.preset!r}: choose {', '.join(self.preset_names())}")
        if self.seeds and (len(set(self.seeds)) < 2 or len(set(self.seeds)) != len(self.seeds)):
            raise UserInputError(f"seeds: give at least two different seeds, got {self.seeds}")
        if self.seeds and not self.grpo_baseline:
            raise UserInputError("seeds: a study pools DARLING minus GRPO, so it needs grpo_baseline")
        unknown = [arm for arm in self.arms if arm not in OTHER_ARMS]
        if unknown or len(set(self.arms)) != len(self.arms):
            raise UserInputError(
                f"arms: give each of {', '.join(OTHER_ARMS)} at most once (DARLING and GRPO always train), got "
                f"{', '.join(self.arms)}"
            )
        if self.arms and not self.grpo_baseline:
            raise UserInputError("arms: each arm is compared with GRPO and with DARLING, so it needs grpo_baseline")
        if self.rl_arms and not self.arms:
            raise UserInputError("[rl_arms] sets the other arms' settings: name them with arms (e.g. --arms passk)")
        for name in ("gpu_memory_per_process", "gpu_memory"):
            if (getattr(self, name) or 1) <= 0:
                raise UserInputError(f"{name} must be a positive number of GiB, got {getattr(self, name)}")
        if self.nodes < 1 or self.gpus_per_node < 0:
            raise UserInputError(f"nodes must be >= 1 and gpus_per_node >= 0, got {self.nodes}, {self.gpus_per_node}")
        if self.jobs < 1 or self.rl_processes < 1 or self.seed_jobs < 1:
            raise UserInputError(
                f"jobs, seed_jobs and rl_processes must be >= 1, got {self.jobs}, {self.seed_jobs}, {self.rl_processes}"
            )
        if self.rollout_temperatures and self.rollouts_from != "policy":
            raise UserInputError("rollout_temperatures samples the start policy: set rollouts_from = policy")
        if any(t < 0 for t in self.rollout_temperatures):
            raise UserInputError(f"rollout_temperatures must be >= 0, got {self.rollout_temperatures}")
        if self.checker is not None and self.rollouts_from not in ("policy", "none"):
            raise UserInputError(
                f"checker = {self.checker} reads keys off the task's own answers: set rollouts_from = policy (or none)"
            )

    def rl_reward_model(self) -> str | None:
        """``[rl] reward_model``, or its preset's: the model serve-reward-model serves."""
        value = resolved(self.rl, TABLES["rl"].config, "reward_model")
        return str(value) if value else None

    def identity(self) -> dict[str, Any]:
        """Flat ``{field: value}`` (table entries as ``table.key``) of what defines the results, preset first. A field
        marked ``identity: False`` (here, or in a table's command config) is left out: it may change between reruns
        (a gate such as the classifier's floor, the number of side-by-side commands)."""
        skipped = {f.name for f in fields(self) if f.metadata.get("identity") is False}
        values = {k: v for k, v in to_json(self).items() if k not in skipped}
        flat: dict[str, Any] = {"preset": values.pop("preset")}
        for name, value in values.items():
            if isinstance(value, dict):
                free = not_identity(TABLES[name].config) if name in TABLES else set()
                flat.update({f"{name}.{k}": v for k, v in sorted(value.items()) if k not in free})
            elif value == []:  # like an empty table, it sets nothing: a run made before such a field existed resumes
                continue
            else:
                flat[name] = value
        return flat


def not_identity(config: type[CommandConfig]) -> set[str]:
    """A command config's fields that do not define a run's results (``meta={"identity": False}``)."""
    return {f.name for f in fields(config) if f.metadata.get("identity") is False}


def resolved(table: dict[str, Any], config: type[CommandConfig], key: str) -> Any:
    """``key`` as the stage's command will have it: the table's entry, else its preset's, else the field's default."""
    if key in table:
        return table[key]
    preset = table.get("preset")
    values = config.preset_values(preset) if preset else {}
    return values[key] if key in values else next(f.default for f in fields(config) if f.name == key)


def to_json(config: PipelineConfig) -> dict[str, Any]:
    return json.loads(json.dumps(config.to_dict(), default=str))


def build_config(preset: str, output: str | Path, **overrides: Any) -> PipelineConfig:
    """The preset's config with ``overrides`` (field name -> value, ``"rl.KEY"`` for one entry of a stage's table);
    None values are skipped, so unset options keep the preset's value."""
    values = {k: v for k, v in overrides.items() if v is not None}
    for name in ("preset", "output"):
        if name in values:
            raise UserInputError(f"unknown pipeline option '{name}'")
    return PipelineConfig.build(preset, overrides={"output": output, **values})
