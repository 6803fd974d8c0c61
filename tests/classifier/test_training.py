"""The training loop on tiny models: loss scaling, export/reload parity, resume, strict loading."""

import json
from dataclasses import replace

import lightning as L
import pytest
import torch
from helpers import synthetic_pairs, write_jsonl
from safetensors.torch import load_file, save_file

from darling.classifier.config import build_config
from darling.classifier.encoding import PairEncoder
from darling.classifier.lightning_data import PairDataModule
from darling.classifier.lightning_module import PairClassifierModule, class_weights, warmup_cosine
from darling.classifier.scoring import EquivalenceClassifier
from darling.classifier.train import release_training_state, train_classifier
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer
from darling.core.schemas import LabelledPair


def _grads_after_one_step(backbone, batch_size, accumulate, labels=(0, 1, 0, 1), weighted=False):
    """The gradients of one optimiser step, on one thread: summed over micro batches or in one, the same sums must
    agree to 1e-6, and two threads reduce in an order that varies with the machine's load (measured: a 2-thread run
    beside other work missed by more, in token_type_embeddings)."""

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _one_step(backbone, batch_size, accumulate, labels, weighted)
    finally:
        torch.set_num_threads(threads)


def _one_step(backbone, batch_size, accumulate, labels, weighted):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    cfg = BertConfig.from_pretrained(backbone, num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForSequenceClassification(cfg)
    pairs = [LabelledPair(f"p{i}", f"text number {i}", "same words here", y) for i, y in enumerate(labels)]
    enc = PairEncoder(load_tokenizer(str(backbone)), 16)
    dm = PairDataModule(enc, pairs, pairs[:2], batch_size, both_orders=False, bucket_by_length=False, shuffle=False)
    config = build_config("cpu-cross", overrides={"class_weighted": weighted, "warmup_steps": 0, "freeze_layers": 0})
    weights = class_weights(labels.count(0), labels.count(1)) if weighted else None
    module = PairClassifierModule(model, config, weights)
    grads = {}

    class Grab(L.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            grads.update({n: p.grad.clone() for n, p in pl_module.named_parameters() if p.grad is not None})

    trainer = L.Trainer(
        max_steps=1,
        accumulate_grad_batches=accumulate,
        callbacks=[Grab()],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        limit_val_batches=0,
        accelerator="cpu",
        use_distributed_sampler=False,
    )
    trainer.fit(module, datamodule=dm)
    return grads


def test_training_state_is_released_before_the_scoring_copy(tiny_bert_dir):
    """After fit, the optimiser's state (Adam: two tensors per weight) and the gradients are freed before calibration
    makes its scoring copy: under FSDP Lightning leaves them on the GPU, and beside them the paper's 4B classifier ran
    out of memory on an 80 GiB H100 (measured, docs/measurements.md). Here a real fit on the CPU."""
    from transformers import BertConfig, BertForSequenceClassification

    pairs = [LabelledPair(f"p{i}", f"text number {i}", "same words here", i % 2) for i in range(4)]
    dm = PairDataModule(PairEncoder(load_tokenizer(str(tiny_bert_dir)), 16), pairs, pairs[:2], 2, both_orders=False)
    config = build_config("cpu-cross", overrides={"warmup_steps": 0, "freeze_layers": 0})
    module = PairClassifierModule(BertForSequenceClassification(BertConfig.from_pretrained(tiny_bert_dir)), config)
    trainer = L.Trainer(
        max_steps=1, logger=False, enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0
    )
    trainer.fit(module, datamodule=dm)
    for p in module.parameters():  # as a step cut short would leave them
        p.grad = torch.ones_like(p)
    assert sum(len(o.state) for o in trainer.optimizers) > 10
    release_training_state(trainer, module)
    assert [len(o.state) for o in trainer.optimizers] == [0]
    assert all(p.grad is None for p in module.parameters())


def test_gradient_accumulation_equals_one_large_batch(tiny_bert_dir):
    accumulated = _grads_after_one_step(tiny_bert_dir, batch_size=2, accumulate=2)
    large = _grads_after_one_step(tiny_bert_dir, batch_size=4, accumulate=1)
    assert accumulated.keys() == large.keys() and len(large) > 10
    for name in large:
        torch.testing.assert_close(accumulated[name], large[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize(("batch_size", "accumulate"), [(1, 4), (2, 2)])
def test_class_weighted_step_does_not_depend_on_micro_batching(tiny_bert_dir, batch_size, accumulate):
    """Three "different" pairs and one "equivalent" (weights 2/3 and 2): the weighted loss of an optimiser step
    is the same split into micro batches (the paper preset: 1 x 64 accumulation) as in one batch. Cross-entropy's
    own weighted mean divides by each micro batch's weight sum, so at batch size 1 every weight cancels."""
    labels = (0, 0, 0, 1)
    split = _grads_after_one_step(tiny_bert_dir, batch_size, accumulate, labels, weighted=True)
    large = _grads_after_one_step(tiny_bert_dir, 4, 1, labels, weighted=True)
    unweighted = _grads_after_one_step(tiny_bert_dir, 4, 1, labels, weighted=False)
    name = "model.classifier.weight"
    assert not torch.allclose(large[name], unweighted[name], rtol=1e-2)  # the weights do something
    for name in large:
        torch.testing.assert_close(split[name], large[name], rtol=1e-4, atol=1e-6, msg=name)


def test_schedule_warms_up_then_decays_to_floor():
    lrs = [warmup_cosine(s, warmup=10, total=80, floor=0.1) for s in range(81)]
    assert lrs[0] < lrs[5] < lrs[9] < 1.0 and lrs[10] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))
    assert lrs[80] == pytest.approx(0.1)


@pytest.fixture(scope="module")
def trained_tiny_qwen(tmp_path_factory, tiny_qwen_dir):
    """Train the tiny random Qwen3 (real Qwen tokenizer, paper input format) for a few steps."""
    tmp = tmp_path_factory.mktemp("train")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(48))
    cfg = build_config(
        "cpu-cross",
        overrides=dict(
            backbone=str(tiny_qwen_dir),
            max_steps=4,
            batch_size=8,
            max_tokens_per_response=24,
            checkpoint_every_n_steps=2,
            val_fraction=0.25,
            symmetric=False,
            learning_rate=1e-3,
        ),
    )
    result = train_classifier(cfg, data, tmp / "clf", progress=False)
    return cfg, data, result


def test_export_reloads_strictly_with_identical_logits(trained_tiny_qwen, qwen_tokenizer):
    _, _, result = trained_tiny_qwen
    out = result.output
    meta = json.loads((out / "darling.json").read_text())
    assert (meta["cls_token_id"], meta["sep_token_id"], meta["pad_token_id"]) == (151644, 151645, 151643)
    assert meta["max_tokens_per_response"] == 24 and len(meta["train_data_sha256"]) == 64
    assert {"accuracy", "f1", "roc_auc", "ece", "threshold"} <= meta["validation_metrics"].keys()
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "different", "1": "equivalent"}
    assert (out / "model.safetensors").exists() and (out / "README.md").exists()

    reloaded = EquivalenceClassifier.from_pretrained(out)
    live = EquivalenceClassifier(result.model, reloaded.encoder)
    ids = reloaded.encoder.encode_pairs([("A story about apples.", "A tale of apples."), ("", "x"), ("long " * 40, "")])
    torch.testing.assert_close(
        torch.from_numpy(reloaded.logits_for_ids(ids)), torch.from_numpy(live.logits_for_ids(ids))
    )
    assert reloaded.threshold == pytest.approx(meta["threshold"])
    assert reloaded.is_equivalent([("a", "b")]).dtype == bool


def test_resume_continues_from_last_checkpoint(trained_tiny_qwen):
    cfg, data, first = trained_tiny_qwen
    assert first.global_step == 4
    resumed = train_classifier(replace(cfg, max_steps=6), data, first.output, resume=True, progress=False)
    assert resumed.global_step == 6


def test_resume_without_checkpoint_is_a_user_error(tmp_path, trained_tiny_qwen):
    cfg, data, _ = trained_tiny_qwen
    with pytest.raises(UserInputError, match="no checkpoint"):
        train_classifier(cfg, data, tmp_path / "fresh", resume=True, progress=False)


def test_strict_load_rejects_missing_weights(trained_tiny_qwen, tmp_path):
    import shutil

    _, _, result = trained_tiny_qwen
    broken = tmp_path / "broken"
    shutil.copytree(result.output, broken, ignore=shutil.ignore_patterns("training"))
    weights = load_file(broken / "model.safetensors")
    del weights["score.weight"]
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(UserInputError, match="score.weight"):
        EquivalenceClassifier.from_pretrained(broken)


class _RecordBatches(L.Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.seen.append(tuple(batch["input_ids"][:, 2].tolist()))  # the pair number i


def _fit(backbone, workdir, max_steps, resume):
    from darling.classifier.backbones import load_sequence_classifier
    from darling.classifier.train import build_trainer

    torch.manual_seed(0)
    pairs = [LabelledPair(f"p{i}", f"text {i} " * (1 + i % 7), f"other {i}", i % 2) for i in range(40)]
    enc = PairEncoder(load_tokenizer(str(backbone)), 16)
    cfg = build_config(
        "cpu-cross",
        overrides={"backbone": str(backbone), "max_steps": max_steps, "batch_size": 4, "checkpoint_every_n_steps": 1},
    )
    model = load_sequence_classifier(str(backbone), enc.special.pad_id)
    dm = PairDataModule(enc, pairs, pairs[:4], cfg.batch_size, both_orders=False, seed=0)
    trainer = build_trainer(cfg, model, workdir, progress=False)
    recorder = _RecordBatches()
    trainer.callbacks.append(recorder)
    ckpt = workdir / "checkpoints" / "last.ckpt"
    trainer.fit(PairClassifierModule(model, cfg), datamodule=dm, ckpt_path=str(ckpt) if resume else None)
    return recorder.seen


@pytest.mark.parametrize("stop_at", [4, 13])  # mid first epoch (10 batches/epoch); mid second epoch
def test_mid_epoch_resume_neither_repeats_nor_skips_batches(tiny_bert_dir, tmp_path, stop_at):
    straight = _fit(tiny_bert_dir, tmp_path / "a", 16, resume=False)
    first = _fit(tiny_bert_dir, tmp_path / "b", stop_at, resume=False)
    rest = _fit(tiny_bert_dir, tmp_path / "b", 16, resume=True)
    assert len(straight) == 16 and straight[10:] != straight[:6]  # epoch 2 is reshuffled
    assert first + rest == straight


def test_identity_pooler_passes_cls_through_and_head_params_get_head_lr(minilm_path):
    from darling.classifier.backbones import load_sequence_classifier
    from darling.classifier.lightning_module import identity_pooler, is_head_param

    model = load_sequence_classifier(minilm_path, pad_token_id=0).eval()
    assert identity_pooler(model)
    ids = torch.tensor([[101, 7592, 102, 2088, 102]])
    with torch.no_grad():
        out = model.bert(input_ids=ids)
    torch.testing.assert_close(out.pooler_output, torch.tanh(out.last_hidden_state[:, 0]))
    assert is_head_param("classifier.weight") and not is_head_param("bert.pooler.dense.weight")
    assert is_head_param("score.weight") and not is_head_param("bert.encoder.layer.5.output.dense.weight")


def test_bf16_mixed_precision_trains_in_bf16_and_is_calibrated_and_scored_in_it(tmp_path, tiny_bert_dir):
    """The paper preset's precision flag, on CPU: the export keeps the fp32 master weights and records bfloat16, the
    precision it computed (and chose its threshold) in; loading it scores in bf16, as serve-classifier serves it."""
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(24))
    cfg = build_config(
        "cpu-cross",
        overrides=dict(
            backbone=str(tiny_bert_dir),
            max_steps=2,
            batch_size=8,
            max_tokens_per_response=12,
            precision="bf16-mixed",
            freeze_layers=0,
            val_fraction=0.25,
        ),
    )
    result = train_classifier(cfg, data, tmp_path / "clf", progress=False)
    meta = json.loads((result.output / "darling.json").read_text())
    assert meta["dtype"] == "bfloat16"
    from safetensors import safe_open

    with safe_open(str(result.output / "model.safetensors"), "pt") as weights:
        assert weights.get_tensor(next(iter(weights.keys()))).dtype == torch.float32  # the master weights, whole
    clf = EquivalenceClassifier.from_pretrained(result.output)
    assert next(clf.model.parameters()).dtype == torch.bfloat16 and clf.dtype == "bfloat16"
    probs = clf.prob_equivalent([("a", "b"), ("c", "")])
    assert ((probs >= 0) & (probs <= 1)).all()
