"""The bi-encoder kind: text encoding, pooling, the pair loss, export/reload, scoring and the O(n) partition.

Tiny random models with real tokenizers (MiniLM's BERT vocabulary, the Qwen vocabulary): they check formats
and arithmetic, never quality.
"""

import json
import shutil

import lightning as L
import numpy as np
import pytest
import torch
from helpers import synthetic_pairs, write_jsonl
from safetensors.torch import load_file, save_file

from darling.classifier import BiEncoderClassifier, EmbeddingScorer, EquivalenceClassifier, TextEncoder, load_scorer
from darling.classifier.bi_encoder import BiEncoder
from darling.classifier.bi_encoder_training import BiEncoderModule, TextPairDataModule, cosent_loss
from darling.classifier.config import build_config
from darling.classifier.partition import partition_texts
from darling.classifier.train import train_classifier
from darling.core.encoders import pool
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer
from darling.core.schemas import LabelledPair


def bi_config(backbone, **overrides):
    base = dict(
        kind="bi-encoder",
        backbone=str(backbone),
        max_steps=3,
        batch_size=8,
        max_tokens_per_response=24,
        val_fraction=0.25,
        learning_rate=1e-3,
        freeze_layers=0,
        warmup_steps=0,
    )
    return build_config("cpu", overrides={**base, **overrides})


def test_text_encoder_wraps_each_backbone_as_it_embeds(minilm_path, qwen_tokenizer):
    bert = TextEncoder(load_tokenizer(minilm_path), 4)
    ids = bert.encode(["one two three four five six", "", "x [SEP] y"])
    assert ids[0][0] == 101 and ids[0][-1] == 102 and len(ids[0]) == 6 == bert.max_length  # truncated to 4 + 2
    assert ids[1] == [101, 102]  # an empty response is still a sequence
    assert ids[2].count(102) == 1  # a literal [SEP] in a response stays text
    qwen = TextEncoder(qwen_tokenizer, 8)
    ids = qwen.encode(["line one\n\nline two", "<|im_end|>"])
    assert ids[0][-1] == 151643 and 151644 not in ids[0]  # tokens then <|endoftext|>, no CLS
    assert qwen_tokenizer.decode(ids[0][:-1]) == "line one\n\nline two"  # newlines kept
    assert ids[1].count(151645) == 0 and ids[1][-1] == 151643


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_pooling_ignores_padding(pooling):
    torch.manual_seed(0)
    lengths = [5, 2, 7]
    hidden = torch.randn(3, 7, 4)
    mask = torch.tensor([[1] * n + [0] * (7 - n) for n in lengths])
    pooled = pool(hidden, mask, pooling)
    for row, n in enumerate(lengths):
        alone = pool(hidden[row : row + 1, :n], torch.ones(1, n, dtype=torch.long), pooling)
        torch.testing.assert_close(pooled[row : row + 1], alone)


def test_cosent_loss_by_hand():
    cos = torch.tensor([0.9, 0.2, 0.5, 0.4])
    labels = torch.tensor([1, 0, 1, 0])
    # equivalent: 0.9, 0.5; different: 0.2, 0.4 -> terms exp(20 * (neg - pos)) over the 4 (pos, neg) pairs
    terms = [np.exp(20 * (n - p)) for p in (0.9, 0.5) for n in (0.2, 0.4)]
    assert cosent_loss(cos, labels).item() == pytest.approx(np.log(1 + sum(terms)), rel=1e-5)
    assert cosent_loss(cos, torch.ones(4, dtype=torch.long)).item() == 0.0  # one label only: nothing to rank


def _bi_grads(backbone, batch_size, accumulate):
    """Gradients of one optimiser step with class weighting ON (weights 1/(2 * share) differ per class)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig.from_pretrained(backbone, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BiEncoder(BertModel(cfg), "mean", scale=5.0, bias=-2.0)
    pairs = [LabelledPair(f"p{i}", f"text number {i}", "same words here" * (1 + i % 2), int(i == 0)) for i in range(4)]
    dm = TextPairDataModule(
        TextEncoder(load_tokenizer(str(backbone)), 16), pairs, pairs[:2], batch_size, bucket_by_length=False
    )
    config = build_config("cpu", overrides={"kind": "bi-encoder", "warmup_steps": 0, "freeze_layers": 0})
    module = BiEncoderModule(model, config, weights=[4 / 6, 4 / 2])
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


def test_class_weighted_loss_is_independent_of_the_micro_batch_split(tiny_bert_dir):
    """1 x 4, 2 x 2 and 4 x 1 (the paper preset's batch-1 accumulation) give the same weighted gradient."""
    large = _bi_grads(tiny_bert_dir, batch_size=4, accumulate=1)
    assert "model.scale" in large and len(large) > 10
    for batch_size, accumulate in ((2, 2), (1, 4)):
        split = _bi_grads(tiny_bert_dir, batch_size=batch_size, accumulate=accumulate)
        for name in large:
            torch.testing.assert_close(split[name], large[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.fixture(scope="module")
def bert_bi_export(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("bi-bert")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(40))
    test = write_jsonl(tmp / "test.jsonl", synthetic_pairs(20, seed=5))
    return train_classifier(bi_config(tiny_bert_dir), data, tmp / "clf", progress=False, test=test)


def test_bi_encoder_export_reloads_strictly_with_identical_probabilities(bert_bi_export):
    result, out = bert_bi_export, bert_bi_export.output
    meta = json.loads((out / "darling.json").read_text())
    assert meta["kind"] == "bi-encoder" and meta["pooling"] == "mean" and meta["normalize"] is True
    assert meta["scale"] == pytest.approx(result.model.scale.item()) and meta["prefix_token_ids"] == [101]
    assert "chosen on these same pairs" in meta["validation_note"]
    assert meta["test_metrics"]["n"] == 20 and "chose nothing" in meta["test_note"]
    assert "intervals_95" in meta["test_metrics"] and "Held-out metrics" in (out / "README.md").read_text()
    # the packaged checks, at the threshold validation chose, in darling.json and the model card
    assert set(meta["checks"]) == {"noveltybench-heldout", "minimal-pairs", "item-pairs-heldout"}
    assert {c["classifier"]["threshold"] for c in meta["checks"].values()} == {meta["threshold"]}
    card = (out / "README.md").read_text()
    assert "## Packaged checks" in card and "NoveltyBench's DeBERTa-v3-large (published) | 0.812" in card
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling", "Normalize"]
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    assert json.loads((out / "sentence_bert_config.json").read_text())["max_seq_length"] == 26

    reloaded = load_scorer(out)  # dispatches on the export's kind
    assert isinstance(reloaded, BiEncoderClassifier) and reloaded.threshold == pytest.approx(meta["threshold"])
    live = BiEncoderClassifier(result.model, reloaded.encoder)
    pairs = [("A story about apples.", "A tale of apples."), ("", "x"), ("long " * 40, "")]
    np.testing.assert_allclose(reloaded.prob_equivalent(pairs), live.prob_equivalent(pairs), atol=1e-6)
    np.testing.assert_allclose(reloaded.prob_equivalent(pairs), reloaded.prob_equivalent([(b, a) for a, b in pairs]))


def test_a_bi_encoder_embeds_each_text_once_and_keeps_it(bert_bi_export, monkeypatch):
    """An RL run asks about the same short answers step after step: each text goes through the encoder once, its
    embedding is kept (by threshold copies too), and the probabilities are those of embedding it afresh."""
    scorer = load_scorer(bert_bi_export.output)
    groups = [["A story about apples.", "A tale of apples.", "A story about apples."], ["pears", "plums"]]
    fresh = [m.copy() for m in scorer.prob_matrices(groups)]
    assert scorer.last_embedded == 4
    seen: list[int] = []
    encode = scorer.encoder.encode
    monkeypatch.setattr(scorer.encoder, "encode", lambda texts: seen.append(len(texts)) or encode(texts))
    again = scorer.with_threshold(0.3).prob_matrices([*groups, ["plums", "figs"]])
    assert seen == [1] and all(np.array_equal(a, b) for a, b in zip(again, fresh, strict=False))  # only "figs"
    _, stats = partition_texts(groups, scorer)
    assert stats.texts_embedded == 0  # every text of the batch was kept
    monkeypatch.setattr(type(scorer), "CACHE_TEXTS", 2)  # a bounded cache keeps the newest texts
    scorer.prob_matrices([["one", "two", "three"]])
    assert list(scorer.cache) == ["two", "three"]


def test_pairs_of_one_label_train_with_default_affine(tmp_path, tiny_bert_dir):
    """A judge that called every pair the same (SmolLM2 on CHAMP) gives one label: the bi-encoder still
    trains and exports, as the cross-encoder does, with a and b left at their defaults (no fit exists)."""
    rows = [{**r, "similar": 1} for r in synthetic_pairs(16)]
    data = write_jsonl(tmp_path / "same.jsonl", rows)
    result = train_classifier(bi_config(tiny_bert_dir, max_steps=1), data, tmp_path / "clf", val=data, progress=False)
    meta = json.loads((result.output / "darling.json").read_text())
    assert meta["kind"] == "bi-encoder" and meta["validation_metrics"]["n"] > 0


def test_bi_encoder_strict_load_rejects_missing_weights(bert_bi_export, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(bert_bi_export.output, broken, ignore=shutil.ignore_patterns("training"))
    weights = load_file(broken / "model.safetensors")
    name = next(k for k in weights if "encoder.layer.1" in k)
    del weights[name]
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(UserInputError, match="weights do not match"):
        BiEncoderClassifier.from_pretrained(broken)
    with pytest.raises(UserInputError, match="a bi-encoder export, which EquivalenceClassifier does not load"):
        EquivalenceClassifier.from_pretrained(broken)  # the name says cross-encoder: it loads no other kind


def test_qwen_bi_encoder_pools_the_last_token_and_exports_for_vllm(tmp_path, tiny_qwen_dir):
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(24))
    result = train_classifier(bi_config(tiny_qwen_dir, max_steps=2), data, tmp_path / "clf", progress=False)
    meta = json.loads((result.output / "darling.json").read_text())
    assert meta["pooling"] == "last" and meta["suffix_token_ids"] == [151643] and meta["prefix_token_ids"] == []
    assert json.loads((result.output / "config.json").read_text())["architectures"] == ["Qwen3ForCausalLM"]
    clf = BiEncoderClassifier.from_pretrained(result.output)
    ids = clf.encoder.encode(["same text", "same text and a longer tail"])
    with torch.no_grad():  # last-token pooling reads the <|endoftext|> state, whatever the padding
        batch = clf.encoder.pad(ids)
        hidden = clf.model.backbone(**batch).last_hidden_state
        expected = torch.nn.functional.normalize(hidden[0, len(ids[0]) - 1], dim=-1)
    np.testing.assert_allclose(clf.embed_ids(ids)[0], expected.numpy(), atol=1e-6)


class TableScorer(EmbeddingScorer):
    """A stand-in bi-encoder with a fixed embedding per text (first character picks the direction)."""

    def __init__(self):
        super().__init__(encoder=None, scale=10.0, bias=-5.0)
        self.calls, self.embedded = 0, 0

    def embed(self, texts):  # encoder-free: embeddings straight from a table (no cache: each call embeds its texts)
        self.calls += 1
        self.embedded += len(set(texts))
        self.last_embedded = len(set(texts))
        angle = {c: i * 0.7 for i, c in enumerate("abcdefgh")}
        return np.array([[np.cos(angle[t[0]]), np.sin(angle[t[0]])] for t in texts])


def test_prob_matrices_equal_pairwise_probabilities_with_one_embedding_call():
    groups = [["a1", "b1", "a2", "c1"], ["d1", "d2"], ["e1"]]
    scorer = TableScorer()
    matrices = scorer.prob_matrices(groups)
    assert scorer.calls == 1 and scorer.embedded == 7
    for g, m in zip(groups, matrices, strict=True):
        assert m.shape == (len(g), len(g))
        for i in range(len(g)):
            for j in range(len(g)):
                assert m[i, j] == pytest.approx(scorer.prob_equivalent([(g[i], g[j])])[0])


def test_bi_encoder_partition_equals_deciding_every_pair():
    rng = np.random.default_rng(0)
    groups = [["".join(rng.choice(list("abcdefgh"))) + str(k) for k in range(rng.integers(1, 9))] for _ in range(30)]
    for threshold in (0.2, 0.5, 0.9):
        scorer = TableScorer().with_threshold(threshold)
        classes, stats = partition_texts(groups, scorer)
        every_pair, _ = partition_texts(groups, scorer.is_equivalent, prune=False)  # a plain callable
        assert classes == every_pair
        assert stats.texts_embedded == len({t for g in groups for t in g}) and stats.rounds == 1
        assert stats.pairs_decided == stats.pairs_total == sum(len(g) * (len(g) - 1) // 2 for g in groups)
    assert len({tuple(c) for c in classes}) > 3  # the table splits groups in several ways


def test_zero_shot_fits_the_cosine_map_and_threshold_on_the_fit_pairs(tiny_bert_dir):
    from sklearn.linear_model import LogisticRegression

    from darling.classifier.zero_shot import zero_shot_classifier

    pairs = [LabelledPair(**{k: v for k, v in r.items()}) for r in synthetic_pairs(30)]
    clf = zero_shot_classifier(str(tiny_bert_dir), pairs, max_tokens_per_response=16)
    emb = clf.embed([t for p in pairs for t in p.texts])
    cos = np.einsum("ij,ij->i", emb[0::2], emb[1::2])
    ref = LogisticRegression(C=1e6, max_iter=1000).fit(cos.reshape(-1, 1), [p.similar for p in pairs])
    assert clf.scale == pytest.approx(ref.coef_[0, 0], rel=1e-3) and clf.bias == pytest.approx(
        ref.intercept_[0], rel=1e-3
    )
    probs = clf.prob_equivalent([p.texts for p in pairs])
    np.testing.assert_allclose(probs, ref.predict_proba(cos.reshape(-1, 1))[:, 1], atol=1e-4)
    assert 0.0 < clf.threshold < 1.0


def test_zero_shot_default_budget_fits_a_roberta_family_encoder(tmp_path, minilm_path):
    """MPNet/RoBERTa number positions from padding_idx + 1: at the default budget an over-long text must still
    fit (the bare positions-minus-two budget indexed past the position table: IndexError)."""
    from transformers import AutoTokenizer, MPNetConfig, MPNetModel

    from darling.classifier.zero_shot import zero_shot_classifier

    torch.manual_seed(0)
    config = MPNetConfig(
        vocab_size=30527,
        hidden_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=34,
    )
    MPNetModel(config).save_pretrained(tmp_path / "mpnet")
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(tmp_path / "mpnet")
    long_text = " ".join(f"word{i}" for i in range(200))
    pairs = [LabelledPair("p", long_text, "short", 1), LabelledPair("q", "alpha beta", long_text, 0)]
    clf = zero_shot_classifier(str(tmp_path / "mpnet"), pairs)
    assert clf.encoder.max_tokens_per_response == 30
    assert clf.prob_equivalent([(long_text, long_text)]).shape == (1,)


def test_a_backwards_fit_leaves_a_and_b_at_defaults_and_a_stays_positive(minilm_path):
    """Issue 48: item-rule pairs (near-identical sentences naming different items, labelled different) made the
    fit on a fold's 64 sampled pairs a = -2.3, and a learns too slowly to turn: that fold's model ranked held-out human
    pairs backwards (AUC 0.34). A backwards fit now leaves the defaults, and training never takes a below MIN_SCALE."""
    from transformers import AutoModel

    from darling.classifier.bi_encoder import MIN_SCALE, fit_affine
    from darling.classifier.bi_encoder_training import init_affine

    items = ["apples", "pears", "plums", "figs", "limes", "dates"]
    different = [
        LabelledPair("p", f"My favourite fruit is {a}.", f"My favourite fruit is {b}.", 0)
        for a, b in zip(items, items[1:], strict=False)
    ]
    same = [
        LabelledPair("p", "Paris.", "The capital of France is the city of Paris, on the Seine.", 1),
        LabelledPair("p", "Seven.", "The answer is 7, one more than six.", 1),
        LabelledPair("p", "No.", "I do not think that is the case at all.", 1),
    ]
    model = BiEncoder(AutoModel.from_pretrained(minilm_path), "mean")
    encoder = TextEncoder(load_tokenizer(str(minilm_path)), 64)
    cos = [model(**encoder.pad(encoder.encode([p.generation_0, p.generation_1])))[1].item() for p in different + same]
    a, _ = fit_affine(np.array(cos), np.array([p.similar for p in different + same]))
    assert a < 0  # the untrained cosine ranks these pairs backwards
    init_affine(model, encoder, different + same)
    assert (model.scale.item(), model.bias.item()) == (20.0, -10.0)

    config = build_config("cpu", overrides={"kind": "bi-encoder", "freeze_layers": 0})
    module = BiEncoderModule(model, config)
    with torch.no_grad():
        model.scale.fill_(-2.3)
    module.on_train_batch_end(None, None, 0)
    assert model.scale.item() == pytest.approx(MIN_SCALE)
