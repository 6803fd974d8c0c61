"""The other ways to keep diversity (issue 39), each against an independent reference on random batches: the pass@k
advantage against enumerating every k-subset (and, for 0/1 rewards, the paper's closed form); the n-gram partition
against deciding every pair with an n-gram overlap written here from scratch."""

import random

import pytest
from arm_references import closed_form, every_pair_partition, subsets_reference

from darling.classifier.ngram import ngram_scorer
from darling.classifier.partition import partition_texts
from darling.rl.passk import passk_advantages
from darling.rl.reward import batch_advantages


def test_passk_advantage_equals_enumerating_every_subset_on_random_groups():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 9)
        k = rng.randint(1, n)
        rewards = [rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]) for _ in range(n)]
        assert passk_advantages(rewards, k) == pytest.approx(subsets_reference(rewards, k), abs=1e-9)


def test_passk_advantage_on_0_1_rewards_is_the_papers_closed_form():
    rng = random.Random(1)
    for _ in range(200):
        n = rng.randint(2, 12)
        k = rng.randint(1, n)
        correct = [rng.randint(0, 1) for _ in range(n)]
        assert passk_advantages([float(c) for c in correct], k) == pytest.approx(closed_form(correct, k), abs=1e-9)


def test_passk_rewards_are_their_own_advantages_under_grpo_centring():
    """Returned as rewards, a trainer that centres per group without std scaling (TRL scale_rewards none, Eq. 6)
    gives exactly these advantages; and pass@k differs from GRPO where it should: one correct answer of 8 is
    worth more to pass@4 than one of 8 wrong answers is worth less."""
    groups = [[1.0, 0, 0, 0, 0, 0, 0, 0], [1.0, 1, 1, 1, 1, 1, 1, 0], [0.3, 0.9, 0.1, 0.5]]
    advantages = [passk_advantages(g, k) for g, k in zip(groups, (4, 4, 2), strict=True)]
    for centred, own in zip(batch_advantages(advantages, "none"), advantages, strict=True):
        assert centred == pytest.approx(own, abs=1e-12)
    assert advantages[1] == [0.0] * 8  # 7 correct of 8: every 4-subset passes, nothing to learn at k = 4
    grpo = batch_advantages([groups[1]], "none")[0]
    assert grpo[-1] < 0 and advantages[1][-1] == 0.0  # GRPO still pushes the one wrong answer down
    assert passk_advantages(groups[0], 1) == pytest.approx(subsets_reference(groups[0], 1))
    with pytest.raises(ValueError, match="k must be in"):
        passk_advantages([1.0, 0.0], 3)


def test_ngram_partition_equals_deciding_every_pair_from_scratch():
    rng = random.Random(2)
    words = ["the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "rug", "quickly", "today"]
    groups = []
    for _ in range(40):
        base = [rng.choice(words) for _ in range(rng.randint(0, 9))]
        group = []
        for _ in range(rng.randint(1, 8)):  # variants of one sentence: some share most 4-grams, some little
            variant = list(base)
            for _ in range(rng.randint(0, 3)):
                if variant and rng.random() < 0.5:
                    variant[rng.randrange(len(variant))] = rng.choice(words)
                else:
                    variant.insert(rng.randint(0, len(variant)), rng.choice(words))
            group.append(" ".join(variant).capitalize() + rng.choice(["", ".", "!"]))
        groups.append(group)
    for n, threshold in ((4, 0.5), (2, 0.3), (1, 0.8)):
        classes, stats = partition_texts(groups, ngram_scorer(n, threshold))
        assert classes == [every_pair_partition(g, n, threshold) for g in groups]
        assert stats.pairs_saved > 0  # transitivity spared some pairs: the pruned path is what was compared
    sizes = [len(set(c)) for c in partition_texts(groups, ngram_scorer())[0]]
    assert 1 < sum(sizes) / len(sizes) < max(len(g) for g in groups)  # neither all-equal nor all-distinct


def test_ngram_partition_is_the_lexical_ablation_the_paper_describes():
    """Padding a correct answer with filler makes it lexically new to the n-gram partition, though it says the same
    thing: the gaming the paper's ablation reports."""
    answer = "The answer is 12 because 3 times 4 is 12"
    padded = "Well, let us think step by step here. " + answer + " and that is all there is to it, friend."
    scorer = ngram_scorer()
    assert scorer.is_equivalent([(answer, answer + ".")]).tolist() == [True]
    assert scorer.is_equivalent([(answer, padded)]).tolist() == [False]
    assert scorer.kind == "ngram" and scorer.with_threshold(0.1).is_equivalent([(answer, padded)]).tolist() == [True]
