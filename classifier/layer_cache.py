"""Frozen lower layers computed once: the bi-encoder's CPU training speed-up.

With the embeddings and the first k layers frozen, their output for a text never changes during training,
so it is computed once per text (no gradient, eval mode) and each step runs only the trainable top layers.
On 2 CPU cores this removes the frozen layers' forward pass from every step of every epoch. BERT-family
encoders only (MiniLM, BERT, bge): their layers take (hidden states, attention mask) and nothing else;
``tests/classifier/test_layer_cache.py`` checks cached + top layers equals the full forward pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import torch
from torch import nn

from darling.classifier.encoding import pad_ids

if TYPE_CHECKING:
    from transformers import BertModel

CACHEABLE_MODEL_TYPES = {"bert"}


def can_cache(backbone: nn.Module, frozen_layers: int) -> bool:
    return getattr(backbone.config, "model_type", "") in CACHEABLE_MODEL_TYPES and frozen_layers > 0


@torch.inference_mode()
def frozen_states(
    backbone: nn.Module,
    frozen_layers: int,
    input_ids: Sequence[Sequence[int]],
    pad_id: int,
    batch_size: int = 16,
    device: torch.device | str | None = None,
) -> list[torch.Tensor]:
    """Hidden states after the embeddings and the first ``frozen_layers`` layers, one (length, hidden) tensor
    per text (padding removed) on the CPU, computed longest-first in batches on ``device`` (default: where
    the backbone is). The data module builds the cache before the Trainer moves the model, so without ``device`` a
    GPU run computed the frozen layers on its CPU (measured on an H200: the whole fit at CPU speed)."""

    home = next(backbone.parameters()).device
    compute = torch.device(device) if device is not None else home
    was_training = backbone.training
    out: list[torch.Tensor | None] = [None] * len(input_ids)
    order = sorted(range(len(input_ids)), key=lambda i: -len(input_ids[i]))
    try:
        backbone.eval().to(compute)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            batch = {k: v.to(compute) for k, v in pad_ids([input_ids[i] for i in idx], pad_id).items()}
            embeddings = _bert(backbone).embeddings(input_ids=batch["input_ids"])
            hidden = _layers(backbone, embeddings, batch["attention_mask"], 0, frozen_layers)
            for row, i in enumerate(idx):
                out[i] = hidden[row, : len(input_ids[i])].to("cpu", copy=True)
    finally:  # the Trainer places the model itself, as it would have without a cache
        backbone.to(home).train(was_training)
    return cast("list[torch.Tensor]", out)  # every slot filled: ``order`` is a permutation of the texts


def top_layers(backbone: nn.Module, frozen_layers: int, hidden: torch.Tensor, attention_mask: torch.Tensor):
    """The trainable layers above the cache: the encoder's last hidden state from cached states."""
    return _layers(backbone, hidden, attention_mask, frozen_layers, len(_bert(backbone).encoder.layer))


def _layers(backbone: nn.Module, hidden: torch.Tensor, attention_mask: torch.Tensor, start: int, stop: int):
    # The same mask BertModel builds for its encoder (transformers.masking_utils, public).
    from transformers.masking_utils import create_bidirectional_mask

    bert = _bert(backbone)
    mask = create_bidirectional_mask(config=bert.config, inputs_embeds=hidden, attention_mask=attention_mask)
    for layer in bert.encoder.layer[start:stop]:
        hidden = layer(hidden, mask)
    return hidden


def _bert(backbone: nn.Module) -> BertModel:
    """The backbone as what it is here: a BERT-family encoder (``can_cache`` admits no other)."""
    return cast("BertModel", backbone)


def pad_states(states: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
    """Right-pad cached states into (batch, longest, hidden) with the matching attention mask."""
    width = max(s.shape[0] for s in states)
    hidden = states[0].new_zeros((len(states), width, states[0].shape[1]))
    mask = torch.zeros((len(states), width), dtype=torch.long)
    for row, s in enumerate(states):
        hidden[row, : s.shape[0]] = s
        mask[row, : s.shape[0]] = 1
    return {"hidden": hidden, "attention_mask": mask}
