"""`rl-train --engine verl` without verl: the settings it refuses, and verl's per-step metrics read back as
`log_history.json` (the recipe's lines against verl's own schema: tests/rl/test_verl_agent_loop.py)."""

import json

import pytest
from helpers import assert_one_line_error, darling, darling_in_process

from darling.rl.verl_recipe import log_history


def test_verl_metrics_become_log_history_and_a_resumed_run_keeps_the_earlier_steps(tmp_path):
    """verl's FileLogger (verl/utils/tracking.py) writes a JSON line {"step", "data"} per step and truncates its file
    when it starts: rl-train gives each launch its own file and merges them."""
    first, second = tmp_path / "metrics-0.jsonl", tmp_path / "metrics-1.jsonl"
    first.write_text("".join(json.dumps({"step": s, "data": {"critic/score/mean": s / 10}}) + "\n" for s in (1, 2, 3)))
    second.write_text("".join(json.dumps({"step": s, "data": {"critic/score/mean": s}}) + "\n" for s in (3, 4)))
    history = log_history([first, second])
    assert [h["step"] for h in history] == [1, 2, 3, 4]
    assert [h["reward"] for h in history] == [0.1, 0.2, 3, 4]  # step 3 from the launch that resumed
    assert history[0]["verl/critic/score/mean"] == 0.1


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--quality", "short-answer"], "--engine verl: the recipe covers the math quality"),
        (["--loss-type", "cispo"], "--engine verl: loss_type must be one of"),
        (["--scale-rewards", "batch"], "scale_rewards none or group"),
        (["--verl-gpus", "0"], "verl_gpus and verl_nodes must be >= 1"),
        (["--engine", "trl"], "--dry-run writes verl's command: it goes with --engine verl"),
        (
            ["--method", "entropy", "--entropy-coef", "0.01", "--set", "trl.use_adaptive_entropy=true"],
            "the entropy arm takes a fixed --entropy-coef",
        ),
        (
            ["--gradient-accumulation-steps", "1", "--steps-per-generation", "2", "-n", "16", "--verl-gpus", "1"],
            "verl needs whole prompts per optimiser step",
        ),
    ],
)
def test_settings_the_verl_recipe_cannot_carry_are_refused(tmp_path, flags, message):
    argv = ["rl-train", "--preset", "paper-math", "--engine", "verl", "--dry-run", "--method", "grpo"]
    argv += ["--problems", "gsm8k", "--limit", "4", "--output", tmp_path / "out", *flags]
    assert_one_line_error(darling_in_process(*argv), message)
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_a_refused_verl_setting_through_the_real_process(tmp_path):
    argv = ["rl-train", "--preset", "paper-math", "--engine", "verl", "--dry-run", "--classifier", tmp_path / "none"]
    result = darling(*argv, "--problems", "gsm8k", "--output", tmp_path / "out", "--quality", "short-answer")
    assert_one_line_error(result, "the recipe covers the math quality")


@pytest.mark.parametrize("method, coef", [("entropy", "0.01"), ("grpo", None)])
def test_the_entropy_arm_reaches_verls_entropy_coeff_and_no_other_arm_does(tmp_path, method, coef):
    """verl's actor subtracts entropy_coeff x its entropy from the loss, as TRL's entropy_coef does."""
    argv = ["rl-train", "--preset", "paper-math", "--engine", "verl", "--dry-run", "--method", method]
    argv += ["--problems", "gsm8k", "--limit", "4", "--output", tmp_path / "out"]
    argv += ["--entropy-coef", coef] if coef else []
    result = darling_in_process(*argv)
    assert result.returncode == 0, result.stderr
    script = (tmp_path / "out" / "verl" / "main_ppo.sh").read_text()
    assert f"actor_rollout_ref.actor.entropy_coeff={coef or 0.0}" in script.split()
