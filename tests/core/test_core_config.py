"""The one config system (darling.core.config) and the command line built from it (darling.cli.options)."""

import json
from dataclasses import fields
from pathlib import Path

import pytest
from helpers import assert_one_line_error, darling

from darling.classifier.config import ClassifierTrainConfig, ServeConfig
from darling.core.config import CommandConfig, coerce
from darling.core.errors import UserInputError
from darling.datagen.config import JudgeConfig, PairConfig, RolloutConfig
from darling.evals.config import ClassifierEvalConfig, MathEvalConfig, NoveltyConfig
from darling.rl.config import RLTrainConfig
from darling.rl.serve_config import RewardServeConfig

CONFIGS = [ClassifierTrainConfig, RLTrainConfig, ServeConfig, RewardServeConfig]  # every command's settings dataclass
CONFIGS += [RolloutConfig, PairConfig, JudgeConfig, MathEvalConfig, NoveltyConfig, ClassifierEvalConfig]
# Settings with no default, and what every preset's rules need (rl-train's DARLING reward needs a classifier).
REQUIRED: dict[type, dict] = {
    RLTrainConfig: {"output": "runs/rl", "classifier": "runs/clf"},
    ServeConfig: {"model": "runs/clf"},
    RewardServeConfig: {"model": "tiny:reward"},
    RolloutConfig: {"output": "runs/rollouts"},
    PairConfig: {"rollouts": "runs/rollouts", "output": "runs/pairs"},
    JudgeConfig: {"pairs": "runs/pairs", "output": "runs/labels", "judge_model": "smollm2"},
    MathEvalConfig: {"output": "runs/math", "problems": ["arithmetic"], "model": ["smollm2"]},
    NoveltyConfig: {"output": "runs/novelty", "classifier": "runs/clf", "prompts": "p.jsonl", "model": "smollm2"},
    ClassifierEvalConfig: {"data": "pairs.jsonl", "output": "runs/eval", "model": "runs/clf"},
}


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_has_help_and_every_preset_builds(cls):
    assert issubclass(cls, CommandConfig)
    assert all(f.metadata.get("help") for f in fields(cls)), [f.name for f in fields(cls) if not f.metadata.get("help")]
    required = REQUIRED.get(cls, {})
    for name in cls.preset_names() if cls.PRESET_PACKAGE else [None]:
        assert isinstance(cls.build(name, overrides=required), cls)


def test_values_are_read_as_their_fields_types():
    assert coerce(ClassifierTrainConfig, "epochs", "3") == 3
    assert coerce(ClassifierTrainConfig, "learning_rate", "1e-4") == 1e-4
    assert coerce(ClassifierTrainConfig, "symmetric", "no") is False
    assert coerce(ClassifierTrainConfig, "head_learning_rate", "none") is None
    assert coerce(ClassifierTrainConfig, "devices", 8) == "8"  # a TOML integer where Lightning takes a string
    for name, bad in (("epochs", "three"), ("epochs", 2.5), ("epochs", [3]), ("symmetric", "maybe"), ("kind", None)):
        with pytest.raises(UserInputError, match=f"option '{name}'"):
            coerce(ClassifierTrainConfig, name, bad)


def test_validation_runs_however_a_config_is_made():
    with pytest.raises(UserInputError, match="kind must be one of cross-encoder, bi-encoder"):
        ClassifierTrainConfig(kind="tri-encoder")
    with pytest.raises(UserInputError, match="batch_size must be >= 1"):
        ClassifierTrainConfig(batch_size=0)


def test_flags_are_field_names_and_beat_the_config_file_and_the_preset(tmp_path: Path):
    """preset < --config < --set < flags, on the real CLI: a bad value at the last layer names the flag's field."""
    config = tmp_path / "c.toml"
    config.write_text("epochs = 7\nbatch_size = 4\n")
    args = ["train-classifier", "--data", "noveltybench", "--output", str(tmp_path / "o"), "--config", str(config)]
    result = darling(*args, "--set", "epochs=2", "--epochs", "0", "--max-steps", "-1")
    assert_one_line_error(result, "set max_steps >= 1 or epochs >= 1")  # the flag (0) won over --set (2)
    result = darling(*args, "--set", "epochs=x")
    assert_one_line_error(result, "option 'epochs': cannot read 'x' as int")
    result = darling(*args, "--kind", "tri-encoder")
    assert_one_line_error(result, "kind must be one of cross-encoder, bi-encoder")
    assert not (tmp_path / "o").exists()


def test_rl_train_flags_aliases_config_file_and_set_reach_the_config(tmp_path: Path, monkeypatch):
    """rl-train's layers, in process up to the training call: preset < --config < --set < flags, the short aliases
    (--lr, -n, --threshold, --classifier-url), the bool flags; then the per-step summary."""
    from types import SimpleNamespace

    from typer.testing import CliRunner

    import darling.rl.train
    from darling.cli.main import app

    seen = []
    history = [{"step": 1, "reward": 0.5, "darling/quality": 1.0, "darling/diversity": 0.5}]
    rank_zero = [True]

    def fake_rl_train(config, resume):
        seen.append((config, resume))
        return SimpleNamespace(state=SimpleNamespace(log_history=history), is_world_process_zero=lambda: rank_zero[0])

    monkeypatch.setattr(darling.rl.train, "rl_train", fake_rl_train)
    config_file = tmp_path / "rl.toml"
    config_file.write_text('num_generations = 8\nper_device_train_batch_size = 8\nproblems = "champ"\nfloor = 0.2\n')
    args = ["rl-train", "--classifier", str(tmp_path), "--output", str(tmp_path / "rl"), "--config", str(config_file)]
    flags = "--set learning_rate=3e-6 --set max_steps=9 --lr 5e-6 -n 2 --threshold 0.9 --correct-only --resume"
    urls = ["--classifier-url", "http://a:1", "--classifier-url", "http://b:2"]
    result = CliRunner().invoke(app, [*args, *flags.split(), *urls])
    assert result.exit_code == 0, result.output
    ((config, resume),) = seen
    assert resume is True and config.output == tmp_path / "rl" and config.classifier == tmp_path
    assert (config.num_generations, config.per_device_train_batch_size) == (2, 8)  # -n beat the file
    assert (config.learning_rate, config.max_steps) == (5e-6, 9)  # --lr beat --set; --set beat the preset
    assert (config.problems, config.floor, config.correct_only) == ("champ", 0.2, True)  # the file beat the preset
    assert (config.classifier_threshold, config.classifier_urls) == (0.9, ["http://a:1", "http://b:2"])
    assert (config.temperature, config.limit, config.threads, config.method) == (0.7, 32, 1, "darling")  # cpu preset
    assert "step 1: reward 0.500  quality 1.000  diversity 0.500" in result.output
    assert "policy saved to" in result.output and f"{tmp_path / 'rl'}/final" in result.output  # rich may wrap

    seen.clear()
    argv = ["rl-train", "--method", "grpo", "--preset", "paper-math", "--output", str(tmp_path / "paper")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    ((config, resume),) = seen
    assert resume is False and config.reward().combine == "quality" and config.classifier is None
    assert (config.policy, config.limit, config.threads, config.use_vllm) == ("Qwen/Qwen3-4B-Base", None, None, True)

    rank_zero[0] = False  # another rank of an accelerate launch: rank 0 reports the run, once
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0 and "step 1" not in result.output and "policy saved" not in result.output


def test_rl_train_config_file_and_set_on_the_real_cli(tmp_path: Path):
    """Each layer's bad value is refused with one line naming its origin and field, before anything is written."""
    config = tmp_path / "rl.toml"
    config.write_text("num_generations = 3\n")
    args = ["rl-train", "--method", "grpo", "--output", str(tmp_path / "o"), "--config", str(config)]
    result = darling(*args, "--set", "per_device_train_batch_size=4")
    assert_one_line_error(result, "= 4 must be a multiple of num_generations = 3")  # the file's 3 reached the config
    result = darling(*args, "--set", "num_generations=4", "-n", "0")
    assert_one_line_error(result, "num_generations must be >= 1, got 0")  # the flag (0) won over --set (4)
    result = darling(*args, "--set", "diversity_weight=2")
    assert_one_line_error(result, "unknown option 'diversity_weight'")
    config.write_text('limit = "many"\n')
    assert_one_line_error(darling(*args), str(config), "option 'limit': cannot read 'many' as int or none")
    assert not (tmp_path / "o").exists()


def test_serve_classifier_flags_reach_the_replicas(tmp_path: Path, monkeypatch):
    """serve-classifier's config (no presets): its defaults are the command's, its flags reach start_replicas."""
    from types import SimpleNamespace

    from typer.testing import CliRunner

    import darling.classifier.serve_classifier as serve  # the command imports them when it runs
    import darling.core.replicas as replicas
    from darling.cli.main import app

    calls = []
    meta = {"kind": "cross-encoder", "threshold": 0.5, "max_tokens_per_response": 8, "max_length": 19}
    (tmp_path / "darling.json").write_text(json.dumps(meta))  # the command reads the export once, before replicas
    server = SimpleNamespace(base_url="http://127.0.0.1:9", log_path="log", process=None, dtype="float32")
    monkeypatch.setattr(serve, "start_replicas", lambda config, export: calls.append(config) or [server])
    monkeypatch.setattr(replicas, "stop_all", lambda servers: calls.append(("stopped", servers)))
    monkeypatch.setattr(replicas, "stop_on_sigterm", lambda: None)
    monkeypatch.setattr(serve, "sample_pairs", lambda: [("a", "b")])
    report = SimpleNamespace(ok=True, pairs=1, max_abs_diff=0.0, decisions_agree=1, tolerance=1e-3, near_threshold=0)
    monkeypatch.setattr(serve, "parity_check", lambda model, urls, pairs: calls.append(("check", urls)) or report)

    result = CliRunner().invoke(app, ["serve-classifier", "--model", str(tmp_path), "--exit-after-check"])
    assert result.exit_code == 0, result.output
    assert calls == [ServeConfig(model=tmp_path, exit_after_check=True), ("stopped", [server])]
    calls.clear()
    flags = "--replicas 2 --port 0 --host 0.0.0.0 --gpus 6,7 --dtype bfloat16 --python /v/bin/python --check"
    result = CliRunner().invoke(
        app, ["serve-classifier", "--model", str(tmp_path), *flags.split(), "--exit-after-check"]
    )
    assert result.exit_code == 0, result.output
    config = calls[0]
    assert (config.replicas, config.port, config.host, config.gpu_ids(), config.dtype, config.python) == (
        2,
        0,
        "0.0.0.0",
        ["6", "7"],
        "bfloat16",
        "/v/bin/python",
    )
    assert calls[1:] == [("check", [server.base_url]), ("stopped", [server])] and "parity OK: 1 pairs" in result.output
    assert ServeConfig.build(overrides={"model": "m"}) == ServeConfig(model=Path("m"))
    with pytest.raises(UserInputError, match="replicas must be >= 1, got 0"):
        ServeConfig(model=Path("m"), replicas=0)
    with pytest.raises(UserInputError, match="3 replicas need 3 --devices, got 2"):
        ServeConfig(model=Path("m"), replicas=3, devices="6,7")


def test_the_names_issue_50_replaced_are_refused_as_unknown(tmp_path: Path):
    """No alias outlives a rename before the first release (issue 62): the old table, preset and class are gone."""

    with pytest.raises(UserInputError, match="unknown option 'grpo.epsilon_high'"):
        RLTrainConfig.build("cpu", overrides={"output": tmp_path, "grpo.epsilon_high": 0.28})
    with pytest.raises(UserInputError, match="unknown preset 'paper-math-tiny'"):
        RLTrainConfig.preset_values("paper-math-tiny")
    import darling.rl.reward as reward

    assert not hasattr(reward, "DarlingConfig")
