"""Open-ended quality (darling.core.quality) on the real packaged MiniLM, the naming prompt sets, and the GRPO
baseline that measures distinct per group without letting the classifier into its reward."""

import gzip
import json

import pytest
from helpers import REPO

from darling.core.errors import UserInputError
from darling.core.quality import (
    RelevantShortAnswer,
    distinct_answers,
    echoes_prompt,
    normalised_answer,
    open_ended_quality,
    short_answer_quality,
)
from darling.datagen.problems import load_problems
from darling.rl.batch_reward import darling_rewards
from darling.rl.reward import RewardConfig

FRUIT = "Name a fruit. Answer with the name only."


def test_short_answer_quality_is_format_only():
    assert [short_answer_quality(t, 4) for t in ["Banana", "New York City", "", "   "]] == [1.0, 1.0, 0.0, 0.0]
    assert short_answer_quality("The fruit I like most is the banana", 4) == pytest.approx(4 / 8)
    assert short_answer_quality("Zegg", 4) == 1.0  # a made-up word: format cannot tell
    # --strict-length: over max_words scores 0, at most max_words as before.
    assert short_answer_quality("The fruit I like most is the banana", 4, strict=True) == 0.0
    assert short_answer_quality("New York City", 4, strict=True) == 1.0


def test_relevance_ranks_real_answers_above_made_up_ones_and_zeroes_echoes(minilm_path):
    quality = RelevantShortAnswer(4)
    answers = ["Banana", "Strawberry", "Zegg", "Fruit", "The fruit is an apple.", "", "Banana " * 12]
    banana, strawberry, zegg, echo, sentence, empty, long = quality([FRUIT] * len(answers), answers)
    assert min(banana, strawberry) > zegg + 0.2 and zegg > 0  # measured: 0.57 / 0.59 against 0.12
    assert echo == sentence == empty == 0.0  # echoing the prompt's words scores nothing
    assert 0 < long <= 4 / 12  # the format factor still applies: 12 words, 4 allowed
    assert echoes_prompt(FRUIT, "fruit salad") and not echoes_prompt(FRUIT, "a banana")
    assert open_ended_quality("short-answer", 2)([FRUIT], ["one two three four"]) == [0.5]
    with pytest.raises(ValueError, match="not an open-ended quality"):
        open_ended_quality("math")


def test_distinct_answers_ignore_case_and_punctuation():
    assert normalised_answer("  The Nile. ") == "the nile"
    assert distinct_answers(["Paris", "paris.", "PARIS!", "London"]) == 2


def test_grpo_with_a_scorer_counts_classes_but_rewards_quality_only():
    calls = []

    def same_if_equal(pairs):
        calls.append(len(pairs))
        return [a == b for a, b in pairs]

    groups, quality = [["Paris", "Paris", "Rome", "Oslo"]], [[1.0, 0.5, 1.0, 0.0]]
    grpo = darling_rewards(groups, quality, same_if_equal, RewardConfig(combine="quality"))
    assert grpo.rewards == quality and grpo.distinct == [3] and calls  # measured, not rewarded
    darling = darling_rewards(groups, quality, same_if_equal, RewardConfig())
    assert darling.distinct == [3] and darling.rewards[0][0] < 1.0 == darling.rewards[0][2]  # duplicates pay


def test_naming_sets_are_packaged_disjoint_and_load_by_name():
    from darling.evals.novelty import load_prompts

    folder = REPO / "datagen" / "resources" / "prompts"
    rows = {
        name: [json.loads(line) for line in gzip.decompress((folder / f"{name}.jsonl.gz").read_bytes()).splitlines()]
        for name in ("naming-train", "naming-heldout")
    }
    assert (len(rows["naming-train"]), len(rows["naming-heldout"])) == (48, 24)
    train, heldout = ({r["category"] for r in rows[n]} for n in rows)
    assert not train & heldout  # no category is both trained on and evaluated on
    assert "Answer with the name only." in rows["naming-heldout"][0]["prompt"]
    problems = load_problems("naming-train")
    assert len(problems) == 48 and all(p.reference_answer is None for p in problems)
    prompts = load_prompts("naming-heldout")
    assert [p.prompt for p in prompts] == [r["prompt"] for r in rows["naming-heldout"]]
    assert prompts[0].category == rows["naming-heldout"][0]["category"]


def test_open_ended_prompts_train_with_an_open_ended_quality_only(tmp_path):
    from darling.rl.config import RLTrainConfig
    from darling.rl.train import build_dataset

    config = RLTrainConfig.build("naming", overrides={"output": tmp_path / "rl", "classifier": tmp_path})
    assert config.quality == "relevant-short-answer" and len(build_dataset(config)) == 48
    math = RLTrainConfig.build("naming", overrides={"output": tmp_path / "rl", "quality": "math", "method": "grpo"})
    with pytest.raises(UserInputError, match="no problems with a reference answer"):
        build_dataset(math)
    with pytest.raises(UserInputError, match="drop --quality"):
        RLTrainConfig.build("naming", overrides={"output": tmp_path, "reward_model": tmp_path, "method": "grpo"})
