"""``darling rl-train``: TRL's GRPOTrainer with the DARLING reward as one group-aware reward function.

The paper's choices are the defaults: rewards centred per group without std scaling
(``scale_rewards="none"``, Eq. 6), no KL term (``beta=0``), a length-unbiased loss (``dr_grpo``).
``diversity=False`` runs the GRPO baseline with identical settings (quality only, no classifier calls).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.rl.reward import NORMS, DarlingConfig

SETTINGS_FILE = "darling-rl.json"
# What a resumed run may change: where it writes, how far it goes, where the classifier is served, CPU threads.
# Anything else (policy, data, reward, sampling, optimiser) would silently continue a different experiment.
RESUME_MAY_CHANGE = frozenset({"output", "max_steps", "classifier_urls", "threads", "save_steps"})

CPU_TEMPLATE = "{problem}\n\nGive a short answer and put the final answer within \\boxed{}."
PRESETS: dict[str, dict[str, Any]] = {
    # 2 cores: the packaged SmolLM2-135M-Instruct, 4 samples per prompt, short completions, a few steps.
    "cpu": dict(policy="smollm2", problems="arithmetic", limit=32, num_generations=4, per_device_train_batch_size=4,
                max_completion_length=64, temperature=0.7, learning_rate=1e-6, max_steps=4, use_cpu=True, bf16=False,
                threads=1),
    # The paper's math runs (GPU only): Qwen3-4B-Base, n=8, lr 1e-6, long completions, vLLM generation in TRL.
    "paper-math": dict(policy="Qwen/Qwen3-4B-Base", problems="agentica-org/DeepScaleR-Preview-Dataset", limit=None,
                       num_generations=8, per_device_train_batch_size=8, gradient_accumulation_steps=4,
                       max_completion_length=8192, learning_rate=1e-6, max_steps=500, use_cpu=False, bf16=True,
                       use_vllm=True, vllm_mode="colocate", threads=None, save_steps=50),
}  # fmt: skip


@dataclass
class RLTrainConfig:
    output: Path
    policy: str = "smollm2"
    classifier: Path | None = None  # exported classifier (train-classifier); needed unless diversity is off
    classifier_urls: list[str] = field(default_factory=list)  # vLLM replicas serving it; empty: in-process
    classifier_threshold: float | None = None  # override the exported decision threshold
    reward_model: Path | None = None  # quality from a one-output reward model; default: math-verify correctness
    problems: str = "champ"
    limit: int | None = 32
    user_template: str = CPU_TEMPLATE
    diversity: bool = True  # False: the GRPO baseline (quality only)
    combine: str = "multiply"  # multiply (paper, Eq. 5) | add (ablation); quality-only is diversity=False
    norm: str = "identity"  # Norm() of Eq. 5: identity (Eq. 4 is already in [0, 1]) | minmax within the group
    correct_only: bool = False
    floor: float = 0.0
    num_generations: int = 4
    per_device_train_batch_size: int = 4
    steps_per_generation: int | None = None
    gradient_accumulation_steps: int = 1
    max_completion_length: int = 64
    temperature: float = 1.0
    learning_rate: float = 1e-6
    max_steps: int = 4
    loss_type: str = "dr_grpo"
    beta: float = 0.0
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    bf16: bool = False
    use_cpu: bool = True
    save_steps: int = 1
    seed: int = 0
    threads: int | None = 1

    def check(self) -> None:
        if self.diversity and self.classifier is None:
            raise UserInputError("the DARLING reward needs --classifier (an exported classifier), or --diversity off")
        if self.combine not in ("multiply", "add"):
            raise UserInputError(
                f"combine must be multiply or add, got {self.combine!r} (quality only: --diversity off)"
            )
        if self.norm not in NORMS:
            raise UserInputError(f"norm must be one of {', '.join(NORMS)}, got {self.norm!r}")
        if not 0.0 <= self.floor <= 1.0:
            raise UserInputError(f"floor must be in [0, 1], got {self.floor}")
        per_process = self.per_device_train_batch_size * (self.steps_per_generation or self.gradient_accumulation_steps)
        if per_process % self.num_generations:
            # TRL scores each process's slice of the generation batch; a group split across two slices would be
            # partitioned in two halves.
            raise UserInputError(
                f"per-device batch x steps per generation = {per_process} must be a multiple of "
                f"num_generations = {self.num_generations}, so that no prompt's group is split across processes"
            )

    def darling(self) -> DarlingConfig:
        """The reward's settings (Eq. 4-5); the GRPO baseline combines nothing: quality only."""
        return DarlingConfig(combine=self.combine if self.diversity else "quality", norm=self.norm,
                             correct_only=self.correct_only, floor=self.floor)  # fmt: skip


def build_config(preset: str, **overrides: Any) -> RLTrainConfig:
    if preset not in PRESETS:
        raise UserInputError(f"unknown preset {preset!r}: choose {', '.join(PRESETS)}")
    known = {f.name for f in fields(RLTrainConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise UserInputError(f"unknown option {sorted(unknown)[0]!r}")
    values = {**PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
    return RLTrainConfig(**values)


def build_dataset(config: RLTrainConfig):
    from datasets import Dataset

    from darling.datagen.problems import load_problems

    problems = [p for p in load_problems(config.problems, limit=config.limit) if p.reference_answer is not None]
    if not problems:
        raise UserInputError(f"{config.problems}: no problems with a reference answer")
    rows = [{"prompt": [{"role": "user", "content": config.user_template.replace("{problem}", p.problem)}],
             "answer": p.reference_answer, "problem_id": p.problem_id} for p in problems]  # fmt: skip
    return Dataset.from_list(rows)


def build_scorer(config: RLTrainConfig):
    """The in-process or vLLM-served classifier, either kind (None for the GRPO baseline)."""
    if not config.diversity:
        return None
    from darling.classifier.loading import load_scorer

    return load_scorer(config.classifier, config.classifier_urls, threshold=config.classifier_threshold)


def build_trainer(config: RLTrainConfig, dataset=None):
    """A ready ``GRPOTrainer`` whose only reward function is the DARLING reward (``trainer.darling_reward``)."""
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from darling.core.local_models import resolve_model
    from darling.rl.trl_reward import DarlingRewardFunction, RewardModelQuality, answer_quality

    config.check()
    if config.threads:
        torch.set_num_threads(config.threads)
    dataset = dataset if dataset is not None else build_dataset(config)
    quality = RewardModelQuality(str(config.reward_model)) if config.reward_model else answer_quality
    reward = DarlingRewardFunction(config.num_generations, build_scorer(config), config.darling(), quality)
    args = GRPOConfig(
        output_dir=str(config.output),
        per_device_train_batch_size=config.per_device_train_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        steps_per_generation=config.steps_per_generation,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        learning_rate=config.learning_rate,
        max_steps=config.max_steps,
        scale_rewards="none",  # Eq. 6: r - mean, no std
        loss_type=config.loss_type,
        beta=config.beta,
        use_vllm=config.use_vllm,
        vllm_mode=config.vllm_mode,
        bf16=config.bf16,
        use_cpu=config.use_cpu,
        logging_steps=1,
        save_strategy="steps",
        save_steps=config.save_steps,
        report_to="none",
        seed=config.seed,
    )
    trainer = GRPOTrainer(model=resolve_model(config.policy), reward_funcs=[reward], args=args, train_dataset=dataset)
    trainer.darling_reward = reward
    return trainer


def checkpoints(output: Path) -> list[Path]:
    return sorted(Path(output).glob("checkpoint-*"))


def _settings(config: RLTrainConfig) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(config), default=str))


def start_or_resume(config: RLTrainConfig, resume: bool | None) -> bool:
    """Check OUTPUT against ``resume`` and record the settings; True when training continues a checkpoint.

    ``resume=True`` (``--resume``) needs a checkpoint; ``False`` refuses an OUTPUT that already holds some
    (a fresh run would mix its checkpoints with another's); ``None`` resumes when there is one (the pipeline).
    A resumed run must keep the settings it started with, except ``RESUME_MAY_CHANGE``."""
    output = Path(config.output)
    found = checkpoints(output)
    if resume and not found:
        raise UserInputError(f"{output}: --resume given, but there is no checkpoint-* to resume from")
    if resume is False and found:
        raise UserInputError(
            f"{output}: already holds {found[-1].name}; pass --resume to continue, or another --output"
        )
    saved_file, now = output / SETTINGS_FILE, _settings(config)
    if found and saved_file.exists():
        saved = json.loads(saved_file.read_text())
        for key in sorted(set(now) - RESUME_MAY_CHANGE):
            if key in saved and saved[key] != now[key]:
                raise UserInputError(
                    f"{saved_file}: this run started with {key}={saved[key]!r}, now {key}={now[key]!r}; a resumed "
                    f"run keeps its settings (only {', '.join(sorted(RESUME_MAY_CHANGE))} may change)"
                )
    output.mkdir(parents=True, exist_ok=True)
    tmp = saved_file.with_name(f".{SETTINGS_FILE}.{os.getpid()}.tmp")  # every rank of a launch writes it
    tmp.write_text(json.dumps(now, indent=2))
    tmp.replace(saved_file)
    return bool(found)


def check_policy(name: str) -> None:
    """A policy that cannot be loaded is bad input, found before anything is written or loaded: a local folder
    must hold a model, and a hub name must be in the local cache (or, online, on the hub)."""
    from darling.core.local_models import check_model_source

    check_model_source(name, "--policy")


def rl_train(config: RLTrainConfig, resume: bool | None = False, trainer=None):
    """Train; returns the TRL trainer (its ``state.log_history`` has the per-step metrics)."""
    config.check()
    dataset = None
    if trainer is None:  # every input is read (and refused, if bad) before OUTPUT is touched
        check_policy(config.policy)
        if config.diversity:
            from darling.classifier.export import read_export_meta

            read_export_meta(config.classifier)
        dataset = build_dataset(config)
    resuming = start_or_resume(config, resume)
    trainer = trainer or build_trainer(config, dataset)
    trainer.train(resume_from_checkpoint=resuming)
    trainer.save_model(str(Path(config.output) / "final"))
    return trainer
