"""bench/darling_levers.py's command lines (issue 36): a lever's settings reach rl-train and win over the bench's
defaults (rl-train takes a flag over --set, so the bench passes its defaults as --set, before the lever's), the
checkpoint cadence is the bench's option, and --report-only needs no classifier. Nothing here trains."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "darling_levers.py"


@pytest.fixture(scope="module")
def levers():
    spec = importlib.util.spec_from_file_location("darling_levers", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parsed(argv: list[str]):
    """The RLTrainConfig the real command line builds from ``darling ARGV`` (the GRPO arm's: no classifier)."""
    from darling.cli.main import app
    from darling.cli.options import parse_argv

    return parse_argv(app, [*argv, "--method", "grpo"])[0]


def test_checkpoints_once_at_the_end_by_default(levers, tmp_path):
    config = parsed(levers.rl_argv(tmp_path / "rl", 16, 0, 1, {}))
    assert (config.max_steps, config.save_steps, config.save_total_limit) == (16, 16, 1)
    assert config.prune_checkpoints is True and config.threads == 1
    config = parsed(levers.rl_argv(tmp_path / "rl", 16, 4, 2, {}))
    assert (config.save_steps, config.save_total_limit, config.threads) == (4, 1, 2)


def test_a_levers_settings_override_the_bench_defaults(levers, tmp_path):
    settings = {"save_steps": "8", "save_total_limit": "2", "threads": "2", "temperature": "0.7"}
    argv = levers.rl_argv(tmp_path / "rl", 16, 4, 1, settings)
    assert "--save-steps" not in argv and "--threads" not in argv  # a flag would beat the lever's --set
    config = parsed(argv)
    assert (config.save_steps, config.save_total_limit, config.threads, config.temperature) == (8, 2, 2, 0.7)


def test_settings_the_bench_owns_are_found(levers):
    assert levers.owned_settings({"max-steps": "3", "seed": "1", "temperature": "0.7"}) == ["max_steps", "seed"]


def test_a_named_arm_runs_its_method_with_its_own_settings(levers, tmp_path):
    """Two entropy arms at two coefficients: each its own folder and policy name, the method rl-train gets from
    method=, and its coefficient (method= does not reach rl-train as a setting)."""
    settings = {"method": "entropy", "entropy_coef": "0.005"}
    assert levers.arm_method("entropy-005", settings) == "entropy" and settings == {"entropy_coef": "0.005"}
    assert levers.arm_method("passk", {"passk_k": "4"}) == "passk"
    argv, log = levers.rl_command(
        argparse.Namespace(steps=16, save_steps=0, classifier=tmp_path / "c"),
        tmp_path / "rl-entropy-005",
        "start",
        1,
        "entropy",
        settings,
    )
    from darling.cli.main import app
    from darling.cli.options import parse_argv

    config = parse_argv(app, argv)[0]
    assert (config.method, config.entropy_coef) == ("entropy", 0.005)
    assert config.output == tmp_path / "rl-entropy-005" and log == tmp_path / "rl-entropy-005.log"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--report-only", "--out", "{tmp}"], "results.jsonl does not exist"),
        (["--out", "{tmp}"], "--classifier is required (unless --report-only)"),
        (["--classifier", "c", "--out", "{tmp}", "--lever", "x=max_steps=3"], "max_steps is the bench's to set"),
        (["--classifier", "c", "--out", "{tmp}", "--lever", "x=oops"], "expected NAME=KEY=VALUE"),
        (["--classifier", "c", "--out", "{tmp}", "--arm", "low=entropy_coef=0.005"], "--arm low: expected a method"),
        (["--classifier", "c", "--out", "{tmp}", "--arm", "grpo"], "--arm grpo: expected a method"),
        (["--classifier", "c", "--out", "{tmp}", "--arm", "a:b=method=passk"], "may not be darling, grpo or start"),
        (["--classifier", "c", "--out", "{tmp}", "--arm", "passk=method=entropy"], "that name is another method's"),
    ],
)
def test_refusals_are_one_line(tmp_path, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    done = subprocess.run([sys.executable, str(BENCH), *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr
