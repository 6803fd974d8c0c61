"""The verl entry point: grouping rules here, and verl 0.5's own dataset, batch steps (``repeat``, ``union``,
the trainer's ``_balance_batch``), loader and ``batch`` manager in a subprocess (verl lives in a --no-deps
folder made by .ci/setup.sh; its declared deps pull CUDA torch)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import RAY_TEST_ENV, SCRIPTS
from verl_responses import OPTIONS, RESPONSES, VALIDATION

from darling.rl.batch_reward import darling_rewards, math_quality
from darling.rl.reward import RewardConfig
from darling.rl.verl_reward import VerlSettings, compute_score, group_rows, rows_to_score

VERL_DEPS = Path(os.environ.get("DARLING_VERL_DEPS", Path.home() / ".cache/darling/verl-deps"))
SCRIPT = SCRIPTS / "verl_script.py"
ANSWERS = ["5", "6"]


def test_groups_are_found_wherever_their_rows_sit():
    assert group_rows(["b", "a", "b", "a", "a"]) == {"b": [0, 2], "a": [1, 3, 4]}
    # rows of two prompts interleaved, as verl's _balance_batch leaves them; correct_only makes `distinct` count
    # each group's correct answers, so every row must carry its own group's figure back to its own position
    texts = ["\\boxed{1}", "\\boxed{2}", "\\boxed{1}", "\\boxed{9}", "\\boxed{1}", "\\boxed{9}"]
    extra = [{"index": i % 2} for i in range(6)]
    scores = compute_score(
        ["a"] * 6, texts, ["1", "2"] * 3, extra, combine="quality", correct_only=True, num_generations=3
    )
    assert [s["score"] for s in scores] == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    assert [s["distinct"] for s in scores] == [3.0, 1.0, 3.0, 1.0, 3.0, 1.0]
    # two datasets both numbering their prompts from 0 (verl's preprocessing): data_source keeps them apart
    scores = compute_score(
        ["x", "y", "x", "y"], ["a", "b", "c", "d"], ["1"] * 4, [{"index": 0}] * 4, combine="quality", num_generations=2
    )
    assert [s["distinct"] for s in scores] == [2.0] * 4


def test_validation_batches_have_groups_of_one_with_the_training_settings():
    """verl's _validate calls a manager built from the same reward kwargs with val_kwargs.n = 1 responses."""
    scores = compute_score(
        ["a"] * 3,
        ["\\boxed{4}", "\\boxed{5}", "x"],
        ["4", "4", "2"],
        [{"index": i} for i in range(3)],
        combine="quality",
        num_generations=8,
    )
    assert [s["score"] for s in scores] == [1.0, 0.0, 0.0]
    assert [s["diversity"] for s in scores] == [1.0, 1.0, 1.0]  # nothing to compare with: maximally distinct
    two = [{"index": i // 2} for i in range(4)]
    assert (
        len(
            compute_score(
                ["a"] * 4, ["x"] * 4, ["1"] * 4, two, combine="quality", num_generations=8, val_num_generations=2
            )
        )
        == 4
    )
    assert VerlSettings(num_generations=8).group_sizes(validate=True) == (1,)
    assert VerlSettings(num_generations=8).group_sizes(validate=False) == (8,)
    assert VerlSettings().group_sizes(validate=None) == ()


@pytest.mark.parametrize(
    "indices, match",
    [
        ([0, 0, 0, 1, 1, 1, 2], "group \\('a', 2\\) has 1 responses; every group of a batch must have 1 or 3"),
        ([0, 0, 0, 1, 1, 1, 1], "group \\('a', 1\\) has 4"),  # a lost or duplicated response, or a shared key
        ([0, 0, 1, 1], "group \\('a', 0\\) has 2, group \\('a', 1\\) has 2"),  # val_kwargs.n=2, val_num_generations=1
    ],
)
def test_groups_of_the_wrong_size_raise(indices, match):
    extra = [{"index": i} for i in indices]
    with pytest.raises(ValueError, match=match):
        compute_score(
            ["a"] * len(indices),
            ["x"] * len(indices),
            ["1"] * len(indices),
            extra,
            combine="quality",
            num_generations=3,
        )


def test_compute_score_quality_only_and_bad_settings():
    extra = [{"index": 0}] * 2 + [{"index": 1}] * 2
    scores = compute_score(
        ["a"] * 4,
        ["\\boxed{4}", "\\boxed{5}", "\\boxed{1}", "\\boxed{1}"],
        ["4", "4", "1", "2"],
        extra,
        combine="quality",
    )
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="classifier="):
        compute_score(["a"] * 4, ["x"] * 4, ["1"] * 4, extra)
    with pytest.raises(ValueError, match="extra_info"):
        compute_score(["a"], ["x"], ["1"], [{}], combine="quality")
    with pytest.raises(TypeError, match="unknown DARLING reward setting"):
        compute_score(["a"], ["x"], ["1"], [{"index": 0}], combine="quality", clasifier="typo")
    with pytest.raises(ValueError, match="norm must be one of"):
        VerlSettings.from_kwargs({"norm": "zscore"})
    assert VerlSettings.from_kwargs({"norm": "minmax", "floor": 0.5, "combine": "add"}).darling == RewardConfig(
        combine="add", norm="minmax", floor=0.5
    )


def regrouped(rows: list[list[int]], texts: list[list[str]]) -> list[list[str]]:
    """Each prompt's responses in the order the reward saw them (rows as [prompt, response] in batch order)."""
    return [[texts[g][j] for g2, j in rows if g2 == g] for g in range(len(texts))]


def expected_rewards(rows: list[list[int]], texts: list[list[str]], clf, config: RewardConfig) -> list[float]:
    """``darling_rewards`` on the regrouped responses, put back at each row."""
    groups = regrouped(rows, texts)
    quality = [math_quality(group, [answer] * len(group)) for group, answer in zip(groups, ANSWERS, strict=True)]
    rewards = darling_rewards(groups, quality, clf, config).rewards
    seen = [0] * len(texts)
    out = []
    for g, _ in rows:
        out.append(rewards[g][seen[g]])
        seen[g] += 1
    return out


def threshold_where_options_matter(clf) -> float:
    """A threshold at which the classifier splits the groups unevenly, so norm, floor and combine each change a
    reward (the check would prove nothing at a threshold where they coincide with the defaults)."""
    rows = [[g, j] for g, group in enumerate(RESPONSES) for j in range(len(group))]
    pairs = [(a, b) for group in RESPONSES for i, a in enumerate(group) for b in group[i + 1 :]]
    probs = sorted(set(float(p) for p in clf.prob_equivalent(pairs)), reverse=True)
    for high, low in zip(probs, probs[1:], strict=False):
        at = clf.with_threshold((high + low) / 2)
        default = expected_rewards(rows, RESPONSES, at, RewardConfig())
        if all(expected_rewards(rows, RESPONSES, at, RewardConfig(**kw)) != default for kw in OPTIONS.values()):
            return at.threshold
    pytest.fail(f"no threshold among {probs} splits the groups so that every option changes a reward")


@pytest.mark.slow
def test_real_verl_trainer_steps_and_batch_manager_call_the_darling_reward(tmp_path, any_export, smollm2_dir):
    if not (VERL_DEPS / "verl").is_dir():
        reason = f"no verl install at {VERL_DEPS} (.ci/setup.sh makes it; or set DARLING_VERL_DEPS)"
        if os.environ.get("DARLING_REQUIRE_VLLM") == "1":  # CI: set-up must have made it
            pytest.fail(reason)
        pytest.skip(reason)
    from darling.classifier import load_scorer

    clf = load_scorer(any_export)  # either kind
    clf = clf.with_threshold(threshold_where_options_matter(clf))
    threshold = clf.threshold

    env = {
        **os.environ,
        "PYTHONPATH": str(VERL_DEPS),
        **RAY_TEST_ENV,
        "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"),
    }
    argv = [sys.executable, str(SCRIPT), str(any_export), str(smollm2_dir), repr(threshold), str(tmp_path)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])

    # training: verl's _balance_batch scattered each prompt's responses over the batch ...
    rows = result["rows"]
    assert sorted(map(tuple, rows)) == [(g, j) for g in range(2) for j in range(4)]
    assert result["contiguous"] is False
    # ... and every row still gets darling_rewards of its own prompt's responses
    flat = expected_rewards(rows, RESPONSES, clf, RewardConfig())
    assert result["manager"] == "BatchRewardManager"
    assert result["batch_quality"] == [math_quality([RESPONSES[g][j]], [ANSWERS[g]])[0] for g, j in rows]
    assert result["batch_rewards"] == pytest.approx(flat, abs=1e-6)
    assert result["manager_rewards"] == pytest.approx(flat, abs=1e-6)  # DarlingRewardManager, grouped by uid
    groups = regrouped(rows, RESPONSES)
    quality = [math_quality(group, [a] * 4) for group, a in zip(groups, ANSWERS, strict=True)]
    distinct = darling_rewards(groups, quality, clf, RewardConfig()).distinct
    assert result["batch_distinct"] == [float(distinct[g]) for g, _ in rows]
    # norm, floor and combine given as reward kwargs each reach the reward
    for name, kw in OPTIONS.items():
        assert result["options"][name] == pytest.approx(expected_rewards(rows, RESPONSES, clf, RewardConfig(**kw)))
        assert result["options"][name] != pytest.approx(flat), name

    # validation with verl's default val_kwargs.n = 1, through the same reward kwargs (num_generations=4)
    assert result["val_rows"] == [[0, 0], [1, 0]]
    assert result["val_rewards"] == [0.0, 1.0] == expected_rewards(result["val_rows"], VALIDATION, clf, RewardConfig())
    assert result["val_diversity"] == [1.0, 1.0]
    assert result["val_manager_rewards"] == [0.0, 1.0]

    # errors never become rewards, through verl's compute_reward too
    assert "group ('arith-" in result["lost_response"] and "has 3 responses" in result["lost_response"]
    assert "val_num_generations" in result["val_n2"]
    assert result["server_down"].startswith("PoolingServerError")


def test_settings_from_a_verl_config_node():
    """The agent-loop managers read `+darling.KEY=VALUE`: the same fields and checks as the reward kwargs."""
    settings = VerlSettings.from_config(
        {"darling": {"classifier": "clf", "floor": 0.1, "classifier_urls": "http://h:1"}}
    )
    assert (settings.classifier, settings.darling.floor, settings.classifier_urls) == ("clf", 0.1, ("http://h:1",))
    with pytest.raises(ValueError, match=r"\+darling.classifier="):
        VerlSettings.from_config({"trainer": {}})
    with pytest.raises(ValueError, match="darling.*: unknown DARLING reward setting"):
        VerlSettings.from_config({"darling": {"clasifier": "typo"}})
    with pytest.raises(ValueError, match="correct_only with floor 0"):
        VerlSettings.from_config({"darling": {"classifier": "clf", "correct_only": True}})


def test_rows_of_a_step_and_of_a_padded_validation_batch():
    """Training: every prompt's n rows wherever they sit, any other count refused; validation: each prompt's first
    n rows (verl's _validate pads with copies of the first rows, same uid, cut off afterwards)."""
    assert rows_to_score(["a", "b", "a", "b"], 2, validate=False) == [[0, 2], [1, 3]]
    with pytest.raises(ValueError, match="prompt uid b has 1 responses, rollout.n is 2"):
        rows_to_score(["a", "b", "a"], 2, validate=False)
    padded = ["u0", "u1", "u2", "u0", "u1"]  # 3 prompts x val n = 1, padded to 5 rows
    assert rows_to_score(padded, 1, validate=True) == [[0], [1], [2]]
