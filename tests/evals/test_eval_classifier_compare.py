"""`darling eval classifier --compare DIR2`: two real exports (tiny BERT + the real MiniLM tokenizer, trained a
few steps each, differently) scored on the same labelled pairs, side by side."""

import json

import pytest
from helpers import count_export_reads, darling, darling_in_process, synthetic_pairs, write_jsonl

from darling.classifier.config import build_config
from darling.classifier.train import train_classifier
from darling.evals.classifier import evaluate_classifier
from darling.evals.config import ClassifierEvalConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_exports(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("compare")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(32))
    exports = []
    # A cross-encoder beside a bi-encoder: --compare takes either kind on either side.
    for name, preset, steps, lr in (("a", "cpu-cross", 2, 1e-4), ("b", "cpu", 6, 1e-3)):
        cfg = build_config(
            preset,
            overrides=dict(
                backbone=str(tiny_bert_dir),
                max_steps=steps,
                learning_rate=lr,
                warmup_steps=0,
                batch_size=8,
                max_tokens_per_response=32,
                freeze_layers=0,
            ),
        )
        exports.append(train_classifier(cfg, data, tmp / name, progress=False).output)
    return exports


def test_compare_writes_both_metric_sets_side_by_side(tmp_path, two_exports):
    first, second = two_exports
    data = write_jsonl(tmp_path / "heldout.jsonl", synthetic_pairs(24, seed=3))
    alone = ClassifierEvalConfig(model=first, data=str(data), output=tmp_path / "alone", baselines=False)
    alone = evaluate_classifier(alone)
    flags = ["--model", first, "--compare", second, "--data", data, "--output", tmp_path / "e", "--no-baselines"]
    result = darling("eval", "classifier", *flags)
    assert result.returncode == 0, result.stderr
    assert f"{first}: 24 pairs" in result.stdout and f"{second}: 24 pairs" in result.stdout

    out = tmp_path / "e"
    metrics = json.loads((out / "metrics.json").read_text())
    compared = metrics.pop("compare")
    assert metrics == alone  # comparing leaves the first classifier's metrics untouched
    keys = {"accuracy", "balanced_accuracy", "precision", "recall", "f1", "roc_auc", "ece", "threshold", "n"}
    assert keys <= compared.keys() and compared["n"] == 24 and compared["model"] == str(second)
    kinds = [json.loads((d / "darling.json").read_text())["kind"] for d in two_exports]
    assert kinds == ["cross-encoder", "bi-encoder"]
    assert compared == json.loads((out / "compare" / "metrics.json").read_text())
    threshold = json.loads((second / "darling.json").read_text())["threshold"]
    assert compared["threshold"] == pytest.approx(threshold)  # judged at its own threshold
    assert any(metrics[k] != compared[k] for k in ("roc_auc", "ece", "f1", "accuracy"))
    probs = [
        [json.loads(line)["prob_equivalent"] for line in (d / "predictions.jsonl").read_text().splitlines()]
        for d in (out, out / "compare")
    ]
    assert probs[0] != probs[1]

    table = (out / "compare.md").read_text()
    assert "| metric | a | b | difference |" in table
    row = next(line for line in table.splitlines() if line.startswith("| ece |"))

    def cell(m):
        lo, hi = m["intervals_95"]["ece"]
        assert lo <= m["ece"] <= hi
        return f"{m['ece']:.4f} [{lo:.3f}, {hi:.3f}]"

    assert row == f"| ece | {cell(metrics)} | {cell(compared)} | {compared['ece'] - metrics['ece']:.4f} |"
    for name in ("roc_compare.png", "compare/roc.png", "compare/reliability.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_wrong_compare_dir_is_a_user_error_before_scoring(tmp_path, two_exports):
    data = write_jsonl(tmp_path / "heldout.jsonl", synthetic_pairs(6))
    result = darling(
        "eval",
        "classifier",
        "--model",
        two_exports[0],
        "--compare",
        tmp_path,
        "--data",
        data,
        "--output",
        tmp_path / "e",
    )
    assert result.returncode == 2 and "not a darling classifier export" in result.stderr
    assert not (tmp_path / "e").exists()


def test_threshold_overrides_the_model_only_and_each_export_is_read_once(tmp_path, two_exports, monkeypatch):
    """`--threshold` decides the main model's row and no other (a threshold belongs to one model's probability
    scale); the command reads each export's darling.json and tokenizer once (it read darling.json 3 times each)."""
    first, second = two_exports
    data = write_jsonl(tmp_path / "heldout.jsonl", synthetic_pairs(12, seed=4))
    reads = count_export_reads(monkeypatch)
    flags = ["--model", first, "--compare", second, "--data", data, "-o", tmp_path / "e", "--no-baselines"]
    result = darling_in_process("eval", "classifier", *flags, "--threshold", "0.37")
    assert result.returncode == 0, result.stderr
    assert reads == {"darling.json": 2, "tokenizer": 2}
    metrics = json.loads((tmp_path / "e" / "metrics.json").read_text())
    own = json.loads((second / "darling.json").read_text())["threshold"]
    assert metrics["threshold"] == 0.37 and metrics["compare"]["threshold"] == pytest.approx(own) and own != 0.37


def test_zero_shot_row_beside_an_export(tmp_path, two_exports, tiny_bert_dir):
    """An untrained embedding backbone as a third row: its a, b and threshold come from --fit-data only."""
    fit = write_jsonl(tmp_path / "fit.jsonl", synthetic_pairs(30, seed=1))
    data = write_jsonl(tmp_path / "heldout.jsonl", synthetic_pairs(24, seed=3))
    out = tmp_path / "e"
    result = darling(
        "eval",
        "classifier",
        "--model",
        two_exports[0],
        "--compare",
        two_exports[1],
        "--zero-shot",
        tiny_bert_dir,
        "--fit-data",
        fit,
        "--data",
        data,
        "--output",
        out,
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    zero = metrics["zero_shot"]
    assert zero["kind"] == "bi-encoder (untrained)" and zero["n"] == 24 and zero["fit_data"] == str(fit)
    assert zero == json.loads((out / "zero-shot" / "metrics.json").read_text())
    header = (out / "compare.md").read_text().splitlines()[2]
    assert header.startswith("| metric | a | b | zero-shot ") and f"zero-shot {tiny_bert_dir} - a |" in header
    assert header.endswith("| token Jaccard - a | ROUGE-1 F - a | content-word rule - a |")  # word overlap, always
    alone = darling(
        "eval",
        "classifier",
        "--zero-shot",
        tiny_bert_dir,
        "--fit-data",
        fit,
        "--data",
        data,
        "--output",
        tmp_path / "z",
    )
    assert alone.returncode == 0, alone.stderr
    assert json.loads((tmp_path / "z" / "metrics.json").read_text())["roc_auc"] == zero["roc_auc"]
    missing = darling("eval", "classifier", "--zero-shot", tiny_bert_dir, "--data", data, "--output", tmp_path / "m")
    assert missing.returncode == 2 and "--fit-data" in missing.stderr and not (tmp_path / "m").exists()


def test_word_overlap_scores_as_hand_computed():
    from darling.core.lexical import jaccard, rouge1_f

    assert jaccard("The cat sat.", "the cat ran") == 2 / 4 and jaccard("", "") == 0.0
    assert rouge1_f("a a b", "a b c") == pytest.approx(2 / 3)  # overlap 2 of 3 tokens each way
    assert rouge1_f("x", "y") == 0.0 and rouge1_f("a b", "b a") == 1.0


def test_word_overlap_baselines_beside_the_classifier(tmp_path, two_exports):
    """Token Jaccard, ROUGE-1 F and the content-word rule are scored on the same pairs beside the export; their
    thresholds come from --fit-data alone (for balanced accuracy), or, without it, from the evaluation pairs, which
    every row says. ROC-AUC and balanced accuracy lead the comparison table."""
    from sklearn.metrics import roc_auc_score

    from darling.classifier.calibration import choose_threshold
    from darling.classifier.labelled_pairs import load_pairs
    from darling.core.lexical import content_jaccard, jaccard, rouge1_f

    fit = write_jsonl(tmp_path / "fit.jsonl", synthetic_pairs(30, seed=1))
    data = write_jsonl(tmp_path / "heldout.jsonl", synthetic_pairs(24, seed=3))
    held, fitted = load_pairs(data).pairs, load_pairs(fit).pairs
    config = ClassifierEvalConfig(model=two_exports[0], data=str(data), fit_data=str(fit), output=tmp_path / "e")
    metrics = evaluate_classifier(config)
    scores_by_key = {
        "jaccard": lambda a, b, _: jaccard(a, b),
        "rouge1": lambda a, b, _: rouge1_f(a, b),
        "content_rule": content_jaccard,  # read against each pair's prompt
    }
    for key, score in scores_by_key.items():
        row = metrics[key]
        labels, scores = [p.similar for p in held], [score(*p.texts, p.prompt) for p in held]
        assert row["roc_auc"] == pytest.approx(roc_auc_score(labels, scores))
        fit_scores = [score(*p.texts, p.prompt) for p in fitted]
        assert row["threshold"] == choose_threshold([p.similar for p in fitted], fit_scores, "balanced_accuracy")
        assert row["threshold_fitted_on"] == str(fit) and row["n"] == 24
    table = (tmp_path / "e" / "compare.md").read_text().splitlines()
    assert table[4].startswith("| roc_auc |") and table[5].startswith("| balanced_accuracy |")

    alone = evaluate_classifier(ClassifierEvalConfig(model=two_exports[0], data=str(data), output=tmp_path / "s"))
    assert alone["jaccard"]["threshold_fitted_on"].startswith("these pairs (no --fit-data)")
    off = ClassifierEvalConfig(model=two_exports[0], data=str(data), output=tmp_path / "o", baselines=False)
    assert "jaccard" not in evaluate_classifier(off) and not (tmp_path / "o" / "compare.md").exists()
