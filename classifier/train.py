"""``train_classifier``: pairs -> trained, calibrated, exported classifier (what the CLI calls)."""

from __future__ import annotations

import copy
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import lightning as L
import torch
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, RichProgressBar
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from darling.classifier.backbones import load_sequence_classifier
from darling.classifier.bi_encoder import BiEncoder
from darling.classifier.bi_encoder_training import BiEncoderModule, TextPairDataModule
from darling.classifier.calibration import choose_threshold
from darling.classifier.checks import score_checks
from darling.classifier.config import BI_ENCODER, CROSS_ENCODER, ClassifierTrainConfig
from darling.classifier.encoding import PairEncoder, TextEncoder
from darling.classifier.export import bi_encoder_fields, build_meta, cross_encoder_fields, export_classifier
from darling.classifier.floor import content_rule_metrics, floor_verdict
from darling.classifier.labelled_pairs import PairSet, load_pairs, split_pairs
from darling.classifier.layer_cache import can_cache
from darling.classifier.lightning_data import PairDataModule
from darling.classifier.lightning_module import PairClassifierModule, class_weights
from darling.classifier.report import write_report
from darling.classifier.scoring import BiEncoderClassifier, EquivalenceClassifier, EquivalenceScorer
from darling.core.encoders import backbone_pooling, load_backbone_encoder, resolve_backbone
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer
from darling.core.schemas import LabelledPair

if TYPE_CHECKING:
    from lightning.pytorch.trainer.connectors.accelerator_connector import _PRECISION_INPUT  # the Trainer's own

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
    model: Any = None  # the trained model (rank 0), e.g. to compare with the export
    test_metrics: dict[str, Any] | None = None  # on held-out pairs, when train_classifier(test=...) was given
    rank: int = 0  # this process's global rank: only rank 0 calibrates, exports and has metrics
    checks: dict[str, Any] = field(default_factory=dict)  # the packaged checks (darling.classifier.checks), by name
    floor: dict[str, Any] = field(default_factory=dict)  # the floor's verdict (darling.classifier.floor)

    @property
    def exported(self) -> bool:
        return self.rank == 0


AFFINE_INIT_PAIRS = 64  # pairs whose untrained cosines start a and b (bi_training.init_affine)


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


def loggers(config: ClassifierTrainConfig, work_dir: Path) -> list:
    """The CSV log always, and what ``report_to`` names (tensorboard, wandb)."""
    chosen: list = [CSVLogger(work_dir, name="logs", flush_logs_every_n_steps=config.log_every_n_steps)]
    if "tensorboard" in config.report_to:
        chosen.append(TensorBoardLogger(work_dir, name="tensorboard"))
    if "wandb" in config.report_to:
        try:
            from lightning.pytorch.loggers import WandbLogger

            chosen.append(WandbLogger(project="darling", save_dir=str(work_dir), name=work_dir.parent.name))
        except ModuleNotFoundError:
            raise UserInputError("report_to wandb needs the wandb package: pip install wandb") from None
    return chosen


VAL_AUC = "val/auc"  # what the module logs after each validation epoch (PairModuleBase.on_validation_epoch_end)
BEST = "best"  # training/best/best.ckpt: the best epoch's weights, with early stopping


def early_stopping_callbacks(patience: int, work_dir: Path) -> list:
    """Lightning's own: stop after ``patience`` epochs without a higher validation AUC, and keep the best epoch's
    weights (weights only: one file of the model's size) to load back before calibration and export."""
    return [
        EarlyStopping(monitor=VAL_AUC, mode="max", patience=patience),
        ModelCheckpoint(
            dirpath=work_dir / BEST, filename=BEST, monitor=VAL_AUC, mode="max", save_top_k=1, save_weights_only=True
        ),
    ]


def restore_best(trainer: L.Trainer, module: L.LightningModule) -> int | None:
    """Load the best epoch's weights kept by ``early_stopping_callbacks`` into ``module``; that epoch, or None when
    no early stopping ran (or no epoch was validated)."""
    kept = (c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.monitor == VAL_AUC)
    best = next(kept, None)
    if best is None or not best.best_model_path:
        return None
    state = torch.load(best.best_model_path, map_location="cpu", weights_only=True)
    module.load_state_dict(state["state_dict"], strict=True)
    return int(state["epoch"])


def build_trainer(config: ClassifierTrainConfig, model, work_dir: Path, progress: bool) -> L.Trainer:
    checkpoint = ModelCheckpoint(
        dirpath=work_dir / "checkpoints",
        save_last=True,
        save_top_k=0,
        every_n_train_steps=config.checkpoint_every_n_steps,
    )
    callbacks: list = [checkpoint]
    if config.early_stopping_patience:
        callbacks += early_stopping_callbacks(config.early_stopping_patience, work_dir)
    if progress:
        callbacks.append(RichProgressBar())
    uses_steps = config.max_steps >= 1
    trainer = L.Trainer(
        accelerator=config.accelerator,
        devices=config.devices if config.devices == "auto" else int(config.devices),
        num_nodes=config.num_nodes,
        strategy=_strategy(config, model),
        precision=cast("_PRECISION_INPUT", config.precision),  # any string: the Trainer refuses an unknown one
        max_steps=config.max_steps if uses_steps else -1,
        max_epochs=-1 if uses_steps else config.epochs,
        gradient_clip_val=None,  # max_grad_norm is applied by the module (PairModuleBase.configure_gradient_clipping)
        logger=loggers(config, work_dir),
        callbacks=callbacks,
        log_every_n_steps=config.log_every_n_steps,
        use_distributed_sampler=False,  # LengthBucketBatchSampler shards batches across ranks itself
        num_sanity_val_steps=0,
        enable_progress_bar=progress,
        enable_model_summary=progress,
        default_root_dir=work_dir,
    )
    # The world size is known once the Trainer exists (devices x nodes, or torchrun's): the accumulation that
    # makes global_batch_size pairs per optimiser step follows from it.
    trainer.accumulate_grad_batches = config.accumulation(trainer.world_size)
    return trainer


def _full_model(trainer: L.Trainer, module, config, fresh_model):
    """The trained model with all its weights on rank 0 (None on the other ranks).

    Under FSDP each rank holds a shard: the full weights are gathered to rank 0's CPU (a collective, so every
    rank calls it; weights only, no optimizer state) and loaded strictly into ``fresh_model()``. Other strategies
    keep whole weights on every rank."""
    if not config.strategy.startswith("fsdp"):
        return module.model if trainer.is_global_zero else None
    state = trainer.strategy.lightning_module_state_dict()
    if not trainer.is_global_zero:
        return None
    model = fresh_model()
    model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()}, strict=True)
    return model


def scoring_copy(model, dtype_name: str, device: torch.device):
    """The trained model as it will score and be served: in the dtype it computed in (``precision``) on the
    training device. A bf16 model gets its own copy, so the fp32 master weights are what the export saves."""
    dtype = getattr(torch, dtype_name)
    if dtype == torch.float32:
        return model.to(device)
    copied = copy.deepcopy(model)
    getattr(copied, "backbone", copied).to(dtype)  # a bi-encoder's a and b stay fp32, as darling.json records them
    return copied.to(device)  # converted first: no fp32 copy of a 4B model passes through the GPU


def release_training_state(trainer: L.Trainer, module: L.LightningModule) -> None:
    """Free what only training needed (the optimiser's state, the gradients) before the scoring copy is made.

    Lightning's teardown moves both to the CPU for DDP and single-device runs but leaves them on the GPUs under
    FSDP; beside them (Adam: twice the fp32 weights, the gradients: once more) the bf16 scoring copy of the paper's
    4B classifier did not fit on an 80 GiB H100 (out of memory in calibration, measured). The checkpoint is written."""
    for optimizer in trainer.optimizers:
        optimizer.state.clear()
    module.zero_grad(set_to_none=True)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass
class KindParts:
    """What differs between the two kinds: input encoding, model, Lightning module and data, scorer, export."""

    encoder: Any
    model: Any  # what training updates: a sequence classifier or a BiEncoder
    hf_model: Any  # the transformers model inside it (FSDP wraps its layers)
    module: L.LightningModule
    datamodule: L.LightningDataModule
    fresh_model: Any  # () -> an untrained model of the same shape (FSDP gathers into it)
    scorer: Any  # (trained model) -> EquivalenceScorer
    meta_fields: Any  # (trained model) -> kind fields of darling.json


def cross_encoder_parts(config, backbone, tokenizer, train_pairs, val_pairs) -> KindParts:
    encoder = PairEncoder(tokenizer, config.max_tokens_per_response)
    model = load_sequence_classifier(backbone, encoder.special.pad_id, config.trust_remote_code)
    _check_positions(model.config, encoder.max_length, config)
    dm = PairDataModule(
        encoder,
        train_pairs,
        val_pairs,
        config.batch_size,
        config.both_orders,
        config.bucket_by_length,
        seed=config.seed,
        num_workers=config.num_workers,
    )
    module = PairClassifierModule(model, config, class_weights(*dm.class_counts()))
    return KindParts(
        encoder,
        model,
        model,
        module,
        dm,
        fresh_model=lambda: load_sequence_classifier(backbone, encoder.special.pad_id, config.trust_remote_code),
        scorer=lambda m: EquivalenceClassifier(m, encoder, symmetric=config.symmetric),
        meta_fields=lambda m: cross_encoder_fields(encoder, config.symmetric),
    )


def bi_encoder_parts(config, backbone, tokenizer, train_pairs, val_pairs, resume: bool) -> KindParts:
    encoder = TextEncoder(tokenizer, config.max_tokens_per_response)
    hf_model = load_backbone_encoder(backbone, config.trust_remote_code)
    _check_positions(hf_model.config, encoder.max_length, config)
    pooling = backbone_pooling(backbone, hf_model.config) if config.pooling == "auto" else config.pooling
    model = BiEncoder(hf_model, pooling)
    cache = (
        (hf_model, config.freeze_layers)
        if config.cache_frozen_layers and can_cache(hf_model, config.freeze_layers)
        else None
    )
    dm = TextPairDataModule(
        encoder,
        train_pairs,
        val_pairs,
        config.batch_size,
        config.bucket_by_length,
        seed=config.seed,
        num_workers=config.num_workers,
        cache=cache,
    )
    module = BiEncoderModule(model, config, class_weights(*dm.class_counts()))
    if not resume:  # a resumed run restores a and b from its checkpoint; a fresh one fits them at fit start
        module.affine_pairs = random.Random(config.seed).sample(train_pairs, min(AFFINE_INIT_PAIRS, len(train_pairs)))
        module.encoder = encoder
    return KindParts(
        encoder,
        model,
        hf_model,
        module,
        dm,
        fresh_model=lambda: BiEncoder(load_backbone_encoder(backbone, config.trust_remote_code), pooling),
        scorer=lambda m: BiEncoderClassifier(m, encoder),
        meta_fields=lambda m: bi_encoder_fields(encoder, m),
    )


def _check_positions(model_config, max_length: int, config: ClassifierTrainConfig) -> None:
    max_positions = getattr(model_config, "max_position_embeddings", None)
    if max_positions and max_length > max_positions:
        per = "pair" if config.kind == CROSS_ENCODER else "response"
        raise UserInputError(
            f"max_tokens_per_response={config.max_tokens_per_response} gives {max_length} tokens per {per}, "
            f"more than the backbone's {max_positions} positions"
        )


def pair_set(source: str | Path | PairSet) -> PairSet:
    """Pairs already loaded (the CLI reads every input before importing this module) or a source to load."""
    return source if isinstance(source, PairSet) else load_pairs(source)


def _pairs_and_val(config: ClassifierTrainConfig, data: PairSet, val: str | Path | PairSet | None):
    if val is not None:
        return data.pairs, pair_set(val).pairs
    return split_pairs(data, config.val_fraction, config.seed)


def calibrate(
    clf: EquivalenceScorer,
    val_pairs: list[LabelledPair],
    objective: str,
    report_dir: Path,
    share: float | None = None,
) -> tuple[float, dict[str, Any]]:
    """Choose the decision threshold on validation (for ``objective``, or for accuracy at the expected ``share``
    of equivalent pairs); write metrics and plots at it to ``report_dir``."""
    probs = clf.prob_equivalent([p.texts for p in val_pairs])
    threshold = choose_threshold([p.similar for p in val_pairs], probs, objective, share)
    return threshold, write_report(val_pairs, probs, threshold, report_dir, "validation split")


def score_test(clf: EquivalenceScorer, test_pairs: list[LabelledPair], report_dir: Path) -> dict[str, Any]:
    """Metrics on held-out pairs at the threshold validation chose: nothing here was chosen on them."""
    probs = clf.prob_equivalent([p.texts for p in test_pairs])
    return write_report(test_pairs, probs, clf.threshold, report_dir, "held-out test pairs")


@dataclass
class Fitted:
    """What ``fit`` leaves: the trainer (its ranks and schedule), the model's parts, the full trained model."""

    trainer: Any
    parts: Any
    tokenizer: Any
    trained: Any
    seconds: float
    best_epoch: int | None = None  # with early stopping: the epoch whose weights were kept (0-based)


def fit(config: ClassifierTrainConfig, train_pairs, val_pairs, work_dir: Path, resume_from: Path | None, progress):
    """Build the model of ``config.kind`` and train it with Lightning (from ``resume_from`` if given)."""
    backbone = resolve_backbone(config.backbone)
    tokenizer = load_tokenizer(backbone, config.trust_remote_code)
    if config.kind == BI_ENCODER:
        parts = bi_encoder_parts(config, backbone, tokenizer, train_pairs, val_pairs, resume_from is not None)
    else:
        parts = cross_encoder_parts(config, backbone, tokenizer, train_pairs, val_pairs)
    trainer = build_trainer(config, parts.hf_model, work_dir, progress)
    start = time.perf_counter()
    trainer.fit(parts.module, datamodule=parts.datamodule, ckpt_path=str(resume_from) if resume_from else None)
    seconds = time.perf_counter() - start
    best_epoch = restore_best(trainer, parts.module)
    trained = _full_model(trainer, parts.module, config, parts.fresh_model)
    release_training_state(trainer, parts.module)
    return Fitted(trainer, parts, tokenizer, trained, seconds, best_epoch)


def train_classifier(
    config: ClassifierTrainConfig,
    data: str | Path | PairSet,
    output: str | Path,
    val: str | Path | PairSet | None = None,
    resume: bool = False,
    progress: bool = True,
    test: str | Path | PairSet | None = None,
) -> TrainResult:
    """Train on ``data`` (validation split from it unless ``val``), calibrate, export to ``output``.

    Logs, checkpoints and the validation report (metrics, ROC and reliability plots) go to
    ``output/training``; ``resume`` continues from its ``last.ckpt``. ``test``: held-out pairs scored at
    the end (``output/training/test``), their metrics recorded in ``darling.json`` as ``test_metrics``.
    """
    if config.threads:
        torch.set_num_threads(config.threads)
    L.seed_everything(config.seed, workers=True, verbose=False)
    output = Path(output)
    work_dir = output / "training"
    last_ckpt = work_dir / "checkpoints" / "last.ckpt"
    if resume and not last_ckpt.exists():
        raise UserInputError(f"--resume: no checkpoint at {last_ckpt}")
    pairs = pair_set(data)
    test_pairs = pair_set(test).pairs if test is not None else None  # bad input fails before training
    train_pairs, val_pairs = _pairs_and_val(config, pairs, val)
    fitted = fit(config, train_pairs, val_pairs, work_dir, last_ckpt if resume else None, progress)
    trainer = fitted.trainer
    if not trainer.is_global_zero:
        n = (len(train_pairs), len(val_pairs))
        no_threshold = float("nan")  # only rank 0 calibrates
        return TrainResult(output, {}, no_threshold, fitted.seconds, *n, trainer.global_step, rank=trainer.global_rank)
    return calibrate_and_export(config, fitted, pairs.sha256, (train_pairs, val_pairs, test_pairs), output)


def calibrate_and_export(
    config: ClassifierTrainConfig, fitted: Fitted, data_sha256: str, split: tuple, output: Path
) -> TrainResult:
    """Rank 0: the threshold from the validation pairs, the test pairs and the packaged checks scored, the export
    written."""
    train_pairs, val_pairs, test_pairs = split
    trainer, work_dir, dtype = fitted.trainer, output / "training", config.inference_dtype()
    clf = fitted.parts.scorer(scoring_copy(fitted.trained, dtype, trainer.strategy.root_device))
    threshold, metrics = calibrate(
        clf, val_pairs, config.threshold_objective, work_dir / "validation", config.expected_equivalent_share
    )
    clf = clf.with_threshold(threshold)
    metrics["train_seconds"] = round(fitted.seconds, 1)
    rule = content_rule_metrics(val_pairs)
    floor = floor_verdict(config.auc_floor, metrics, rule)
    test_metrics = score_test(clf, test_pairs, work_dir / "test") if test_pairs is not None else None
    checks = score_checks(clf, config.check_names(), train_pairs + val_pairs, work_dir / "checks")
    world, accumulate = trainer.world_size, trainer.accumulate_grad_batches
    schedule = {
        "world_size": world,
        "accumulate_grad_batches": accumulate,
        "examples_per_optimiser_step": config.batch_size * world * accumulate,  # (a, b) and (b, a): two
        "optimiser_steps": trainer.global_step,
        "epochs_run": trainer.current_epoch,
        "best_epoch": fitted.best_epoch,
    }
    meta = build_meta(
        {**fitted.parts.meta_fields(fitted.trained), "dtype": dtype, "schedule": schedule},
        config.backbone,
        threshold,
        metrics,
        data_sha256,
        config.to_dict(),
        test_metrics,
        checks,
    )
    meta |= {"validation_content_rule": rule, "floor": floor}
    export_classifier(fitted.trained, fitted.tokenizer, output, meta)
    n = (len(train_pairs), len(val_pairs), trainer.global_step)
    return TrainResult(
        output, metrics, threshold, fitted.seconds, *n, fitted.trained, test_metrics, checks=checks, floor=floor
    )
