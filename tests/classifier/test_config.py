import pytest

from darling.classifier.config import ClassifierTrainConfig, build_config
from darling.core.config import parse_set_options
from darling.core.errors import UserInputError


def test_paper_preset_is_the_paper_schedule():
    cfg = build_config("paper")
    assert cfg.backbone == "Qwen/Qwen3-Embedding-4B"
    assert cfg.max_tokens_per_response == 2048
    assert (cfg.learning_rate, cfg.min_learning_rate, cfg.warmup_steps, cfg.max_steps) == (2e-5, 2e-6, 10, 80)
    # 64 pairs per optimiser step whatever the number of GPUs: 8 accumulated on each of 8, 64 on one
    assert cfg.global_batch_size == 64 and (cfg.accumulation(8), cfg.accumulation(1)) == (8, 64)
    assert cfg.precision == "bf16-mixed" and cfg.strategy == "fsdp" and cfg.max_grad_norm is None
    with pytest.raises(UserInputError, match="strategy fsdp needs GPUs"):
        build_config("paper", overrides={"accelerator": "cpu"})


def test_precedence_preset_then_file_then_overrides(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text("learning_rate = 3e-5\nepochs = 7\nsymmetric = false\n")
    cfg = build_config("cpu", toml, parse_set_options(["epochs=2", "head_learning_rate=none"]))
    assert cfg.learning_rate == 3e-5 and cfg.epochs == 2 and cfg.symmetric is False
    assert cfg.head_learning_rate is None
    assert cfg.max_tokens_per_response == ClassifierTrainConfig.preset_values("cpu")["max_tokens_per_response"] == 510


def test_json_config_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"batch_size": 4, "precision": "bf16-mixed"}')
    cfg = build_config("cpu", path)
    assert cfg.batch_size == 4 and cfg.precision == "bf16-mixed"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"learnin_rate": "1"}, "unknown option 'learnin_rate'"),
        ({"epochs": "three"}, "option 'epochs': cannot read 'three' as int"),
        ({"symmetric": "maybe"}, "option 'symmetric': cannot read 'maybe' as bool"),
        ({"threshold_objective": "auc"}, "threshold_objective must be one of"),
        ({"expected_equivalent_share": 1.0}, "expected_equivalent_share must be between 0 and 1"),
        ({"batch_size": "0"}, "batch_size must be >= 1"),
    ],
)
def test_bad_options_are_user_errors(overrides, message):
    with pytest.raises(UserInputError, match=message):
        build_config("cpu", overrides=overrides)


def test_bad_config_file_and_preset(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    with pytest.raises(UserInputError, match=r"c.json:1: not valid JSON"):
        build_config("cpu", bad)
    with pytest.raises(UserInputError, match="unknown preset 'gpu'"):
        build_config("gpu")
    with pytest.raises(UserInputError, match="KEY=VALUE"):
        parse_set_options(["epochs"])
