"""FSDP's activation checkpointing on a decoder backbone with padded micro-batches (issue 36, defect 5).

Under ``strategy fsdp`` the module skips transformers' gradient checkpointing (FSDP wraps each decoder layer in
torch's ``CheckpointWrapper`` instead), and transformers' ``gradient_checkpointing_enable`` is what turned the KV
cache off. With the cache on, the layer re-run in backward appends its keys to the cache a second time (1018 keys
became 2036 on an H100) and the padded batch's attention mask no longer fits. FSDP itself needs CUDA, but the
checkpointing is Lightning's own helper applied to the same layers: that part runs here on the CPU.
"""

from __future__ import annotations

import pytest
import torch
from lightning.fabric.strategies.fsdp import _setup_activation_checkpointing

from darling.classifier.config import build_config
from darling.classifier.train import _strategy, bi_encoder_parts, cross_encoder_parts
from darling.core.local_models import load_tokenizer
from darling.core.schemas import LabelledPair

PAIRS = [
    LabelledPair("p0", "short", "also short", 1),
    LabelledPair("p1", "a much longer first response, with many more words in it", "and a long second one too", 0),
]


@pytest.mark.parametrize("kind", ["cross-encoder", "bi-encoder"])
def test_fsdp_activation_checkpointing_trains_on_a_padded_batch(tiny_qwen_dir, kind):
    # The paper preset (fsdp, gradient checkpointing) with a micro-batch of 2: the batch gets padded.
    config = build_config(
        "paper",
        overrides=dict(kind=kind, backbone=str(tiny_qwen_dir), batch_size=2, max_tokens_per_response=16),
    )
    tokenizer = load_tokenizer(str(tiny_qwen_dir))
    if kind == "cross-encoder":
        parts = cross_encoder_parts(config, str(tiny_qwen_dir), tokenizer, PAIRS, PAIRS)
    else:
        parts = bi_encoder_parts(config, str(tiny_qwen_dir), tokenizer, PAIRS, PAIRS, resume=True)
    strategy = _strategy(config, parts.hf_model)  # the FSDPStrategy training builds, with its checkpointing policy
    _setup_activation_checkpointing(parts.module, strategy._activation_checkpointing_kwargs)
    layers = parts.hf_model.base_model.layers
    assert all(type(layer).__name__ == "CheckpointWrapper" for layer in layers)

    dm = parts.datamodule
    dm.setup("fit")
    batch = dm.collate([dm.train_set[0], dm.train_set[1]])
    assert not batch["attention_mask"].all()  # padded: the mask is an explicit tensor, not causal-only
    loss, _ = parts.module._loss(batch)
    loss.backward()  # before the fix: "The size of tensor a (..) must match the size of tensor b (..)"
    grads = [p.grad for p in layers.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)


def test_training_modules_never_build_a_kv_cache(tiny_qwen_dir):
    """A training forward of either kind returns no cache: nothing is appended twice when a layer is re-run."""
    config = build_config("paper", overrides=dict(backbone=str(tiny_qwen_dir), max_tokens_per_response=16))
    tokenizer = load_tokenizer(str(tiny_qwen_dir))
    parts = cross_encoder_parts(config, str(tiny_qwen_dir), tokenizer, PAIRS, PAIRS)
    assert parts.hf_model.config.use_cache is False
    parts.datamodule.setup("fit")
    batch = parts.datamodule.collate([parts.datamodule.train_set[0]])
    out = parts.module.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    assert getattr(out, "cache", None) is None and getattr(out, "past_key_values", None) is None
