"""Caching the frozen lower layers (bi-encoder training on CPU) computes exactly what the full model does."""

import lightning as L
import pytest
import torch

from darling.classifier.bi_encoder import BiEncoder
from darling.classifier.bi_encoder_training import BiEncoderModule, TextPairDataModule
from darling.classifier.config import build_config
from darling.classifier.encoding import TextEncoder
from darling.classifier.layer_cache import can_cache, frozen_states, pad_states, top_layers
from darling.core.local_models import load_tokenizer
from darling.core.schemas import LabelledPair


@pytest.mark.parametrize("frozen", [1, 3, 5])
def test_cached_states_plus_top_layers_equal_the_full_forward(minilm_path, frozen):
    from transformers import AutoModel

    backbone = AutoModel.from_pretrained(minilm_path).eval()
    encoder = TextEncoder(load_tokenizer(minilm_path), 40)
    ids = encoder.encode(["a short one", "", "a much longer response " * 12, "line\n\nbreaks and ünïcode"])
    states = frozen_states(backbone, frozen, ids, encoder.pad_id, batch_size=3)  # two batches, longest first
    assert [s.shape[0] for s in states] == [len(i) for i in ids]
    batch = pad_states(states)
    with torch.no_grad():
        cached = top_layers(backbone, frozen, batch["hidden"], batch["attention_mask"])
        full = backbone(**encoder.pad(ids)).last_hidden_state
    mask = batch["attention_mask"].bool()
    torch.testing.assert_close(cached[mask], full[mask], rtol=1e-4, atol=1e-5)


def _first_step_grads(backbone_dir, cache: bool):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig.from_pretrained(backbone_dir, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BiEncoder(BertModel(cfg), "mean", scale=5.0, bias=-2.0)
    pairs = [LabelledPair(f"p{i}", f"text number {i} " * (1 + i), "same words here", i % 2) for i in range(4)]
    config = build_config("cpu", overrides={"kind": "bi-encoder", "warmup_steps": 0, "freeze_layers": 1})
    module = BiEncoderModule(model, config)
    assert can_cache(model.backbone, 1)
    dm = TextPairDataModule(
        TextEncoder(load_tokenizer(str(backbone_dir)), 16),
        pairs,
        pairs[:2],
        4,
        cache=(model.backbone, 1) if cache else None,
    )
    grads = {}

    class Grab(L.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            grads.update({n: p.grad.clone() for n, p in pl_module.named_parameters() if p.grad is not None})

    L.Trainer(
        max_steps=1,
        callbacks=[Grab()],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        limit_val_batches=0,
        accelerator="cpu",
    ).fit(module, datamodule=dm)
    return grads


def test_training_on_cached_states_gives_the_same_gradients(tiny_bert_dir):
    cached, plain = _first_step_grads(tiny_bert_dir, True), _first_step_grads(tiny_bert_dir, False)
    assert cached.keys() == plain.keys() and not any("layer.0." in n for n in plain)  # layer 0 frozen
    assert any("layer.1." in n for n in plain) and "model.scale" in plain
    for name in plain:
        torch.testing.assert_close(cached[name], plain[name], rtol=1e-4, atol=1e-6, msg=name)


def test_the_cache_runs_on_the_trainers_device(tiny_bert_dir):
    """Setup builds the cache before the Trainer moves the model: it must compute where the Trainer will train (a
    GPU run computed on its CPU before; here `meta` stands in for the GPU)."""
    from types import SimpleNamespace

    from transformers import BertConfig, BertModel

    backbone = BertModel(BertConfig.from_pretrained(tiny_bert_dir)).train()
    seen = []
    backbone.embeddings.register_forward_pre_hook(
        lambda _, args, kwargs: seen.append(kwargs["input_ids"].device.type), with_kwargs=True
    )
    encoder = TextEncoder(load_tokenizer(str(tiny_bert_dir)), 16)
    pairs = [LabelledPair("p", "one text here", "another text", 1), LabelledPair("q", "a", "b c", 0)]
    dm = TextPairDataModule(encoder, pairs, pairs, 2, cache=(backbone, 1))
    dm.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device("meta")))  # the device only
    with pytest.raises((NotImplementedError, RuntimeError), match="meta"):  # meta tensors hold no values to cache
        dm.setup("fit")
    assert seen == ["meta"]  # the first batch went to the Trainer's device (a CPU run: test_training_on_cached_...)
