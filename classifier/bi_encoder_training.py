"""Training the bi-encoder kind: text-pair batches (a LightningDataModule) and the pair loss (a LightningModule).

A batch of B pairs is one encoder pass over 2B texts ([a_1..a_B, b_1..b_B]), length-bucketed by the longer
text of each pair and dynamically padded. The cosine is symmetric, so one order per pair is all there is.
With frozen lower layers on a BERT-family encoder, their output is computed once per text (layer_cache.py)
and batches carry those states instead of token ids.

Losses (``bi_loss``):
- ``bce``: class-weighted logistic loss of sigmoid(a * cos + b); encoder, a and b learn together.
- ``cosent``: CoSENT's ranking loss on the cosines (every equivalent pair of the batch above every
  different one), which suits a few hundred labelled pairs; a and b learn beside it from the logistic loss
  on detached cosines, so they calibrate without pulling on the encoder.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

from darling.classifier.bi_encoder import MIN_SCALE, BiEncoder, fit_affine
from darling.classifier.config import ClassifierTrainConfig
from darling.classifier.encoding import TextEncoder
from darling.classifier.layer_cache import frozen_states, pad_states
from darling.classifier.lightning_data import BucketedDataModule
from darling.classifier.lightning_module import PairModuleBase, freeze_lower_layers, without_kv_cache
from darling.core.schemas import LabelledPair

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)
COSENT_SCALE = 20.0  # the temperature CoSENT was published with


class EncodedTextPairs(Dataset):
    """Token ids of both sides of each pair, or (``cache``: backbone, frozen layers) their cached states."""

    def __init__(
        self,
        encoder: TextEncoder,
        pairs: Sequence[LabelledPair],
        cache: tuple[nn.Module, int] | None = None,
        device: torch.device | None = None,
    ):
        ids_a = encoder.encode([p.generation_0 for p in pairs])
        ids_b = encoder.encode([p.generation_1 for p in pairs])
        self.a: Sequence[list[int] | torch.Tensor] = ids_a
        self.b: Sequence[list[int] | torch.Tensor] = ids_b
        self.labels = [p.similar for p in pairs]
        if cache is not None:
            states = frozen_states(*cache, ids_a + ids_b, encoder.pad_id, device=device)
            self.a, self.b = states[: len(ids_a)], states[len(ids_a) :]

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[list[int] | torch.Tensor, list[int] | torch.Tensor, int]:
        return self.a[i], self.b[i], self.labels[i]

    @property
    def lengths(self) -> list[int]:
        return [max(len(a), len(b)) for a, b in zip(self.a, self.b, strict=True)]


class TextPairDataModule(BucketedDataModule):
    """The bi-encoder kind: both texts of each pair, as token ids or (``cache``) cached frozen-layer states."""

    def __init__(
        self,
        encoder: TextEncoder,
        train_pairs: Sequence[LabelledPair],
        val_pairs: Sequence[LabelledPair],
        batch_size: int,
        bucket_by_length: bool = True,
        seed: int = 0,
        num_workers: int = 0,
        cache: tuple[nn.Module, int] | None = None,
    ):
        super().__init__(train_pairs, val_pairs, batch_size, bucket_by_length, True, seed, num_workers)
        self.encoder = encoder
        self.cache = cache  # (backbone, frozen layers): batches of cached states instead of token ids

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is None:
            device = self.cache_device()
            self.train_set = EncodedTextPairs(self.encoder, self.train_pairs, self.cache, device)
            self.val_set = EncodedTextPairs(self.encoder, self.val_pairs, self.cache, device)

    def cache_device(self) -> torch.device | None:
        """Where the frozen layers run for the cache: this rank's device once a Trainer holds the module (setup runs
        before the Trainer moves the model there), else where the backbone is."""
        return self.trainer.strategy.root_device if self.trainer is not None else None

    def collate(self, items: list[tuple]) -> dict[str, torch.Tensor]:
        sides = [a for a, _, _ in items] + [b for _, b, _ in items]
        batch = pad_states(sides) if self.cache is not None else self.encoder.pad(sides)
        batch["labels"] = torch.tensor([label for _, _, label in items], dtype=torch.long)
        return batch


def cosent_loss(cos: torch.Tensor, labels: torch.Tensor, scale: float = COSENT_SCALE) -> torch.Tensor:
    """log(1 + sum over (equivalent i, different j) of exp(scale * (cos_j - cos_i))); 0 without both labels."""
    pos, neg = cos[labels == 1], cos[labels == 0]
    if not len(pos) or not len(neg):
        return cos.sum() * 0.0
    diffs = scale * (neg[None, :] - pos[:, None]).flatten()
    return torch.logsumexp(torch.cat([diffs.new_zeros(1), diffs]), dim=0)


class BiEncoderModule(PairModuleBase):
    """The bi-encoder kind's training step: one pass over both sides of every pair, the chosen pair loss."""

    def __init__(self, model: BiEncoder, config: ClassifierTrainConfig, weights: list[float] | None = None):
        super().__init__(config, weights)
        self.model = model
        model.backbone.train()
        without_kv_cache(model.backbone)  # FSDP's activation checkpointing re-runs layers: no cache to append to
        if config.gradient_checkpointing and not self.fsdp:  # FSDP checkpoints activations per layer itself
            cast("PreTrainedModel", model.backbone).gradient_checkpointing_enable()  # an AutoModel
        freeze_lower_layers(model.backbone, config.freeze_layers)
        freeze_unused(model.backbone)
        self.affine_pairs: Sequence[LabelledPair] = ()  # set by train_classifier: a, b start from their fit
        self.encoder: TextEncoder | None = None

    def on_fit_start(self) -> None:
        """Start a and b from the logistic fit on the untrained cosines of ``affine_pairs``, on this rank's device
        (every rank computes the same fit: under FSDP the forward pass is collective). A resumed run has none:
        its checkpoint restored a and b."""
        if self.affine_pairs and self.encoder is not None:
            init_affine(self.model, self.encoder, self.affine_pairs, device=self.device)

    def is_head(self, name: str) -> bool:
        return name in ("model.scale", "model.bias")

    def _weighted_bce(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.weighted_mean(F.binary_cross_entropy_with_logits(logits, labels.float(), reduction="none"), labels)

    def _loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        if "hidden" in batch:  # cached frozen layers
            emb = self.model.embed_cached(batch["hidden"], batch["attention_mask"], self.config.freeze_layers)
            logits, cos = self.model.pair_logits(emb)
        else:
            logits, cos = self.model(batch["input_ids"], batch["attention_mask"])
        labels = batch["labels"]
        if self.config.bi_loss == "cosent":
            calibration = self._weighted_bce(self.model.scale * cos.detach() + self.model.bias, labels)
            return cosent_loss(cos, labels) + calibration, logits
        return self._weighted_bce(logits, labels), logits

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, _ = self._loss(batch)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["labels"]))
        self.log("train/scale", self.model.scale.detach(), batch_size=1)
        self.log("train/lr", self.trainer.optimizers[0].param_groups[0]["lr"], batch_size=1)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx: int) -> None:
        """Keep a >= MIN_SCALE: the probability rises with the cosine (bi_encoder.MIN_SCALE says why)."""
        with torch.no_grad():
            self.model.scale.clamp_(min=MIN_SCALE)

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        loss, logits = self._loss(batch)
        self.log("val/loss", loss, prog_bar=True, batch_size=len(batch["labels"]), sync_dist=True)
        self.keep_validation(torch.sigmoid(logits.float()), batch)


def freeze_unused(backbone) -> None:
    """Freeze what the embedding never uses: a BERT-family pooler (the bi-encoder pools hidden states itself).
    DDP refuses trainable parameters that take no part in the loss ("parameters that were not used in
    producing the loss"); the pooler is still saved, so the export loads strictly."""
    pooler = getattr(backbone, "pooler", None)
    if pooler is not None:
        for p in pooler.parameters():
            p.requires_grad = False


@torch.inference_mode()
def init_affine(
    model: BiEncoder,
    encoder: TextEncoder,
    pairs: Sequence[LabelledPair],
    batch_size: int = 16,
    device: torch.device | str | None = None,
) -> None:
    """Start a and b at the logistic fit of the labels on the untrained cosines of ``pairs`` (a few dozen
    suffice), so the first steps train the encoder instead of moving two scalars a long way.

    Pairs of one label only (a judge that called every pair the same) have no fit, and pairs whose untrained cosine
    ranks them backwards (near-identical texts labelled different) no fit with a > 0: a and b keep their defaults,
    with a warning, and training goes on (as the cross-encoder kind's does on one-label data)."""
    if len({p.similar for p in pairs}) < 2:
        log.warning("the training pairs sampled to start a and b all carry one label: a, b keep their defaults")
        return
    was_training = model.training
    model.eval()
    cos = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        batch = encoder.pad(encoder.encode([p.generation_0 for p in chunk] + [p.generation_1 for p in chunk]))
        batch = {k: v.to(device) for k, v in batch.items()} if device is not None else batch
        cos.append(model(batch["input_ids"], batch["attention_mask"])[1].float().cpu())
    a, b = fit_affine(torch.cat(cos).numpy(), np.array([p.similar for p in pairs]))
    model.train(was_training)
    if a <= 0:  # e.g. near-identical texts labelled different: training ranks them right, a and b follow
        log.warning(
            "the untrained cosine ranks the %d pairs sampled to start a and b backwards (fitted a = %.3g): "
            "a, b keep their defaults",
            len(pairs),
            a,
        )
        return
    with torch.no_grad():
        model.scale.fill_(a)
        model.bias.fill_(b)
    model.train(was_training)
