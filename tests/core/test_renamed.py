"""The names issue 50 changed keep working for one release (darling.core.deprecation): each old name reads as the
new one, with a FutureWarning that names both, and no old name is listed anywhere a user picks from."""

import json
import warnings

import pytest

from darling.core.errors import UserInputError
from darling.pipeline.schema import TABLES
from darling.pipeline.tables import checked_table
from darling.rl.config import RLTrainConfig


def test_the_reward_settings_class_keeps_its_old_name():
    import darling.rl.reward as reward

    with pytest.warns(FutureWarning, match="DarlingConfig' is now 'darling.rl.reward.RewardConfig'"):
        old = reward.DarlingConfig
    assert old is reward.RewardConfig
    with pytest.raises(AttributeError):
        reward.NoSuchConfig  # noqa: B018 - an unknown name still fails


def test_the_trl_table_and_the_tiny_preset_keep_their_old_names(tmp_path):
    with pytest.warns(FutureWarning, match="option 'grpo' is now 'trl'"):
        old = RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", "grpo.epsilon_high": 0.28})
    assert old.trl == {"epsilon_high": 0.28}
    with pytest.warns(FutureWarning, match="'paper-math-tiny' is now 'paper-tiny'"):
        assert RLTrainConfig.preset_values("paper-math-tiny") == RLTrainConfig.preset_values("paper-tiny")
    assert "paper-math-tiny" not in RLTrainConfig.preset_names()
    with pytest.raises(UserInputError, match="trl.learning_rate: rl-train sets it"), pytest.warns(FutureWarning):
        RLTrainConfig.build(
            "cpu", overrides={"output": tmp_path, "method": "grpo", "grpo.learning_rate": 1}
        )  # checked as the new


def test_a_pipeline_table_reads_the_old_names_as_the_new():
    with pytest.warns(FutureWarning) as seen:
        table = checked_table("rl", TABLES["rl"], {"preset": "paper-math-tiny", "grpo.epsilon_high": 0.28})
    assert table == {"preset": "paper-tiny", "trl.epsilon_high": 0.28} and len(seen) == 2


def test_a_run_started_before_the_rename_resumes_under_its_settings_file(tmp_path):
    """OUTPUT/darling-rl.json (before 0.2) becomes OUTPUT/rl-settings.json, and its settings still bind: a resumed
    run that changes the old ``grpo`` table is refused under the new name."""
    from darling.rl.train import start_or_resume

    config = RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", "trl.epsilon_high": 0.28})
    (tmp_path / "checkpoint-2").mkdir()
    saved = {**config.to_dict(), "grpo": config.trl}
    del saved["trl"]
    (tmp_path / "darling-rl.json").write_text(json.dumps(saved))
    with pytest.warns(FutureWarning, match="'darling-rl.json' is now 'rl-settings.json'"):
        assert start_or_resume(config, None)
    assert (tmp_path / "rl-settings.json").exists() and not (tmp_path / "darling-rl.json").exists()
    changed = RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", "trl.epsilon_high": 0.2})
    with pytest.raises(UserInputError, match="started with trl="):
        start_or_resume(changed, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        start_or_resume(config, None)


def test_the_reward_model_servers_settings_are_importable_where_they_were():
    import darling.rl.config as config
    from darling.rl.serve_config import RewardServeConfig

    with pytest.warns(FutureWarning, match="darling.rl.serve_config.RewardServeConfig"):
        assert config.RewardServeConfig is RewardServeConfig


def test_a_pipeline_run_recorded_under_the_old_preset_name_resumes(tmp_path):
    """RUN/run.json of a paper-tiny run made before 0.2 names rl preset paper-math-tiny: the rerun is the same run."""
    from darling.pipeline import build_config
    from darling.pipeline.runner import IDENTITY_FILE, check_identity

    config = build_config("paper-tiny", tmp_path / "run")
    check_identity(config)
    recorded = json.loads((config.run / IDENTITY_FILE).read_text())
    assert recorded["rl.preset"] == "paper-tiny"
    (config.run / IDENTITY_FILE).write_text(json.dumps({**recorded, "rl.preset": "paper-math-tiny"}))
    check_identity(config)  # refused before renamed_identity
    (config.run / IDENTITY_FILE).write_text(json.dumps({**recorded, "rl.preset": "cpu"}))
    with pytest.raises(UserInputError, match="rl.preset='cpu'"):
        check_identity(config)  # another preset is still another run
