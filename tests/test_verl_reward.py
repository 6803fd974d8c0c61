"""The verl entry point: grouping rules here, and verl 0.5's own loader/DataProto/batch manager in a
subprocess (verl lives in a --no-deps folder made by .ci/setup.sh; its declared deps pull CUDA torch)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from verl_responses import RESPONSES

from darling.rl.darling import darling_rewards, math_quality
from darling.rl.reward import DarlingConfig
from darling.rl.verl_reward import compute_score, contiguous_groups

VERL_DEPS = Path(os.environ.get("DARLING_VERL_DEPS", Path.home() / ".cache/darling/verl-deps"))
SCRIPT = Path(__file__).with_name("verl_script.py")


def test_groups_are_contiguous_runs_and_checked():
    assert contiguous_groups(["a", "a", "b", "b", "b"]) == [slice(0, 2), slice(2, 5)]
    with pytest.raises(ValueError, match="not contiguous"):
        contiguous_groups(["a", "b", "a"])
    with pytest.raises(ValueError, match="num_generations=2"):
        contiguous_groups(["a", "a", "b"], num_generations=2)


def test_compute_score_quality_only_and_bad_settings():
    extra = [{"index": 0}] * 2 + [{"index": 1}] * 2
    scores = compute_score(["a"] * 4, ["\\boxed{4}", "\\boxed{5}", "\\boxed{1}", "\\boxed{1}"], ["4", "4", "1", "2"],
                           extra, combine="quality")  # fmt: skip
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="classifier="):
        compute_score(["a"] * 4, ["x"] * 4, ["1"] * 4, extra)
    with pytest.raises(ValueError, match="extra_info"):
        compute_score(["a"], ["x"], ["1"], [{}], combine="quality")
    with pytest.raises(TypeError, match="unknown DARLING reward setting"):
        compute_score(["a"], ["x"], ["1"], [{"index": 0}], combine="quality", clasifier="typo")


@pytest.mark.slow
def test_real_verl_batch_manager_calls_the_darling_reward(tmp_path, any_export, smollm2_dir):
    if not (VERL_DEPS / "verl").is_dir():
        reason = f"no verl install at {VERL_DEPS} (.ci/setup.sh makes it; or set DARLING_VERL_DEPS)"
        if os.environ.get("DARLING_REQUIRE_VLLM") == "1":  # CI: set-up must have made it
            pytest.fail(reason)
        pytest.skip(reason)
    from darling.classifier import EquivalenceClassifier

    export = any_export  # either kind
    clf = EquivalenceClassifier.from_pretrained(export)
    threshold = float(sorted(clf.prob_equivalent([("2 + 3 = 5", "Adding gives 5.")]))[0])  # splits some groups

    env = {**os.environ, "PYTHONPATH": str(VERL_DEPS), "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(export), str(smollm2_dir), str(threshold)],
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])

    quality = [math_quality(group, [answer] * len(group)) for group, answer in zip(RESPONSES, ["5", "6"], strict=True)]
    clf.threshold = threshold
    expected = darling_rewards(RESPONSES, quality, clf, DarlingConfig())
    flat = [r for group in expected.rewards for r in group]

    assert result["manager"] == "BatchRewardManager"
    assert result["batch_quality"] == [q for group in quality for q in group] == [1, 1, 0, 1, 1, 1, 1, 0]
    assert result["batch_rewards"] == pytest.approx(flat, abs=1e-6)
    assert result["manager_rewards"] == pytest.approx(flat, abs=1e-6)
    assert result["batch_distinct"] == [float(d) for d in expected.distinct for _ in range(4)]
    assert "not contiguous" in result["interleaved"]
    assert "not contiguous" in result["interleaved_uid"]
    assert result["server_down"].startswith("ClassifierServerError")
