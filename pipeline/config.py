"""The pipeline's settings: one dataclass of every stage's knobs (field help in the dataclass); presets are the
data files ``pipeline/presets/cpu.toml`` (the 2-core chain the tests run) and ``paper.toml`` (the paper's GPU
recipe). A dict field (``classifier_options``, ``rl_options``) takes any field of that stage's config and is
merged key by key (``--set rl_options.floor=0.1``).

What defines a run's results (everything but ``output``, ``dry_run``, ``threads``, ``keep_checkpoints``) is
its *identity*, recorded in ``RUN/run.json``: a rerun into the same RUN with a different identity is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from darling.core.config import CommandConfig, option
from darling.core.errors import UserInputError

# Not part of a run's identity: they change how fast or where a run goes, not what it computes.
NOT_IDENTITY = ("output", "dry_run", "threads", "keep_checkpoints")
IN_PROCESS_ENGINES = ("hf", "vllm")
CLASSIFIER_DATA = ("judge", "human")
PIPELINE_PROMPTS = "pipeline"  # novelty_prompts: the six prompts the pipeline writes to RUN/inputs


@dataclass(kw_only=True)
class PipelineConfig(CommandConfig):
    """Settings of ``darling pipeline``; every stage's command is built from them (``pipeline/steps.py``)."""

    PRESET_PACKAGE: ClassVar[str | None] = "darling.pipeline"

    output: Path = option(aliases=("-o",), help="Run folder: one subfolder per stage, report.md, commands.sh.")
    preset: str = option("cpu", flag=False, help="The preset this config came from (set by its file).")
    dry_run: bool = option(False, help="Write RUN/commands.sh (and the inputs it names) and print it; run nothing.")
    seed: int = option(0, help="Seed of every stage.")
    threads: int | None = option(1, help="torch CPU threads in every in-process stage; 1 is robust on shared cores.")
    # -- datagen: rollouts
    datagen: str = option(
        "champ",
        choices=("champ", "generate"),
        help="champ: import CHAMP's real responses (4 models); generate: sample rollout_models.",
    )
    datagen_problems: str = option("champ", help="Problems for datagen=generate (file, hub dataset, set name).")
    datagen_limit: int | None = option(4, help="Problems: CHAMP problems imported, or problems generated for.")
    rollout_models: list[str] = option(factory=list, help="datagen=generate: models (empty: the paper's generators).")
    rollout_engine: str = option("hf", choices=IN_PROCESS_ENGINES, help="Engine of the rollouts.")
    rollout_n: int = option(4, help="Samples per model per problem.")
    rollout_max_tokens: int = option(256, help="Max new tokens per rollout.")
    rollout_temperature: float = option(1.0, help="Rollout temperature.")
    rollout_tensor_parallel: int = option(1, help="vllm: GPUs per generator.")
    # -- pairs
    cross_model_only: bool = option(True, help="Only pairs of two different models.")
    pairs_per_problem: int = option(3, help="At most N pairs per problem.")
    # -- labels: the LLM judge
    judge_model: str = option("smollm2", help="Judge model.")
    judge_engine: str = option("hf", choices=IN_PROCESS_ENGINES, help="Engine of the judge.")
    judge_structured: str = option(
        "choice",
        choices=("none", "choice", "regex"),
        help="choice: the verdict is exactly [[yes]] or [[no]], so it always parses.",
    )
    judge_prompt: str = option(
        "compact",
        choices=("compact", "default"),
        help="compact: a short prompt for a 135M judge's context; default: datagen's.",
    )
    judge_max_tokens: int = option(8, help="Max tokens of a judge answer.")
    judge_max_chars: int | None = option(300, help="Truncate each solution for a small judge.")
    judge_limit: int | None = option(None, help="Judge the first N pairs.")
    judge_tensor_parallel: int = option(1, help="vllm: GPUs for the judge.")
    # -- classifier
    classifier_preset: str = option("cpu", help="train-classifier preset.")
    classifier_steps: int | None = option(12, help="Optimiser steps (none: the preset's schedule).")
    classifier_tokens: int | None = option(64, help="Tokens per response (none: the preset's).")
    classifier_devices: str | None = option(None, help="Lightning devices of train-classifier.")
    classifier_strategy: str | None = option(None, help="Lightning strategy of train-classifier.")
    classifier_options: dict[str, Any] = option(factory=dict, help="Any ClassifierTrainConfig field (key=value).")
    classifier_data: str = option(
        "judge",
        choices=CLASSIFIER_DATA,
        help="judge: the judge's labels (NoveltyBench's human pairs mixed in when the judge gives too few of a "
        "class); human: NoveltyBench's human-labelled pairs by design (the judge stage still runs and its "
        "verdicts are reported).",
    )
    min_labels_per_class: int = option(8, help="Fewer judge labels of a class -> mix in NoveltyBench's human pairs.")
    human_pairs: int = option(
        200,
        help="NoveltyBench human-labelled pairs (a seeded sample of the built-in 1,000): the classifier's data with "
        "classifier_data=human, the mix-in otherwise.",
    )
    # -- rl
    rl_preset: str = option("cpu", help="rl-train preset.")
    rl_steps: int | None = option(4, help="RL optimiser steps (none: the preset's).")
    rl_limit: int | None = option(32, help="RL problems (none: the preset's).")
    rl_max_completion_length: int | None = option(None, help="Max new tokens per RL rollout (none: the preset's).")
    rl_save_steps: int = option(2, help="RL checkpoint interval (steps).")
    rl_options: dict[str, Any] = option(factory=dict, help="Any RLTrainConfig field (key=value).")
    grpo_baseline: bool = option(
        False,
        help="Also train the GRPO baseline (rl-grpo/: the same settings and seeds, quality only) and compare it "
        "with DARLING on the novelty prompts (compare/).",
    )
    keep_checkpoints: bool = option(False, help="Keep rl/checkpoint-* once rl/final is saved (1.6 GB each on CPU).")
    base_model: str | None = option(None, help="The policy before RL (none: the rl preset's policy).")
    # -- eval math
    eval_problems: list[str] = option(factory=lambda: ["arithmetic"], help="Problem sets of eval math (repeatable).")
    eval_limit: int | None = option(8, help="eval math: first N problems of each set.")
    eval_n: int = option(4, help="eval math: samples per problem (pass@k up to n).")
    eval_temperature: float = option(0.6, help="eval math: temperature.")
    eval_max_tokens: int = option(64, help="eval math: max new tokens.")
    eval_engine: str = option("hf", choices=IN_PROCESS_ENGINES, help="Engine of eval math.")
    # -- eval novelty
    novelty_prompts: str = option(
        PIPELINE_PROMPTS,
        help="eval novelty prompts: pipeline (six open-ended prompts, RUN/inputs/novelty-prompts.jsonl), or a "
        "prompt file or packaged set (naming-heldout: 24 naming prompts no RL run trains on).",
    )
    novelty_limit: int | None = option(6, help="eval novelty: first N prompts.")
    novelty_k: int = option(4, help="eval novelty: responses per prompt.")
    novelty_temperature: float = option(1.0, help="eval novelty: temperature.")
    novelty_max_tokens: int = option(64, help="eval novelty: max new tokens.")
    novelty_engine: str = option("hf", choices=IN_PROCESS_ENGINES, help="Engine of eval novelty.")

    # -- derived
    @property
    def run(self) -> Path:
        return Path(self.output).resolve()

    @property
    def needs_gpu(self) -> bool:
        return self.preset == "paper"

    def policy(self) -> str:
        from darling.rl.config import RLTrainConfig

        preset = RLTrainConfig.preset_values(self.rl_preset)
        return self.base_model or self.rl_options.get("policy") or preset.get("policy", "smollm2")

    def policy_template(self) -> str:
        from darling.rl.config import CPU_TEMPLATE

        return self.rl_options.get("user_template", CPU_TEMPLATE)

    def check(self) -> None:
        from darling.classifier.config import ClassifierTrainConfig
        from darling.rl.config import RLTrainConfig

        if self.preset not in self.preset_names():
            raise UserInputError(f"unknown preset {self.preset!r}: choose {', '.join(self.preset_names())}")
        if self.classifier_preset not in ClassifierTrainConfig.preset_names():
            raise UserInputError(f"unknown classifier preset {self.classifier_preset!r}")
        if self.rl_preset not in RLTrainConfig.preset_names():
            raise UserInputError(f"unknown rl preset {self.rl_preset!r}")
        if self.judge_engine == "hf" and self.judge_structured == "regex":
            raise UserInputError("the hf judge cannot follow a regex: use judge_structured=choice (or a vllm engine)")
        positive = (
            "pairs_per_problem",
            "rollout_n",
            "eval_n",
            "novelty_k",
            "eval_max_tokens",
            "novelty_max_tokens",
            "judge_max_tokens",
            "rl_save_steps",
            "min_labels_per_class",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise UserInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        optional = (
            "datagen_limit",
            "judge_limit",
            "classifier_steps",
            "classifier_tokens",
            "rl_steps",
            "rl_limit",
            "eval_limit",
            "novelty_limit",
            "rl_max_completion_length",
            "threads",
        )
        for name in optional:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserInputError(f"{name} must be >= 1 (or unset), got {value}")
        if self.human_pairs < 0:
            raise UserInputError(f"human_pairs must be >= 0, got {self.human_pairs}")
        if self.classifier_data == "human" and self.human_pairs < 40:
            raise UserInputError(f"classifier_data=human needs human_pairs >= 40, got {self.human_pairs}")
        if self.datagen == "generate" and len(self.rollout_models) == 1 and self.cross_model_only:
            raise UserInputError("one rollout model gives no cross-model pairs: --no-cross-model-only")
        if not self.eval_problems:
            raise UserInputError("eval_problems must name at least one problem set")

    def identity(self) -> dict[str, Any]:
        """Flat ``{field: value}`` (dict fields as ``field.key``) of what defines the results, preset first."""
        values = {k: v for k, v in to_json(self).items() if k not in NOT_IDENTITY}
        flat: dict[str, Any] = {"preset": values.pop("preset")}
        for name, value in values.items():
            if isinstance(value, dict):
                flat.update({f"{name}.{k}": v for k, v in sorted(value.items())})
            else:
                flat[name] = value
        return flat


def to_json(config: PipelineConfig) -> dict[str, Any]:
    return json.loads(json.dumps(config.to_dict(), default=str))


def build_config(preset: str, output: str | Path, **overrides: Any) -> PipelineConfig:
    """The preset's config with ``overrides`` (field name -> value, ``"rl_options.KEY"`` for one entry of a dict
    field); None values are skipped, so unset options keep the preset's value."""
    values = {k: v for k, v in overrides.items() if v is not None}
    for name in ("preset", "output"):
        if name in values:
            raise UserInputError(f"unknown pipeline option '{name}'")
    return PipelineConfig.build(preset, overrides={"output": output, **values})
