"""A policy born in the world, taken by the commands that take SmolLM2: `datagen rollouts` (two temperatures, the
multi-model rollouts) and `rl-train` (TRL's GRPO, with TRL's evaluation of held-out categories); and DARLING's
advantages on the world's answers from a partition."""

import json
from pathlib import Path

import polars as pl
import pytest
from helpers import darling, limit

from darling.classifier.partition import KeyPartition
from darling.core.checkers import get_checker
from darling.core.world import template_of, world_prompt, world_quality
from darling.core.world_data import CATEGORIES
from darling.rl.batch_reward import darling_rewards
from darling.rl.reward import RewardConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def policy(world_policy) -> Path:
    """A world policy pretrained for 300 steps (conftest.py, once for the suite): enough to answer in the world's form,
    not to its floor."""
    return world_policy


def test_datagen_rollouts_samples_the_policy_at_two_temperatures(policy, tmp_path):
    generators = [
        {
            "name": f"start-t{t}",
            "model": str(policy),
            "temperature": t,
            "system_prompt": "",
            "user_template": "{problem}",
        }
        for t in (0.7, 1.0)
    ]
    spec = tmp_path / "generators.json"
    spec.write_text(json.dumps({"generators": generators}))
    args = ["--problems", "world-train", "--limit", 4, "-n", 4, "--max-tokens", 16, "--generators", spec]
    darling("datagen", "rollouts", *args, "--output", tmp_path / "rollouts", check=True, timeout=limit(40))
    rows = pl.read_parquet(list((tmp_path / "rollouts").glob("part-*.parquet")))
    assert rows.height == 2 * 4 * 4 and set(rows["model"]) == {"start-t0.7", "start-t1.0"}
    quality = [world_quality(p, r) for p, r in zip(rows["problem"], rows["response"], strict=True)]
    # it answers in the world's form, and mostly with a member of the category asked (0.6 at 300 steps)
    formed = [template_of(r) is not None for r in rows["response"]]
    assert sum(formed) >= 0.9 * len(formed), [r for r in rows["response"] if not template_of(r)]
    assert sum(quality) / len(quality) > 0.3, rows["response"].to_list()
    keys = get_checker("world").keys(rows["problem"][0], rows["response"].to_list()[:4])
    assert any(k is not None for k in keys)


def test_rl_train_trains_the_world_policy_and_evaluates_held_out_categories(policy, tmp_path):
    out = tmp_path / "rl"
    args = ["--preset", "world", "--policy", policy, "--method", "checker-ceiling", "--max-steps", 4]
    args += ["--eval-problems", "world-heldout", "--eval-limit", 4, "--eval-steps", 2, "--eval-groups", 2]
    args += ["--output", out]
    darling("rl-train", *args, check=True, timeout=limit(60))
    history = json.loads((out / "log_history.json").read_text())
    trained = [h for h in history if "darling/distinct_keys" in h]
    evaluated = [h for h in history if "eval_darling/distinct_keys" in h]
    assert [h["step"] for h in trained] == [1, 2, 3, 4]
    assert [h["step"] for h in evaluated] == [0, 2, 4]  # before the first step, then every eval_steps
    assert all(0 < h["eval_darling/distinct_keys"] <= 8 for h in evaluated)
    assert any(h["darling/groups_changed"] > 0 for h in trained)  # the exact partition's term acted
    assert (out / "final" / "model.safetensors").exists()


def test_the_held_out_prompts_are_listed_once_per_group_in_a_row():
    """TRL samples one group per row, in order: a held-out prompt's groups follow each other."""
    from darling.rl.config import RLTrainConfig
    from darling.rl.train import build_dataset

    config = RLTrainConfig.build("world", overrides={"output": "unused", "method": "grpo"})
    rows = build_dataset(config, "world-heldout", 3, groups=2)
    assert [r["problem_id"] for r in rows] == [pid for pid in rows.unique("problem_id") for _ in range(2)]
    assert len(rows) == 6 and build_dataset(config, "world-heldout", 3).num_rows == 3


def test_darlings_advantages_in_the_world_follow_the_partition():
    """With the exact partition a repeated member is paid less than a member named once; a partition that puts
    every answer in a class of its own gives quality's advantages alone."""
    a, b, c = CATEGORIES["fruit"][:3]
    prompt = world_prompt("fruit")
    answers = [[f"i pick {a} .", f"{a} , of course .", f"how about {a} ?", f"i pick {b} .", f"i pick {c} ."]]
    quality = [[world_quality(prompt, x) for x in answers[0]]]
    assert quality == [[1.0] * 5]
    exact = darling_rewards(answers, quality, KeyPartition(get_checker("world")), RewardConfig(), prompts=[prompt])
    assert exact.classes == [[0, 0, 0, 1, 2]]
    assert exact.advantages[0][3] > 0 > exact.advantages[0][0]  # b named once, a three times

    def apart(pairs: list[tuple[str, str]]) -> list[bool]:  # every pair different: each answer a class of its own
        return [False] * len(pairs)

    alone = darling_rewards(answers, quality, apart, RewardConfig(), prompts=[prompt])
    grpo = darling_rewards(answers, quality, None, RewardConfig(combine="quality"), prompts=[prompt])
    assert alone.classes == [[0, 1, 2, 3, 4]] and alone.advantages == grpo.advantages == [[0.0] * 5]
    wrong = [[f"i pick {a} .", f"i pick {CATEGORIES['river'][0]} .", f"i pick {b} .", f"i pick {b} ."]]
    wrong_quality = [[world_quality(prompt, x) for x in wrong[0]]]
    alone = darling_rewards(wrong, wrong_quality, apart, RewardConfig(), prompts=[prompt])
    grpo = darling_rewards(wrong, wrong_quality, None, RewardConfig(combine="quality"), prompts=[prompt])
    assert alone.advantages == grpo.advantages and grpo.advantages[0][1] < 0


def test_rl_train_refuses_fewer_prompts_than_a_step_samples(policy, tmp_path):
    """Four prompts cannot fill a step of eight groups: TRL would train no step at all, without a word."""
    from helpers import assert_one_line_error

    args = ["--preset", "world", "--policy", policy, "--method", "grpo", "--limit", 4, "--output", tmp_path / "rl"]
    result = darling("rl-train", *args, timeout=limit(30))
    assert_one_line_error(result, "world-train: 4 prompts (limit 4), fewer than the 8 a step samples")
    assert not (tmp_path / "rl").exists()
