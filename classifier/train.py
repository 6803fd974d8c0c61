"""``train_classifier``: pairs -> trained, calibrated, exported classifier (what the CLI calls)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint, RichProgressBar
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from darling.classifier.backbones import load_sequence_classifier, load_tokenizer, resolve_backbone
from darling.classifier.calibration import choose_threshold
from darling.classifier.config import ClassifierTrainConfig
from darling.classifier.data import PairSet, load_pairs, split_pairs
from darling.classifier.datamodule import PairDataModule
from darling.classifier.encoding import PairEncoder
from darling.classifier.export import build_meta, export_classifier
from darling.classifier.module import PairClassifierModule, class_weights
from darling.classifier.report import write_report
from darling.classifier.scoring import EquivalenceClassifier
from darling.errors import UserInputError
from darling.schemas import LabelledPair

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    output: Path
    metrics: dict[str, Any]
    threshold: float
    train_seconds: float
    n_train: int
    n_val: int
    global_step: int = 0
    model: Any = None  # the trained transformers model (rank 0), e.g. to compare with the export


def _strategy(config: ClassifierTrainConfig, model):
    """Trainer strategy; FSDP wraps each transformer layer (the whole 4B model as one unit is useless)."""
    if config.strategy != "fsdp":
        return config.strategy
    from lightning.pytorch.strategies import FSDPStrategy

    base = model.base_model
    layers = base.layers if hasattr(base, "layers") else base.encoder.layer
    layer_cls = {type(layers[0])}
    return FSDPStrategy(
        auto_wrap_policy=layer_cls,
        activation_checkpointing_policy=layer_cls if config.gradient_checkpointing else None,
        state_dict_type="full",
    )


def build_trainer(config: ClassifierTrainConfig, model, work_dir: Path, progress: bool) -> L.Trainer:
    checkpoint = ModelCheckpoint(
        dirpath=work_dir / "checkpoints",
        save_last=True,
        save_top_k=0,
        every_n_train_steps=config.checkpoint_every_n_steps,
    )
    callbacks: list = [checkpoint]
    if progress:
        callbacks.append(RichProgressBar())
    uses_steps = config.max_steps >= 1
    return L.Trainer(
        accelerator=config.accelerator,
        devices=config.devices if config.devices == "auto" else int(config.devices),
        strategy=_strategy(config, model),
        precision=config.precision,
        max_steps=config.max_steps if uses_steps else -1,
        max_epochs=-1 if uses_steps else config.epochs,
        accumulate_grad_batches=config.accumulate_grad_batches,
        gradient_clip_val=1.0 if not config.strategy.startswith("fsdp") else None,
        logger=[
            CSVLogger(work_dir, name="logs", flush_logs_every_n_steps=config.log_every_n_steps),
            TensorBoardLogger(work_dir, name="tensorboard"),
        ],
        callbacks=callbacks,
        log_every_n_steps=config.log_every_n_steps,
        use_distributed_sampler=False,  # LengthBucketBatchSampler shards batches across ranks itself
        num_sanity_val_steps=0,
        enable_progress_bar=progress,
        enable_model_summary=progress,
        default_root_dir=work_dir,
    )


def _full_model(trainer: L.Trainer, module: PairClassifierModule, config, work_dir: Path, backbone: str, pad_id: int):
    """The trained model with all its weights on rank 0.

    Under FSDP each rank holds a shard: a full checkpoint (a collective, so every rank calls it) is
    gathered and loaded strictly into a fresh model. Other strategies keep whole weights on every rank.
    """
    if not config.strategy.startswith("fsdp"):
        return module.model
    path = work_dir / "checkpoints" / "final-full.ckpt"
    trainer.save_checkpoint(path)
    if not trainer.is_global_zero:
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    model = load_sequence_classifier(backbone, pad_id, config.trust_remote_code)
    model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()}, strict=True)
    return model


def _pairs_and_val(config: ClassifierTrainConfig, data: PairSet, val: str | Path | None):
    if val is not None:
        return data.pairs, load_pairs(val).pairs
    return split_pairs(data, config.val_fraction, config.seed)


def calibrate(
    clf: EquivalenceClassifier, val_pairs: list[LabelledPair], objective: str, report_dir: Path
) -> tuple[float, dict[str, Any]]:
    """Choose the decision threshold on validation; write metrics and plots at it to ``report_dir``."""
    probs = clf.prob_equivalent([p.texts for p in val_pairs])
    threshold = choose_threshold([p.similar for p in val_pairs], probs, objective)
    return threshold, write_report(val_pairs, probs, threshold, report_dir, "validation split")


def train_classifier(
    config: ClassifierTrainConfig,
    data: str | Path,
    output: str | Path,
    val: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Train on ``data`` (validation split from it unless ``val``), calibrate, export to ``output``.

    Logs, checkpoints and the validation report (metrics, ROC and reliability plots) go to
    ``output/training``; ``resume`` continues from its ``last.ckpt``.
    """
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    L.seed_everything(config.seed, workers=True, verbose=False)
    output = Path(output)
    work_dir = output / "training"
    last_ckpt = work_dir / "checkpoints" / "last.ckpt"
    if resume and not last_ckpt.exists():
        raise UserInputError(f"--resume: no checkpoint at {last_ckpt}")

    pairs = load_pairs(data)
    train_pairs, val_pairs = _pairs_and_val(config, pairs, val)
    backbone = resolve_backbone(config.backbone)
    tokenizer = load_tokenizer(backbone, config.trust_remote_code)
    encoder = PairEncoder(tokenizer, config.max_tokens_per_response)
    model = load_sequence_classifier(backbone, encoder.special.pad_id, config.trust_remote_code)
    max_positions = getattr(model.config, "max_position_embeddings", None)
    if max_positions and encoder.max_length > max_positions:
        raise UserInputError(
            f"max_tokens_per_response={config.max_tokens_per_response} gives {encoder.max_length} tokens per pair, "
            f"more than the backbone's {max_positions} positions"
        )

    datamodule = PairDataModule(
        encoder,
        train_pairs,
        val_pairs,
        config.batch_size,
        config.both_orders,
        config.bucket_by_length,
        seed=config.seed,
        num_workers=config.num_workers,
    )
    module = PairClassifierModule(model, config, class_weights(*datamodule.class_counts()))
    trainer = build_trainer(config, model, work_dir, progress)
    start = time.perf_counter()
    trainer.fit(module, datamodule=datamodule, ckpt_path=str(last_ckpt) if resume else None)
    train_seconds = time.perf_counter() - start
    trained = _full_model(trainer, module, config, work_dir, backbone, encoder.special.pad_id)
    if not trainer.is_global_zero:
        return TrainResult(output, {}, 0.5, train_seconds, len(train_pairs), len(val_pairs), trainer.global_step)

    clf = EquivalenceClassifier(trained, encoder, symmetric=config.symmetric)
    threshold, metrics = calibrate(clf, val_pairs, config.threshold_objective, work_dir / "validation")
    metrics["train_seconds"] = round(train_seconds, 1)
    meta = build_meta(encoder, config.backbone, threshold, config.symmetric, metrics, pairs.sha256, config.to_dict())
    export_classifier(trained, tokenizer, output, meta)
    return TrainResult(
        output, metrics, threshold, train_seconds, len(train_pairs), len(val_pairs), trainer.global_step, trained
    )
