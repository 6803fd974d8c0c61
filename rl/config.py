"""Settings of ``darling rl-train``: one dataclass whose fields carry their help; presets are the data files in
``rl/presets/`` (keys are field names). Precedence: preset < ``--config`` file < flags and ``--set``
(``darling.core.config``).

The paper's choices are the defaults: rewards centred per group without std scaling (Eq. 6, set in
``darling.rl.train``), no KL term (``beta=0``), a length-unbiased loss (``dr_grpo``). ``diversity=False`` runs
the GRPO baseline with identical settings (quality only, no classifier calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from darling.core.config import CommandConfig, option
from darling.core.errors import UserInputError
from darling.rl.quality import QUALITIES
from darling.rl.reward import NORMS, DarlingConfig

CPU_TEMPLATE = "{problem}\n\nGive a short answer and put the final answer within \\boxed{}."


@dataclass(kw_only=True)
class RLTrainConfig(CommandConfig):
    """Settings of ``darling rl-train``."""

    PRESET_PACKAGE: ClassVar[str | None] = "darling.rl"

    output: Path = option(aliases=("-o",), help="Checkpoints, logs, final policy (OUTPUT/final).")
    # Policy and data.
    policy: str = option("smollm2", help="Policy model: a path, a hub name, or smollm2 (packaged SmolLM2-135M).")
    problems: str = option("champ", help="Training problems: a file, a hub dataset, or a built-in set (champ).")
    limit: int | None = option(32, help="First N problems; none = all.")
    user_template: str = option(CPU_TEMPLATE, help="The user turn; {problem} is replaced by the problem.")
    # The reward: quality x Norm(diversity) (Eq. 5).
    diversity: bool = option(True, help="The DARLING reward; --no-diversity: the GRPO baseline (quality only).")
    classifier: Path | None = option(
        None,
        help="Exported equivalence classifier (train-classifier); needed unless --no-diversity. With "
        "--no-diversity it only measures distinct per group for the logs (the reward never sees it).",
    )
    classifier_urls: list[str] = option(
        factory=list,
        aliases=("--classifier-url",),
        help="vLLM replica serving --classifier (repeatable); default: in-process.",
    )
    classifier_threshold: float | None = option(
        None, aliases=("--threshold",), help="Override the classifier's exported decision threshold."
    )
    quality: str = option(
        "math",
        choices=QUALITIES,
        help="Quality: math (math-verify correctness against the answer); for open-ended prompts such as "
        "naming-train, short-answer (format: 1 up to --max-words words, max_words/words beyond) or "
        "relevant-short-answer (format x the answer's MiniLM cosine to the prompt, 0 if it echoes the prompt).",
    )
    max_words: int = option(4, help="short-answer: the longest answer with full quality.")
    reward_model: Path | None = option(
        None,
        help="Quality from a reward model (HF sequence classifier, one output; sigmoid of its score) "
        "instead of math-verify correctness.",
    )
    combine: str = option(
        "multiply",
        choices=("multiply", "add"),
        help="How quality and diversity make the reward: multiply (paper, Eq. 5) or add (ablation); "
        "quality only: --no-diversity.",
    )
    norm: str = option(
        "identity", choices=NORMS, help="Norm() of Eq. 5: identity, or minmax (rescaled within each group)."
    )
    correct_only: bool = option(False, help="Partition only correct responses (math variant).")
    floor: float = option(0.0, help="Lower bound on diversity (the reference's hidden 0.1); 0 = off.")
    # Sampling and optimisation (TRL's GRPOConfig).
    num_generations: int = option(4, aliases=("-n",), help="Rollouts per prompt (the group size).")
    per_device_train_batch_size: int = option(4, help="Completions per device per step.")
    steps_per_generation: int | None = option(
        None, help="Optimiser steps per generation batch; none = gradient_accumulation_steps (TRL)."
    )
    gradient_accumulation_steps: int = option(1, help="Micro-batches per optimiser step.")
    max_completion_length: int = option(64, help="Max new tokens per rollout.")
    temperature: float = option(1.0, help="Sampling temperature of the rollouts.")
    learning_rate: float = option(1e-6, aliases=("--lr",), help="Learning rate.")
    max_steps: int = option(4, help="Optimiser steps.")
    loss_type: str = option("dr_grpo", help="TRL loss: dr_grpo (paper's, length-unbiased), grpo, dapo, bnpo, ...")
    beta: float = option(0.0, help="KL coefficient (the paper: 0, no reference model).")
    use_vllm: bool = option(False, help="Generate the rollouts with vLLM inside TRL (GPUs).")
    vllm_mode: str = option("colocate", choices=("colocate", "server"), help="TRL's vLLM mode.")
    bf16: bool = option(False, help="bf16 mixed precision.")
    use_cpu: bool = option(True, help="Train on the CPU.")
    save_steps: int = option(1, help="Checkpoint interval (steps); --resume continues from the last.")
    save_total_limit: int | None = option(
        2, help="Keep the newest N checkpoints (a SmolLM2 one with its optimizer state is 1.6 GB); none keeps all."
    )
    seed: int = option(0, help="Seed of TRL's sampling and data order.")
    threads: int | None = option(1, help="torch CPU threads; none = torch's default.")

    def check(self) -> None:
        if self.diversity and self.classifier is None:
            raise UserInputError("the DARLING reward needs --classifier (an exported classifier), or --no-diversity")
        for name in ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps"):
            if getattr(self, name) < 1:
                raise UserInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.reward_model is not None and self.quality != "math":
            raise UserInputError(f"--reward-model gives the quality; drop --quality {self.quality}")
        if self.max_words < 1:
            raise UserInputError(f"max_words must be >= 1, got {self.max_words}")
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
        combine = self.combine if self.diversity else "quality"
        return DarlingConfig(combine=combine, norm=self.norm, correct_only=self.correct_only, floor=self.floor)


def build_config(
    preset: str | None = "cpu",
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> RLTrainConfig:
    """Preset, then ``config_file``, then ``overrides`` (``darling.core.config``); ``output`` is required."""
    return RLTrainConfig.build(preset, config_file, overrides)
