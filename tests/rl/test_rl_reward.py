"""The DARLING reward as a library: the paper's worked example, correct-only groups by hand, advantages,
and transitivity pruning proven equal to deciding every pair (property test)."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from darling.classifier.partition import partition_groups
from darling.rl.batch_reward import darling_rewards
from darling.rl.reward import RewardConfig, diversity, group_advantages


def test_paper_worked_example_four_jokes_two_equivalent():
    assert diversity([0, 0, 1, 2]) == pytest.approx([2 / 3, 2 / 3, 1, 1])


def equivalence_of(pairs_same):
    return lambda pairs: [pairs_same.get(tuple(sorted(p)), False) for p in pairs]


def test_darling_reward_multiplies_quality_and_diversity_and_centres_without_std():
    jokes = ["knock knock", "knock knock!", "a pun", "a limerick"]
    same = equivalence_of({("knock knock", "knock knock!"): True})
    result = darling_rewards([jokes], [[1.0, 0.5, 1.0, 0.0]], same)
    assert result.classes == [[0, 0, 1, 2]] and result.distinct == [3]
    assert result.rewards[0] == pytest.approx([2 / 3, 1 / 3, 1.0, 0.0])
    mean = (2 / 3 + 1 / 3 + 1.0) / 4
    assert result.advantages[0] == pytest.approx([2 / 3 - mean, 1 / 3 - mean, 1 - mean, -mean])  # no std division
    assert group_advantages([1.0, 1.0]) == [0.0, 0.0]


def test_correct_only_partitions_correct_responses_and_gives_the_rest_the_floor():
    texts = ["a", "a'", "wrong", "b"]
    same = equivalence_of({("a", "a'"): True, ("a", "wrong"): True, ("a'", "wrong"): True})
    cfg = RewardConfig(correct_only=True)
    result = darling_rewards([texts], [[1.0, 1.0, 0.0, 1.0]], same, cfg)
    # Among the 3 correct: {a, a'} and {b}: (3-2)/2 = 0.5, 0.5, (3-1)/2 = 1; "wrong" never reaches the classifier.
    assert result.diversity[0] == pytest.approx([0.5, 0.5, 0.0, 1.0])
    assert result.rewards[0] == pytest.approx([0.5, 0.5, 0.0, 1.0])
    floored = darling_rewards([texts], [[1.0, 1.0, 0.0, 1.0]], same, RewardConfig(correct_only=True, floor=0.1))
    assert floored.diversity[0] == pytest.approx([0.5, 0.5, 0.1, 1.0])
    assert floored.rewards[0] == pytest.approx([0.5, 0.5, 0.0, 1.0])  # incorrect: quality 0 times the floor


def test_correct_only_lone_correct_answer_is_maximally_distinct():
    """One correct of 8: it has no other correct answer to share a class with, so diversity 1 and the whole
    group's advantage goes to it (diversity 0 would give it the wrong answers' reward and the group nothing)."""
    texts = [f"response {i}" for i in range(8)]
    quality = [[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]]
    never_called = equivalence_of({})
    result = darling_rewards([texts], quality, never_called, RewardConfig(correct_only=True))
    assert result.diversity[0] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert result.rewards[0] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert result.advantages[0][3] == pytest.approx(7 / 8) and result.advantages[0][0] == pytest.approx(-1 / 8)
    assert result.stats.pairs_decided == 0  # nothing to compare


@pytest.mark.parametrize(("equivalent", "expected"), [(True, 0.0), (False, 1.0)])
def test_correct_only_two_correct_answers(equivalent, expected):
    texts = ["x = 2 by factoring", "wrong", "x = 2 by the formula", "wrong too"]
    same = equivalence_of({("x = 2 by factoring", "x = 2 by the formula"): equivalent})
    result = darling_rewards([texts], [[1.0, 0.0, 1.0, 0.0]], same, RewardConfig(correct_only=True))
    assert result.diversity[0] == pytest.approx([expected, 0.0, expected, 0.0])
    assert result.rewards[0] == pytest.approx([expected, 0.0, expected, 0.0])
    assert result.distinct == [1 if equivalent else 2]
    # Two correct answers of one strategy score 0, as the wrong ones do: the group's correctness signal is lost,
    # and said so; the official math runs' floor keeps it (correct 0.1, wrong 0).
    assert result.groups_without_signal == (1 if equivalent else 0)
    floored = darling_rewards([texts], [[1.0, 0.0, 1.0, 0.0]], same, RewardConfig(correct_only=True, floor=0.1))
    assert floored.groups_without_signal == 0 and floored.rewards[0][0] > floored.rewards[0][1]


def test_correct_only_without_a_floor_is_refused_where_users_set_it(tmp_path):
    """rl-train and the verl entry point refuse the trap outright; the paper-math preset uses the official runs'
    reward settings (all responses partitioned, floor 0.1, quality x diversity)."""
    from darling.core.errors import UserInputError
    from darling.rl.config import RLTrainConfig
    from darling.rl.verl_reward import VerlSettings

    with pytest.raises(UserInputError, match="correct_only with floor 0"):
        RLTrainConfig.build("cpu", overrides={"output": tmp_path, "classifier": tmp_path, "correct_only": True})
    with pytest.raises(ValueError, match="correct_only with floor 0"):
        VerlSettings.from_kwargs({"classifier": "clf", "correct_only": True})
    RLTrainConfig.build(
        "cpu", overrides={"output": tmp_path, "classifier": tmp_path, "correct_only": True, "floor": 0.1}
    )
    paper = RLTrainConfig.preset_values("paper-math")
    assert (paper["floor"], paper.get("correct_only", False), paper.get("method", "darling")) == (
        0.1,
        False,
        "darling",
    )


def test_a_group_of_one_has_diversity_one_under_every_norm():
    assert diversity([0]) == [1.0]
    for norm in ("identity", "minmax"):
        result = darling_rewards([["only"]], [[0.5]], equivalence_of({}), RewardConfig(norm=norm))
        assert result.diversity == [[1.0]] and result.rewards == [[0.5]]


def test_minmax_keeps_a_group_with_no_spread_as_it_is():
    all_different = darling_rewards(
        [["a", "b", "c"]], [[1.0, 1.0, 1.0]], equivalence_of({}), RewardConfig(norm="minmax")
    )
    assert all_different.diversity == [[1.0, 1.0, 1.0]]
    same = equivalence_of({("a", "b"): True, ("a", "c"): True, ("b", "c"): True})
    all_same = darling_rewards([["a", "b", "c"]], [[1.0, 1.0, 1.0]], same, RewardConfig(norm="minmax"))
    assert all_same.diversity == [[0.0, 0.0, 0.0]]


def test_ablations_additive_and_quality_only():
    texts, quality = ["x", "x", "y"], [[1.0, 0.0, 1.0]]
    same = equivalence_of({("x", "x"): True})
    assert darling_rewards([texts], quality, same, RewardConfig(combine="add")).rewards[0] == pytest.approx(
        [1.5, 0.5, 2.0]
    )
    baseline = darling_rewards([texts], quality, None, RewardConfig(combine="quality"))
    assert baseline.rewards[0] == [1.0, 0.0, 1.0] and baseline.stats.pairs_decided == 0


def test_a_scorer_failure_is_not_a_reward():
    def broken(pairs):
        raise ConnectionError("classifier server down")

    with pytest.raises(ConnectionError):
        darling_rewards([["a", "b"]], [[1.0, 1.0]], broken)
    with pytest.raises(RuntimeError, match="returned 1 decisions for 2 pairs"):
        darling_rewards([["a", "b", "c"]], [[1.0, 1.0, 1.0]], lambda pairs: [True])


def components(n, same):
    """Brute force: connected components of the 'equivalent' graph, labelled by first appearance."""
    label = list(range(n))
    changed = True
    while changed:
        changed = False
        for i, j in itertools.combinations(range(n), 2):
            if same[(i, j)] and label[i] != label[j]:
                label[i] = label[j] = min(label[i], label[j])
                changed = True
    first = {}
    return [first.setdefault(x, len(first)) for x in label]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=6).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes),
            st.lists(st.booleans(), min_size=sum(n * n for n in sizes), max_size=sum(n * n for n in sizes)),
        )
    )
)
def test_pruned_partition_equals_deciding_every_pair(case):
    sizes, bits = case
    tables, k = [], 0
    for n in sizes:
        tables.append({(i, j): bits[k + i * n + j] for i, j in itertools.combinations(range(n), 2)})
        k += n * n
    asked = []

    def decide(batch):
        asked.extend(batch)
        return [tables[g][(i, j)] for g, i, j in batch]

    pruned, stats = partition_groups(sizes, decide)
    full, full_stats = partition_groups(sizes, lambda b: [tables[g][(i, j)] for g, i, j in b], prune=False)
    assert pruned == full == [components(n, t) for n, t in zip(sizes, tables, strict=True)]
    assert full_stats.pairs_decided == full_stats.pairs_total == sum(n * (n - 1) // 2 for n in sizes)
    assert stats.pairs_decided == len(asked) == len(set(asked)) <= stats.pairs_total
    assert stats.rounds <= max(sizes) - 1


def test_pruning_saves_calls_when_responses_are_alike():
    _, stats = partition_groups([8, 8], lambda batch: [True] * len(batch))
    assert (stats.pairs_total, stats.pairs_decided, stats.rounds) == (56, 14, 1)


def test_reward_model_quality_scores_prompt_and_completion(tmp_path, minilm_path):
    """A real one-output sequence classifier (MiniLM with a fresh head: the plumbing, not its judgement)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from darling.core.reward_model import RewardModel, sigmoid_quality
    from darling.rl.trl_reward import DarlingRewardFunction, RewardModelQuality

    rm_dir = tmp_path / "rm"
    AutoModelForSequenceClassification.from_pretrained(minilm_path, num_labels=1).save_pretrained(rm_dir)
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(rm_dir)
    prompts = [[{"role": "user", "content": "Tell me a joke."}]] * 2 + [[{"role": "user", "content": "A poem?"}]] * 2
    completions = ["Why did the cat sit?", "Knock knock.", "Roses are red.", "The sea, the sea."]
    reward = DarlingRewardFunction(2, None, RewardConfig(combine="quality"), RewardModelQuality(str(rm_dir)))
    got = reward(prompts, completions)
    raw = RewardModel(str(rm_dir)).scores(["Tell me a joke."] * 2 + ["A poem?"] * 2, completions)
    assert got == pytest.approx(sigmoid_quality(raw), abs=1e-6)
    assert len(set(round(x, 6) for x in got)) == 4 and all(0 < x < 1 for x in got)


def test_term_effect_counts_the_groups_whose_advantages_diversity_changed():
    """A group whose answers all differ gets quality x 1: the term changes nothing there. A group with a repeated
    answer: the repeats lose reward and the rarer answers gain advantage. The GRPO baseline (combine = quality)
    applies no term, and with a classifier reports what DARLING's would have changed."""
    same = equivalence_of({("apple", "apple!"): True})
    groups = [["apple", "apple!", "pear", "plum"], ["fig", "kiwi", "lime", "date"]]
    quality = [[1.0, 1.0, 1.0, 1.0], [1.0, 0.5, 1.0, 0.5]]
    result = darling_rewards(groups, quality, same)
    effect = result.effect
    assert (effect.groups, effect.changed, effect.all_distinct, effect.share_changed) == (2, 1, 1, 0.5)
    # group 0: rewards 2/3, 2/3, 1, 1 (mean 5/6) against quality's 0 advantages: |change| 1/6 for each answer.
    assert effect.mean_abs_change == pytest.approx((4 * 1 / 6 + 0) / 8)
    assert effect.mean_abs_quality_advantage == pytest.approx((0 + 4 * 0.25) / 8)
    assert result.advantages[0] == pytest.approx([-1 / 6, -1 / 6, 1 / 6, 1 / 6]) and result.term_applied

    baseline = darling_rewards(groups, quality, same, RewardConfig(combine="quality"))
    assert baseline.rewards == quality and not baseline.term_applied
    assert baseline.effect == effect  # what DARLING's term would have done to the same groups
    assert darling_rewards(groups, quality, None, RewardConfig(combine="quality")).effect is None


def test_batch_advantages_scale_as_trl_does():
    from darling.rl.reward import batch_advantages

    rewards = [[1.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0]]
    assert batch_advantages(rewards) == [[0.75, -0.25, -0.25, -0.25], [0.0] * 4]
    group_std = 0.5  # unbiased std of (1, 0, 0, 0)
    expected = [a / (group_std + 1e-4) for a in (0.75, -0.25, -0.25, -0.25)]
    assert batch_advantages(rewards, "group")[0] == pytest.approx(expected)
    assert batch_advantages(rewards, "group")[1] == [0.0] * 4
    flat = [1.0, 0, 0, 0, 2, 2, 2, 2]
    mean = sum(flat) / 8
    batch_std = (sum((x - mean) ** 2 for x in flat) / 7) ** 0.5
    assert batch_advantages(rewards, "batch")[0][0] == pytest.approx(0.75 / (batch_std + 1e-4))
    with pytest.raises(ValueError, match="scale must be one of"):
        batch_advantages(rewards, "std")


def test_the_reward_function_logs_exactly_the_training_log_table():
    """Every metric the TRL reward function logs is defined in ``core/training_log.py`` (what the report, curves,
    compare and benches read), and every metric there is logged: by DARLING, or (the would-be share) by GRPO, or
    (distinct keys) where a checker reads the prompt."""
    from darling.core.checkers import WORLD
    from darling.core.training_log import DISTINCT_KEYS, LOG_METRICS, WOULD_CHANGE
    from darling.core.world import world_prompt
    from darling.core.world_data import CATEGORIES
    from darling.rl.trl_reward import DarlingRewardFunction

    same = equivalence_of({("apple", "apple!"): True})
    category = sorted(CATEGORIES)[0]
    a, b, c = CATEGORIES[category][:3]
    world = [world_prompt(category)] * 4, [f"{a}", f"{a} !", f"{b}", f"{c}"]
    logged: dict[str, dict[str, float]] = {}
    for combine, checker, (prompts, completions) in (
        ("multiply", None, (["fruit?"] * 4, ["apple", "apple!", "pear", "plum"])),
        ("quality", None, (["fruit?"] * 4, ["apple", "apple!", "pear", "plum"])),
        ("checked", WORLD, world),
    ):
        reward = DarlingRewardFunction(
            4,
            same,
            RewardConfig(combine="quality" if combine == "checked" else combine),
            lambda p, t, k: [1.0] * len(t),
            term=RewardConfig(),
            checker=checker,
        )
        logged[combine] = {}
        reward(prompts, completions, log_metric=lambda key, value, out=logged[combine]: out.__setitem__(key, value))
    table = {m.key for m in LOG_METRICS}
    assert set(logged["multiply"]) == table - {WOULD_CHANGE.key, DISTINCT_KEYS.key}
    assert set(logged["quality"]) == table - {DISTINCT_KEYS.key}
    assert logged["quality"][WOULD_CHANGE.key] == 1.0  # its one group has a repeat
    assert set(logged["checked"]) == table and logged["checked"][DISTINCT_KEYS.key] == 3.0  # a, a !, b, c
