"""The one config system (darling.core.config) and the command line built from it (darling.cli.options)."""

from dataclasses import fields
from pathlib import Path

import pytest
from helpers import assert_one_line_error, darling

from darling.classifier.config import ClassifierTrainConfig
from darling.core.config import CommandConfig, coerce
from darling.core.errors import UserInputError

CONFIGS = [ClassifierTrainConfig]  # every command's settings dataclass


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_has_help_and_every_preset_builds(cls):
    assert issubclass(cls, CommandConfig)
    assert all(f.metadata.get("help") for f in fields(cls)), [f.name for f in fields(cls) if not f.metadata.get("help")]
    for name in cls.preset_names():
        assert isinstance(cls.build(name), cls)


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
