"""The `darling` command line, run as a user runs it (a subprocess)."""

import json

import pytest
from helpers import darling, darling_in_process, synthetic_pairs, write_jsonl

from darling import __version__


def test_version_and_help_with_examples():
    assert darling("--version").stdout.strip() == f"darling {__version__}"
    for command in (["train-classifier"], ["eval", "classifier"]):
        result = darling(*command, "--help")
        assert result.returncode == 0 and "Example" in result.stdout


@pytest.mark.parametrize(
    "row, message",
    [
        ({"prompt": "p", "generation_0": "a", "generation_1": "b", "similar": 3}, "field 'similar' must be 0 or 1"),
        ({"prompt": "p", "generation_0": "a", "similar": 1}, "missing field 'generation_1'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, row, message):
    good = synthetic_pairs(5)
    data = write_jsonl(tmp_path / "pairs.jsonl", [*good, row])
    result = darling("train-classifier", "--data", data, "--output", tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {data}:6: {message}")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_bad_option_and_missing_model_are_user_errors(tmp_path):
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(12))
    result = darling("train-classifier", "--data", data, "--output", tmp_path / "o", "--set", "epochs=two")
    assert result.returncode == 2 and "option 'epochs': cannot read 'two' as int" in result.stderr
    result = darling("eval", "classifier", "--model", tmp_path, "--data", data, "--output", tmp_path / "e")
    assert result.returncode == 2 and "not a darling classifier export" in result.stderr


def test_train_then_eval_end_to_end_with_the_packaged_encoder(tmp_path, minilm_path):
    """The cpu preset (a MiniLM bi-encoder), shortened to a few steps: export, then evaluate it."""
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(40))
    out = tmp_path / "clf"
    result = darling(
        "train-classifier",
        "--preset",
        "cpu",
        "--data",
        data,
        "--output",
        out,
        "--max-steps",
        "3",
        "--set",
        "max_tokens_per_response=24",
        "--threads",
        "2",
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    assert "exported" in result.stdout
    assert "check noveltybench-heldout (100 pairs): auc" in result.stdout  # the packaged checks, scored after training
    assert "check minimal-pairs (160 pairs): auc" in result.stdout
    meta = json.loads((out / "darling.json").read_text())
    assert meta["backbone"] == "packaged:all-MiniLM-L6-v2" and (meta["kind"], meta["pooling"]) == ("bi-encoder", "mean")

    result = darling("eval", "classifier", "--model", out, "--data", data, "--output", tmp_path / "eval")
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert {"accuracy", "precision", "recall", "f1", "roc_auc", "ece", "threshold", "n"} <= metrics.keys()
    assert metrics["n"] == 40 and metrics["threshold"] == pytest.approx(meta["threshold"])
    for name in ("roc.png", "reliability.png"):
        assert (tmp_path / "eval" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len((tmp_path / "eval" / "predictions.jsonl").read_text().splitlines()) == 40

    # a packaged check by name, in this process (the command's real process ran above)
    args = ("--model", out, "--data", "noveltybench-heldout", "--fit-data", data, "--output", tmp_path / "nb100")
    assert darling_in_process("eval", "classifier", *args).returncode == 0
    metrics = json.loads((tmp_path / "nb100" / "metrics.json").read_text())
    scored_at_training = meta["checks"]["noveltybench-heldout"]["classifier"]["roc_auc"]
    assert metrics["n"] == 100 and metrics["roc_auc"] == pytest.approx(scored_at_training, abs=0.005)


def test_eval_classifier_flags_reach_its_config(tmp_path, monkeypatch):
    """eval classifier's flags are ClassifierEvalConfig's fields; --symmetric / --one-order / unset stay three."""
    from typer.testing import CliRunner

    import darling.evals.classifier
    from darling.cli.main import app
    from darling.core.errors import UserInputError
    from darling.evals.config import ClassifierEvalConfig

    seen = []
    metrics = {
        "model": "m",
        "n": 1,
        **{k: 0.5 for k in ("accuracy", "balanced_accuracy", "f1", "roc_auc", "ece", "threshold")},
    }
    monkeypatch.setattr(darling.evals.classifier, "evaluate_classifier", lambda c, i: seen.append(c) or {**metrics})
    # the command reads its inputs before it imports the scorers; this stand-in is not what is tested here
    monkeypatch.setattr(darling.evals.classifier, "read_inputs", lambda config: None)
    base = ["eval", "classifier", "--model", str(tmp_path), "--data", "d.jsonl", "-o", str(tmp_path / "e")]
    for extra, symmetric in (
        ([], None),
        (["--symmetric"], True),
        (["--one-order"], False),
        (["--no-symmetric"], False),
    ):
        result = CliRunner().invoke(app, [*base, *extra, "--threshold", "0.3", "--batch-size", "4"])
        assert result.exit_code == 0, result.output
        config = seen.pop()
        assert (config.model, config.data, config.symmetric, config.threshold, config.batch_size) == (
            tmp_path,
            "d.jsonl",
            symmetric,
            0.3,
            4,
        )
    with pytest.raises(UserInputError, match="--fit-data"):
        ClassifierEvalConfig(data="d", output=tmp_path, zero_shot="packaged:all-MiniLM-L6-v2")
