"""The pipeline's configuration: one dataclass of every stage's knobs, one subclass per preset (its defaults).

``CpuPipelineConfig`` is the 2-core chain the tests run; ``PaperPipelineConfig`` the paper's GPU recipe.
``build_config(preset, output, **overrides)`` takes a preset and overrides any field by name; a dict field
(``classifier_options``, ``rl_options``) is merged key by key (``"rl_options.floor": 0.1`` works too).

What defines a run's results (everything but ``output``, ``dry_run``, ``threads``, ``keep_checkpoints``) is
its *identity*, recorded in ``RUN/run.json``: a rerun into the same RUN with a different identity is refused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError

PRESET_NAMES = ("cpu", "paper")
# Not part of a run's identity: they change how fast or where a run goes, not what it computes.
NOT_IDENTITY = ("output", "dry_run", "threads", "keep_checkpoints")


@dataclass
class PipelineConfig:
    """Every stage's options. Field names are what ``--set FIELD=VALUE`` takes."""

    output: Path
    preset: str = "cpu"
    dry_run: bool = False  # write commands.sh (and the input files it names), run nothing
    seed: int = 0
    threads: int | None = 1  # torch CPU threads in every in-process stage; 1 is robust on shared cores
    # -- datagen: rollouts --------------------------------------------------------------------------------
    datagen: str = "champ"  # champ: import CHAMP's real responses (4 models) | generate: sample rollout_models
    datagen_problems: str = "champ"  # problems for datagen=generate (file, hub dataset, champ, arithmetic)
    datagen_limit: int | None = 4  # problems: CHAMP problems imported / problems generated for
    rollout_models: list[str] = field(default_factory=list)  # datagen=generate (empty: the paper's generators)
    rollout_engine: str = "hf"
    rollout_n: int = 4
    rollout_max_tokens: int = 256
    rollout_temperature: float = 1.0
    rollout_tensor_parallel: int = 1
    # -- pairs --------------------------------------------------------------------------------------------
    cross_model_only: bool = True
    pairs_per_problem: int = 3
    # -- labels: the LLM judge ----------------------------------------------------------------------------
    judge_model: str = "smollm2"
    judge_engine: str = "hf"
    judge_structured: str = "choice"  # choice: the verdict is exactly [[yes]] or [[no]], so it always parses
    judge_prompt: str = "compact"  # compact: our short prompt (a 135M judge's context) | default: datagen's
    judge_max_tokens: int = 8
    judge_max_chars: int | None = 300  # truncate each solution for a small judge
    judge_limit: int | None = None  # judge the first N pairs
    judge_tensor_parallel: int = 1
    # -- classifier ---------------------------------------------------------------------------------------
    classifier_preset: str = "cpu"
    classifier_steps: int | None = 12  # optimiser steps (None: the preset's schedule)
    classifier_tokens: int | None = 64  # tokens per response (None: the preset's)
    classifier_devices: str | None = None
    classifier_strategy: str | None = None
    classifier_options: dict[str, Any] = field(default_factory=dict)  # any ClassifierTrainConfig field
    min_labels_per_class: int = 8  # fewer judge labels of a class -> mix in NoveltyBench's human pairs
    fallback_pairs: int = 200  # NoveltyBench pairs mixed in (seeded sample of the built-in 1,000)
    # -- rl -----------------------------------------------------------------------------------------------
    rl_preset: str = "cpu"
    rl_steps: int | None = 4  # None: the preset's
    rl_limit: int | None = 32
    rl_max_completion_length: int | None = None  # None: the preset's
    rl_save_steps: int = 2
    rl_options: dict[str, Any] = field(default_factory=dict)  # any RLTrainConfig field
    keep_checkpoints: bool = False  # False: drop rl/checkpoint-* once rl/final is saved (1.6 GB each on CPU)
    base_model: str | None = None  # the policy before RL (None: the rl preset's policy)
    # -- eval math ----------------------------------------------------------------------------------------
    eval_problems: list[str] = field(default_factory=lambda: ["arithmetic"])
    eval_limit: int | None = 8
    eval_n: int = 4
    eval_temperature: float = 0.6
    eval_max_tokens: int = 64
    eval_engine: str = "hf"
    # -- eval novelty -------------------------------------------------------------------------------------
    novelty_limit: int | None = 6  # prompts (of the package's own open-ended prompts)
    novelty_k: int = 4
    novelty_temperature: float = 1.0
    novelty_max_tokens: int = 64
    novelty_engine: str = "hf"

    # -- derived ------------------------------------------------------------------------------------------
    @property
    def run(self) -> Path:
        return Path(self.output).resolve()

    @property
    def needs_gpu(self) -> bool:
        return self.preset == "paper"

    def policy(self) -> str:
        from darling.rl.train import PRESETS

        return self.base_model or self.rl_options.get("policy") or PRESETS[self.rl_preset]["policy"]

    def policy_template(self) -> str:
        from darling.rl.train import CPU_TEMPLATE

        return self.rl_options.get("user_template", CPU_TEMPLATE)

    def check(self) -> PipelineConfig:
        from darling.classifier.config import ClassifierTrainConfig
        from darling.rl.train import PRESETS as RL_PRESETS

        if self.preset not in PRESET_NAMES:
            raise UserInputError(f"unknown preset {self.preset!r}: choose {', '.join(PRESET_NAMES)}")
        if self.datagen not in ("champ", "generate"):
            raise UserInputError(f"datagen must be champ or generate, got {self.datagen!r}")
        if self.classifier_preset not in ClassifierTrainConfig.preset_names():
            raise UserInputError(f"unknown classifier preset {self.classifier_preset!r}")
        if self.rl_preset not in RL_PRESETS:
            raise UserInputError(f"unknown rl preset {self.rl_preset!r}")
        for name in ("rollout_engine", "judge_engine", "eval_engine", "novelty_engine"):
            if getattr(self, name) not in ("hf", "vllm"):
                raise UserInputError(
                    f"{name} must be hf or vllm (engines that run in process), got {getattr(self, name)!r}"
                )
        if self.judge_prompt not in ("compact", "default"):
            raise UserInputError(f"judge_prompt must be compact or default, got {self.judge_prompt!r}")
        if self.judge_structured not in ("none", "choice", "regex"):
            raise UserInputError(f"judge_structured must be none, choice or regex, got {self.judge_structured!r}")
        if self.judge_engine == "hf" and self.judge_structured == "regex":
            raise UserInputError("the hf judge cannot follow a regex: use judge_structured=choice (or a vllm engine)")
        positive = ("pairs_per_problem", "rollout_n", "eval_n", "novelty_k", "eval_max_tokens", "novelty_max_tokens",
                    "judge_max_tokens", "rl_save_steps", "min_labels_per_class")  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise UserInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        optional = ("datagen_limit", "judge_limit", "classifier_steps", "classifier_tokens", "rl_steps", "rl_limit",
                    "eval_limit", "novelty_limit", "rl_max_completion_length", "threads")  # fmt: skip
        for name in optional:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserInputError(f"{name} must be >= 1 (or unset), got {value}")
        if self.fallback_pairs < 0:
            raise UserInputError(f"fallback_pairs must be >= 0, got {self.fallback_pairs}")
        if self.datagen == "generate" and len(self.rollout_models) == 1 and self.cross_model_only:
            raise UserInputError("one rollout model gives no cross-model pairs: --set cross_model_only=false")
        if not self.eval_problems:
            raise UserInputError("eval_problems must name at least one problem set")
        return self

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


@dataclass
class CpuPipelineConfig(PipelineConfig):
    """2 CPU cores, about 10 minutes: CHAMP import -> SmolLM2 judge (hf, choice) -> MiniLM classifier ->
    SmolLM2 DARLING steps on arithmetic -> pass@k before/after -> novelty with the new classifier."""

    preset: str = "cpu"


@dataclass
class PaperPipelineConfig(PipelineConfig):
    """The paper's recipe on GPUs (vLLM everywhere): DeepScaleR rollouts of the paper's generators, the
    Llama-3.3-70B-Instruct judge, the Qwen3-Embedding-4B classifier, TRL paper-math RL, pass@256."""

    preset: str = "paper"
    threads: int | None = None
    datagen: str = "generate"
    datagen_problems: str = "agentica-org/DeepScaleR-Preview-Dataset"
    datagen_limit: int | None = 2000
    rollout_engine: str = "vllm"
    rollout_n: int = 8
    rollout_max_tokens: int = 8192
    rollout_tensor_parallel: int = 8
    pairs_per_problem: int = 8
    judge_model: str = "meta-llama/Llama-3.3-70B-Instruct"
    judge_engine: str = "vllm"
    judge_structured: str = "regex"
    judge_prompt: str = "default"
    judge_max_tokens: int = 1024
    judge_max_chars: int | None = None
    judge_tensor_parallel: int = 4
    classifier_preset: str = "paper"
    classifier_steps: int | None = None
    classifier_tokens: int | None = None
    classifier_devices: str | None = "8"
    classifier_strategy: str | None = "ddp"
    rl_preset: str = "paper-math"
    rl_steps: int | None = None
    rl_limit: int | None = None
    rl_save_steps: int = 50
    keep_checkpoints: bool = True
    eval_problems: list[str] = field(default_factory=lambda: ["HuggingFaceH4/aime_2024", "math-ai/amc23"])
    eval_limit: int | None = None
    eval_n: int = 256
    eval_max_tokens: int = 8192
    eval_engine: str = "vllm"
    novelty_limit: int | None = None
    novelty_k: int = 10
    novelty_max_tokens: int = 1024
    novelty_engine: str = "vllm"


PRESETS: dict[str, type[PipelineConfig]] = {"cpu": CpuPipelineConfig, "paper": PaperPipelineConfig}
_FIELDS = {f.name: f for f in fields(PipelineConfig)}


def to_json(config: PipelineConfig) -> dict[str, Any]:
    values = asdict(config)
    values["output"] = str(config.output)
    return values


def _coerce(name: str, value: Any) -> Any:
    """A CLI string (``--set eval_n=8``) -> the field's type; typed values pass through."""
    kind = str(_FIELDS[name].type)
    if not isinstance(value, str) or kind in ("str", "Path"):
        return value
    text = value.strip()
    try:
        if text.lower() in ("none", "null") and "None" in kind:
            return None
        if kind.startswith("bool"):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if kind.startswith("int"):
            return int(text)
        if kind.startswith("float"):
            return float(text)
        if kind.startswith("list"):
            return [part.strip() for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserInputError(f"option '{name}': cannot read {value!r} as {kind}") from None
    return value


def _option_value(text: Any) -> Any:
    """A value for a dict field entry (``rl_options.floor=0.1``): JSON if it parses, else the string."""
    import json

    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def build_config(preset: str, output: str | Path, **overrides: Any) -> PipelineConfig:
    """The preset's config with ``overrides`` (field name -> value; None values are ignored, so CLI flags
    that were not given pass straight through). ``"rl_options.KEY"`` sets one entry of a dict field."""
    if preset not in PRESETS:
        raise UserInputError(f"unknown preset {preset!r}: choose {', '.join(PRESET_NAMES)}")
    config = PRESETS[preset](output=Path(output))
    for name, value in overrides.items():
        if value is None:
            continue
        base, dot, key = name.partition(".")
        if base not in _FIELDS or base in ("output", "preset"):
            raise UserInputError(f"unknown pipeline option '{name}'")
        current = getattr(config, base)
        if dot:
            if not isinstance(current, dict):
                raise UserInputError(f"option '{base}' is not a table: use {base}=VALUE")
            setattr(config, base, {**current, key: _option_value(value)})
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise UserInputError(f"option '{base}' takes KEY=VALUE entries: use {base}.KEY=VALUE")
            setattr(config, base, {**current, **value})
        else:
            setattr(config, base, _coerce(base, value))
    return config.check()
