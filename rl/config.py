"""Settings of ``darling rl-train``: one dataclass whose fields carry their help; presets are the data files in
``rl/presets/`` (keys are field names). Precedence: preset < ``--config`` file < flags and ``--set``
(``darling.core.config``). ``serve-reward-model``'s are in ``darling.rl.serve_config``.

The paper's choices are the defaults: rewards centred per group without std scaling (Eq. 6,
``scale_rewards="none"``), no KL term (``beta=0``), a length-unbiased loss (``dr_grpo``). ``method`` names the arm
(``darling.rl.methods``): ``grpo`` runs the baseline with identical settings (quality only), the others the
ablations and the other ways to keep diversity. Any other field of TRL's
``GRPOConfig`` is reachable through ``trl`` (``--set trl.vllm_importance_sampling_correction=false``), applied
after the command's own; a key the command already has a field for is refused, so each value has one place.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from darling.core.checkers import CHECKER_NAMES
from darling.core.config import CommandConfig, option, option_from
from darling.core.engine_config import sampling_option
from darling.core.errors import UserInputError
from darling.core.lexical import NGRAM_ORDER, NGRAM_THRESHOLD
from darling.core.quality import QUALITIES
from darling.rl.methods import METHOD_NAMES, METHODS, Method, check_arm_settings
from darling.rl.reward import NORMS, SCALES, RewardConfig
from darling.rl.verl_settings import check_verl

# The reward's settings (norm, correct_only, floor, passk_k) are RewardConfig's fields, default and help; rl-train's
# flags of the same names derive from them (darling_term() reads the flags back by those names).

CPU_TEMPLATE = "{problem}\n\nGive a short answer and put the final answer within \\boxed{}."
TRL = {"trl": True}  # a field that reaches TRL's GRPOConfig under its own name (``meta={"trl": NAME}``: another)
# A setting a resumed run may change (darling.rl.train.RESUME_MAY_CHANGE collects them): where it writes, how far it
# goes, where the classifier is served and the models run, CPU threads, logging. Anything else (policy, data, reward,
# sampling, optimiser) would silently continue a different experiment.
RESUMABLE = {"resume_may_change": True}
# The --help panels of rl-train, essentials first.
DATA_PANEL = "Data, model, output"
REWARD_PANEL = "Reward: quality x diversity (Eq. 5), and the other arms"
GRPO_PANEL = "GRPO (TRL's GRPOConfig)"
HARDWARE_PANEL = "Generation and hardware"
VERL_PANEL = "verl (--engine verl)"
LOGGING_PANEL = "Checkpoints, logging, seed"
ENGINES = ("trl", "verl")
REPORT_TO = ("none", "tensorboard", "wandb")
SETTINGS_FILE = "rl-settings.json"  # OUTPUT/: the settings a run started with, whatever its arm


@dataclass(kw_only=True, frozen=True)
class RLTrainConfig(CommandConfig):
    """Settings of ``darling rl-train``."""

    PRESET_PACKAGE: ClassVar[str | None] = "darling.rl"

    output: Path = option(
        aliases=("-o",),
        help="Checkpoints, logs, final policy (OUTPUT/final).",
        panel=DATA_PANEL,
        meta={"trl": "output_dir", **RESUMABLE},
    )
    # Policy and data.
    policy: str = option(
        "smollm2", help="Policy model: a path, a hub name, or smollm2 (packaged SmolLM2-135M).", panel=DATA_PANEL
    )
    problems: str = option(
        "champ", help="Training problems: a file, a hub dataset, or a built-in set (champ).", panel=DATA_PANEL
    )
    limit: int | None = option(32, help="First N problems; none = all.", panel=DATA_PANEL)
    user_template: str = option(
        CPU_TEMPLATE, help="The user turn; {problem} is replaced by the problem.", panel=DATA_PANEL
    )
    eval_problems: str | None = option(
        None,
        help="Held-out prompts (a file or built-in set) that TRL's evaluation answers before the first step and "
        "every --eval-steps: --num-generations answers each, scored by the run's reward; its figures go to "
        "log_history.json prefixed eval_ (distinct keys over steps on prompts the run never trains on).",
        panel=DATA_PANEL,
    )
    eval_limit: int | None = option(None, help="First N of --eval-problems; none = all.", panel=DATA_PANEL)
    eval_groups: int = option(
        1,
        help="With --eval-problems: groups of --num-generations answers per held-out prompt at each evaluation (its "
        "figures averaged over them: fewer draws' noise in a curve over steps).",
        panel=DATA_PANEL,
    )
    # The reward: quality x Norm(diversity) (Eq. 5), or another arm.
    method: str = option(
        "darling",
        choices=METHOD_NAMES,
        help="The arm: "
        + "; ".join(f"{m.name}: {m.about}" for m in METHODS.values())
        + ". Every other setting is shared, so arms compare one to one.",
        panel=REWARD_PANEL,
    )
    classifier: Path | None = option(
        None,
        help="Exported equivalence classifier (train-classifier); needed by darling and darling-add. With another "
        "method it only measures distinct per group for the logs (the reward never sees it).",
        panel=REWARD_PANEL,
    )
    classifier_urls: list[str] = option(
        factory=list,
        aliases=("--classifier-url",),
        help="vLLM replica serving --classifier (repeatable); default: in-process.",
        panel=REWARD_PANEL,
        meta=RESUMABLE,
    )
    classifier_threshold: float | None = option(
        None,
        aliases=("--threshold",),
        help="Override the classifier's exported decision threshold.",
        panel=REWARD_PANEL,
    )
    classifier_device: str | None = option(
        None,
        help="Device of the in-process classifier (cpu, cuda, cuda:1); default: this rank's accelerator "
        "(cuda:LOCAL_RANK) when there is one, else cpu.",
        panel=REWARD_PANEL,
        meta=RESUMABLE,
    )
    quality: str = option(
        "math",
        choices=QUALITIES,
        help="Quality: math (math-verify correctness against the answer); for open-ended prompts such as "
        "naming-train, short-answer (format: 1 up to --max-words words, max_words/words beyond) or "
        "relevant-short-answer (format x the answer's MiniLM cosine to the prompt, 0 if it echoes the prompt); "
        "for items-train, item-sentence (1: one or two sentences naming a member of the category, by rule); for "
        "items-phrase-train, item-phrase (1: 2 to 8 words naming a member); for world-train, world (1: a "
        "well-formed answer naming a member of the category).",
        panel=REWARD_PANEL,
    )
    max_words: int = option(4, help="short-answer: the longest answer with full quality.", panel=REWARD_PANEL)
    strict_length: bool = option(
        False,
        help="short-answer, relevant-short-answer: an answer over --max-words words scores 0 (default: "
        "max_words/words).",
        panel=REWARD_PANEL,
    )
    reward_model: Path | None = option(
        None,
        help="Quality from a reward model (HF sequence classifier, one output; sigmoid of its score) "
        "instead of math-verify correctness.",
        panel=REWARD_PANEL,
    )
    reward_model_urls: list[str] = option(
        factory=list,
        aliases=("--reward-model-url",),
        help="vLLM replica serving --reward-model (`--runner pooling --convert classify`, --max-model-len >= 1024; "
        "repeatable); --reward-model still gives its tokenizer and chat template (inputs are sent as token ids). "
        "Default: in-process.",
        panel=REWARD_PANEL,
        meta=RESUMABLE,
    )
    reward_model_device: str | None = option(
        None,
        help="Device of the in-process quality model (the reward model, or relevant-short-answer's encoder); "
        "default: this rank's accelerator when there is one, else cpu.",
        panel=REWARD_PANEL,
        meta=RESUMABLE,
    )
    server_timeout: float = option(
        60.0,
        help="Served classifier and reward model: seconds per request before it counts as failed.",
        panel=REWARD_PANEL,
        meta=RESUMABLE,
    )
    server_retries: int = option(
        4,
        help="Served classifier and reward model: retries per replica (exponential backoff) before its requests go "
        "to the other replicas; when none answers, the run stops (no decision, no reward).",
        panel=REWARD_PANEL,
        meta=RESUMABLE,
    )
    norm: str = option_from(RewardConfig, "norm", choices=NORMS, panel=REWARD_PANEL)
    correct_only: bool = option_from(RewardConfig, "correct_only", panel=REWARD_PANEL)
    floor: float = option_from(RewardConfig, "floor", panel=REWARD_PANEL)
    ngram_n: int = option(
        NGRAM_ORDER, help="darling-ngram: the n of its word n-grams (the paper's ablation: 4).", panel=REWARD_PANEL
    )
    ngram_threshold: float = option(
        NGRAM_THRESHOLD,
        help="darling-ngram: two responses are equivalent when the Jaccard overlap of their n-gram sets is at least "
        "this.",
        panel=REWARD_PANEL,
    )
    passk_k: int = option_from(RewardConfig, "passk_k", panel=REWARD_PANEL)
    checker: str = option(
        "items",
        choices=CHECKER_NAMES,
        help="checker-ceiling: the rule whose keys partition each group (items: the member an item prompt's "
        "answer names); prompts it reads no key on are refused.",
        panel=REWARD_PANEL,
    )
    entropy_coef: float = option(
        0.0,
        help="TRL's entropy bonus on the loss (loss - coef x mean token entropy); the entropy method needs it > 0 "
        "(adaptive: --set trl.use_adaptive_entropy=true).",
        panel=REWARD_PANEL,
        meta=TRL,
    )
    # Sampling and optimisation (TRL's GRPOConfig).
    num_generations: int = option(
        4, aliases=("-n",), help="Rollouts per prompt (the group size).", panel=GRPO_PANEL, meta=TRL
    )
    per_device_train_batch_size: int = option(4, help="Completions per device per step.", panel=GRPO_PANEL, meta=TRL)
    steps_per_generation: int | None = option(
        None,
        help="Optimiser steps per generation batch; none = gradient_accumulation_steps (TRL).",
        panel=GRPO_PANEL,
        meta=TRL,
    )
    gradient_accumulation_steps: int = option(1, help="Micro-batches per optimiser step.", panel=GRPO_PANEL, meta=TRL)
    max_completion_length: int = option(64, help="Max new tokens per rollout.", panel=GRPO_PANEL, meta=TRL)
    trainable_layers: int | None = option(
        None,
        help="Train only the policy's top N decoder layers and its final norm (the rest frozen: a backward pass that "
        "stops there: with --no-gradient-checkpointing, half of SmolLM2's forward and backward for 10 of its 30 "
        "layers, bench/policy_backward.py); none: every weight.",
        panel=GRPO_PANEL,
    )
    temperature: float = sampling_option("temperature", 1.0, "the rollouts'", panel=GRPO_PANEL, meta=TRL)
    learning_rate: float = option(1e-6, aliases=("--lr",), help="Learning rate.", panel=GRPO_PANEL, meta=TRL)
    max_steps: int = option(4, help="Optimiser steps.", panel=GRPO_PANEL, meta={**TRL, **RESUMABLE})
    scale_rewards: str = option(
        "none",
        choices=SCALES,
        help="Advantages: r - mean over the group (none: Eq. 6, DARLING's), divided by the group's (group) or the "
        "batch's (batch) std (standard GRPO; the official GRPO baseline's).",
        panel=GRPO_PANEL,
        meta=TRL,
    )
    loss_type: str = option(
        "dr_grpo",
        help="TRL loss: dr_grpo (length-unbiased), dapo (token mean), grpo, bnpo, ...",
        panel=GRPO_PANEL,
        meta=TRL,
    )
    beta: float = option(0.0, help="KL coefficient (the paper: 0, no reference model).", panel=GRPO_PANEL, meta=TRL)
    use_vllm: bool = option(
        False, help="Generate the rollouts with vLLM inside TRL (GPUs).", panel=HARDWARE_PANEL, meta=TRL
    )
    vllm_mode: str = option(
        "colocate",
        choices=("colocate", "server"),
        help="TRL's vLLM mode: colocate (vLLM in each training process; trl.vllm_gpu_memory_utilization, "
        "trl.vllm_enable_sleep_mode, trl.vllm_tensor_parallel_size), or server (a `trl vllm-serve` at "
        "--vllm-server-host:--vllm-server-port, on GPUs of its own).",
        panel=HARDWARE_PANEL,
        meta=TRL,
    )
    vllm_server_host: str = option(
        "127.0.0.1",
        help="vllm_mode=server: the host of `trl vllm-serve`.",
        panel=HARDWARE_PANEL,
        meta={**TRL, **RESUMABLE},
    )
    vllm_server_port: int = option(
        8000,
        help="vllm_mode=server: its port (keep it apart from the classifier replicas' ports).",
        panel=HARDWARE_PANEL,
        meta={**TRL, **RESUMABLE},
    )
    bf16: bool = option(
        False, help="bf16 mixed precision; the policy then loads in bf16.", panel=HARDWARE_PANEL, meta=TRL
    )
    use_cpu: bool = option(
        False,
        help="Train on the CPU even where a GPU is visible; off (TRL's default): this rank's GPU when CUDA is "
        "present, else the CPU (the rule of --device elsewhere).",
        panel=HARDWARE_PANEL,
        meta=TRL,
    )
    gradient_checkpointing: bool = option(
        True,
        help="Recompute each layer's activations in the backward pass (TRL's GRPO default): less memory, about one "
        "more forward pass per step. Off for a small policy on CPU (SmolLM2, 4 prompts of 8: the forward and "
        "backward 18.1 s instead of 24.0 s on one core; 12.1 s with trainable_layers=10).",
        panel=HARDWARE_PANEL,
        meta=TRL,
    )
    save_steps: int = option(
        1,
        help="Checkpoint interval (steps); --resume continues from the last.",
        panel=LOGGING_PANEL,
        meta={**TRL, **RESUMABLE},
    )
    eval_steps: int = option(
        25, help="With --eval-problems: evaluate every N steps.", panel=LOGGING_PANEL, meta={**TRL, **RESUMABLE}
    )
    save_total_limit: int | None = option(
        2,
        help="Keep the newest N checkpoints (a SmolLM2 one with its optimizer state is 1.6 GB); none keeps all.",
        panel=LOGGING_PANEL,
        meta={**TRL, **RESUMABLE},
    )
    prune_checkpoints: bool = option(
        False,
        help="Delete OUTPUT/checkpoint-* once OUTPUT/final is saved (a finished run needs none of them).",
        panel=LOGGING_PANEL,
        meta=RESUMABLE,
    )
    report_to: list[str] = option(
        factory=lambda: ["none"],
        help="Where TRL logs: none, tensorboard, wandb (repeatable).",
        panel=LOGGING_PANEL,
        meta={**TRL, **RESUMABLE},
    )
    seed: int = option(0, help="Seed of TRL's sampling and data order.", panel=LOGGING_PANEL, meta=TRL)
    threads: int | None = option(
        1, help="torch CPU threads; none = torch's default.", panel=HARDWARE_PANEL, meta=RESUMABLE
    )
    engine: str = option(
        "trl",
        choices=ENGINES,
        help="trl: train here with TRL's GRPOTrainer; verl: the same settings as verl's data and `python -m "
        "verl.trainer.main_ppo` command (OUTPUT/verl/), run here (GPU nodes with verl >= 0.7.1), the policy merged "
        "into OUTPUT/final. Math quality only.",
        panel=VERL_PANEL,
    )
    verl_gpus: int = option(
        8, help="--engine verl: training GPUs per node (verl's trainer.n_gpus_per_node).", panel=VERL_PANEL
    )
    verl_nodes: int = option(1, help="--engine verl: nodes (verl's trainer.nnodes).", panel=VERL_PANEL)
    dry_run: bool = option(
        False, help="--engine verl: write OUTPUT/verl/ (data, main_ppo.sh) and run nothing.", panel=VERL_PANEL
    )
    trl: dict[str, Any] = option(
        factory=dict,
        flag=False,
        help="Any other field of TRL's GRPOConfig (--set trl.FIELD=VALUE), applied after the command's own.",
        panel=GRPO_PANEL,
    )

    def check(self) -> None:
        if self.trainable_layers is not None and self.trainable_layers < 1:
            raise UserInputError(f"trainable_layers must be >= 1 (or none: every weight), got {self.trainable_layers}")
        if self.dry_run and self.engine != "verl":
            raise UserInputError("--dry-run writes verl's command: it goes with --engine verl")
        if self.engine == "verl":
            check_verl(self)
        check_arm_settings(self)
        for name in ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps"):
            if getattr(self, name) < 1:
                raise UserInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.reward_model_urls and self.reward_model is None:
            raise UserInputError("--reward-model-url needs --reward-model (the served model's folder: its tokenizer)")
        if self.server_timeout <= 0 or self.server_retries < 0:
            raise UserInputError(
                f"server_timeout must be > 0 and server_retries >= 0, got {self.server_timeout}, {self.server_retries}"
            )
        if self.reward_model is not None and self.quality != "math":
            raise UserInputError(f"--reward-model gives the quality; drop --quality {self.quality}")
        if self.max_words < 1:
            raise UserInputError(f"max_words must be >= 1, got {self.max_words}")
        if self.eval_steps < 1 or self.eval_groups < 1:
            raise UserInputError(f"eval_steps and eval_groups must be >= 1, got {self.eval_steps}, {self.eval_groups}")
        if self.eval_problems is not None and self.engine == "verl":
            raise UserInputError("--eval-problems is TRL's evaluation; drop it with --engine verl")
        try:
            self.reward().check_learning_signal()  # the reward's own checks, the verl entry point's too
        except ValueError as error:
            raise UserInputError(str(error)) from None
        unknown = sorted(set(self.report_to) - set(REPORT_TO))
        if unknown:
            raise UserInputError(f"report_to: unknown {unknown[0]!r}; choose from {', '.join(REPORT_TO)}")
        own = sorted(set(self.trl) & set(trl_fields()))
        if own:
            flag = "--" + trl_fields()[own[0]].replace("_", "-")
            raise UserInputError(f"trl.{own[0]}: rl-train sets it from its own setting; use {flag}")
        per_process = self.per_device_train_batch_size * (self.steps_per_generation or self.gradient_accumulation_steps)
        if per_process % self.num_generations:
            # TRL scores each process's slice of the generation batch; a group split across two slices would be
            # partitioned in two halves.
            raise UserInputError(
                f"per-device batch x steps per generation = {per_process} must be a multiple of "
                f"num_generations = {self.num_generations}, so that no prompt's group is split across processes"
            )

    @property
    def arm(self) -> Method:
        return METHODS[self.method]

    def darling_term(self) -> RewardConfig:
        """The DARLING reward these settings describe (Eq. 4-5), applied or not (an arm without it measures what it
        would do): ``RewardConfig``'s fields, read from the fields of the same names, so a reward setting is
        declared there and here only (a flag), and reaches TRL and verl alike. Its combine is the arm's when the arm
        partitions (darling: multiply, darling-add: add), else DARLING's."""
        values = {f.name: getattr(self, f.name) for f in fields(RewardConfig) if f.name != "combine"}
        return RewardConfig(combine=self.arm.combine if self.arm.partition else "multiply", **values)

    def reward(self) -> RewardConfig:
        """The reward this run trains with: the arm's combine over the DARLING term's settings."""
        return replace(self.darling_term(), combine=self.arm.combine)


def trl_fields() -> dict[str, str]:
    """TRL ``GRPOConfig`` field -> the ``RLTrainConfig`` field that sets it (their ``meta={"trl": ...}``): what
    ``grpo_args`` passes, and what ``--set trl.X`` may not set a second time."""
    out = {}
    for f in fields(RLTrainConfig):
        target = f.metadata.get("trl")
        if target:
            out[f.name if target is True else target] = f.name
    return out
