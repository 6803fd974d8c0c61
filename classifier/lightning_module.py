"""The pair classifier as a LightningModule: model logic only; hardware lives in Trainer flags."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import lightning as L
import torch
import torch.nn.functional as F

from darling.classifier.backbones import EQUIVALENT_INDEX
from darling.classifier.config import ClassifierTrainConfig

if TYPE_CHECKING:
    from lightning.pytorch.utilities.types import OptimizerLRScheduler
    from torch.distributed.fsdp import FullyShardedDataParallel

# Freshly initialised layers take head_learning_rate. Not the (identity-initialised) pooler: at a head
# rate AdamW scrambles its 384 x 384 identity within a few dozen steps (seen: training loss rising again).
HEAD_MODULES = ("classifier", "score")


def is_head_param(name: str) -> bool:
    return any(part in HEAD_MODULES for part in name.split(".")[:-1])


def identity_pooler(model) -> bool:
    """Make BERT's pooler pass the [CLS] state through (tanh(I h + 0)).

    Sentence-embedding checkpoints (all-MiniLM-L6-v2) were trained with mean pooling: their pooler is
    left near zero (weights std ~0.009), so a new head on top sees almost constant features and starts
    at chance. An identity pooler hands the head the [CLS] state itself, which does vary across pairs.
    """
    pooler = getattr(model.base_model, "pooler", None)
    dense = getattr(pooler, "dense", None)
    if dense is None or dense.weight.shape[0] != dense.weight.shape[1]:
        return False
    with torch.no_grad():
        dense.weight.copy_(torch.eye(dense.weight.shape[0]))
        dense.bias.zero_()
    return True


def warmup_cosine(step: int, warmup: int, total: int, floor: float) -> float:
    """LR multiplier: linear warm-up to 1, then cosine down to ``floor`` (= min_lr / lr) at ``total``."""
    if step < warmup:
        return (step + 1) / (warmup + 1)
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def class_weights(n_negative: int, n_positive: int) -> list[float]:
    """Inverse-frequency weights, normalised so a balanced set gets weight 1 for both classes."""
    total = n_negative + n_positive
    return [total / (2 * max(1, n_negative)), total / (2 * max(1, n_positive))]


def without_kv_cache(model) -> None:
    """Make a decoder backbone's training forward build no KV cache (``config.use_cache = False``).

    Training never reads the cache, and with one a re-run layer appends its keys a second time: FSDP's activation
    checkpointing (``CheckpointWrapper`` around each decoder layer) re-runs each layer in backward with the same
    cache, so its keys doubled (1018 -> 2036 on an H100) and a padded batch's attention mask no longer fitted.
    transformers' own ``gradient_checkpointing_enable`` turns the cache off, but the module skips it under FSDP.
    Every strategy gets this: a cache is never of use here, whoever checkpoints."""
    for config in {id(c): c for c in (model.config, model.base_model.config)}.values():
        if getattr(config, "use_cache", False):
            config.use_cache = False


def freeze_lower_layers(model, n_layers: int) -> None:
    """Freeze the embeddings and the first ``n_layers`` transformer layers (faster CPU training)."""
    if n_layers <= 0:
        return
    base = model.base_model
    for p in base.embeddings.parameters() if hasattr(base, "embeddings") else base.embed_tokens.parameters():
        p.requires_grad = False
    layers = base.encoder.layer if hasattr(base, "encoder") else base.layers
    for layer in layers[:n_layers]:
        for p in layer.parameters():
            p.requires_grad = False


class PairModuleBase(L.LightningModule):
    """What both kinds share: validation AUC, warm-up + cosine AdamW with a separate rate for new heads.

    Gradient accumulation is Lightning's ``accumulate_grad_batches``: its automatic optimisation divides
    each micro-batch loss by the number of accumulated batches, so the gradient is that of the mean loss
    (the reference code summed them). ``tests/classifier/test_training.py`` checks this against one large batch.
    """

    class_weights: torch.Tensor  # a buffer (register_buffer in __init__)

    def __init__(self, config: ClassifierTrainConfig, weights: list[float] | None):
        super().__init__()
        self.fsdp = config.strategy.startswith("fsdp")
        self.config = config
        self.register_buffer("class_weights", torch.tensor(weights or [1.0, 1.0]), persistent=False)
        self.save_hyperparameters({"config": config.to_dict(), "class_weights": weights})
        self._val_probs: list[torch.Tensor] = []
        self._val_labels: list[torch.Tensor] = []

    def is_head(self, name: str) -> bool:
        return is_head_param(name)

    def weighted_mean(self, losses: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean of per-example losses times their class weight. Not divided by the batch's weight sum (what
        ``cross_entropy(weight=...)`` does): then an example's weight means the same whatever else shares its
        micro batch, so at batch size 1 the weights still act, and accumulated micro batches of equal size give
        the loss of one large batch (``tests/classifier/test_training.py``)."""
        if self.config.class_weighted:
            losses = losses * self.class_weights[labels]
        return losses.mean()

    def keep_validation(self, probs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        """Record a validation batch's probabilities, without the copies that only pad a rank's share."""
        keep = batch["keep"].cpu()
        self._val_probs.append(probs.detach().float().cpu()[keep])
        self._val_labels.append(batch["labels"].detach().cpu()[keep])

    def on_validation_epoch_end(self) -> None:
        from sklearn.metrics import roc_auc_score

        probs = torch.cat(self._val_probs) if self._val_probs else torch.zeros(0)
        labels = torch.cat(self._val_labels) if self._val_labels else torch.zeros(0, dtype=torch.long)
        self._val_probs.clear()
        self._val_labels.clear()
        if self.trainer.world_size > 1:  # each rank scored its own share of the validation batches
            import torch.distributed as dist

            shares: list = [None] * self.trainer.world_size
            dist.all_gather_object(shares, (probs, labels))
            probs, labels = torch.cat([p for p, _ in shares]), torch.cat([y for _, y in shares])
        if not len(labels):
            return
        probs_np, labels_np = probs.numpy(), labels.numpy()
        if len(set(labels_np.tolist())) == 2:
            self.log("val/auc", float(roc_auc_score(labels_np, probs_np)), prog_bar=True)
        self.log("val/accuracy@0.5", float(((probs_np >= 0.5) == labels_np).mean()))

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None) -> None:
        """Clip the gradient norm to ``max_grad_norm`` under every strategy. Lightning's own clipping refuses
        FSDP (the norm of a sharded gradient needs the root FSDP module's ``clip_grad_norm_``, which sums the
        shards' squares over ranks), so the Trainer gets no clip value and clipping happens here."""
        max_norm = self.config.max_grad_norm
        if max_norm is None:
            return
        if self.fsdp:  # Lightning's FSDPStrategy has wrapped the model in FullyShardedDataParallel
            cast("FullyShardedDataParallel", self.trainer.strategy.model).clip_grad_norm_(max_norm)
        else:
            self.clip_gradients(optimizer, gradient_clip_val=max_norm, gradient_clip_algorithm="norm")

    def configure_optimizers(self) -> OptimizerLRScheduler:
        cfg = self.config
        named = [(n, p) for n, p in self.named_parameters() if p.requires_grad]
        head_lr = cfg.head_learning_rate or cfg.learning_rate
        no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight", "scale")
        groups: dict[tuple[bool, bool], list] = {}
        for name, param in named:
            key = (self.is_head(name), name.endswith(no_decay))
            groups.setdefault(key, []).append(param)
        param_groups = [
            {
                "params": params,
                "lr": head_lr if is_head else cfg.learning_rate,
                "weight_decay": 0.0 if is_no_decay else cfg.weight_decay,
            }
            for (is_head, is_no_decay), params in groups.items()
        ]
        optimizer = torch.optim.AdamW(param_groups)
        total = int(self.trainer.estimated_stepping_batches)
        floor = cfg.min_learning_rate / cfg.learning_rate if cfg.learning_rate else 0.0
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: warmup_cosine(step, cfg.warmup_steps, total, floor)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class PairClassifierModule(PairModuleBase):
    """The cross-encoder: an ``AutoModelForSequenceClassification`` (num_labels=2) with class-weighted CE."""

    def __init__(self, model, config: ClassifierTrainConfig, weights: list[float] | None = None):
        super().__init__(config, weights)
        self.model = model.train()  # from_pretrained returns eval mode (dropout off)
        without_kv_cache(model)
        if config.gradient_checkpointing and not self.fsdp:  # FSDP checkpoints activations per layer itself
            model.gradient_checkpointing_enable()
        freeze_lower_layers(model, config.freeze_layers)
        if config.identity_pooler:  # on --resume the checkpoint's weights replace this afterwards
            identity_pooler(model)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

    def _loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(batch["input_ids"], batch["attention_mask"]).float()
        losses = F.cross_entropy(logits, batch["labels"], reduction="none")
        return self.weighted_mean(losses, batch["labels"]), logits

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, _ = self._loss(batch)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["labels"]))
        self.log("train/lr", self.trainer.optimizers[0].param_groups[0]["lr"], batch_size=1)
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        loss, logits = self._loss(batch)
        self.log("val/loss", loss, prog_bar=True, batch_size=len(batch["labels"]), sync_dist=True)
        self.keep_validation(logits.float().softmax(-1)[:, EQUIVALENT_INDEX], batch)
