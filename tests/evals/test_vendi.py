"""The Vendi score beside distinct (issue 63): darling's, from the eval classifier's own similarity, equals the
``vendi-score`` package's on the same kernel, for each kind of export and several orders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from vendi_score import vendi

from darling.classifier.scoring import load_scorer
from darling.evals.config import NOVELTYBENCH
from darling.evals.novelty_partition import partition_responses, partition_with_kernels
from darling.evals.vendi import vendi_score

GROUPS = [
    ["The sky is blue today.", "Today the sky is blue.", "I had pasta for lunch.", "Paris is in France."],
    ["Mars is a planet.", "Mars is a planet.", "Mars is a planet."],
]


def test_the_score_equals_the_vendi_score_package_on_the_classifiers_kernel(any_export):
    scorer = load_scorer(any_export)
    kernels = scorer.similarity_matrices(GROUPS)
    assert [k.shape for k in kernels] == [(4, 4), (3, 3)]
    for kernel in kernels:
        assert np.allclose(kernel, kernel.T) and np.allclose(np.diag(kernel), 1.0)
        for q in (1, 2, 0.5, math.inf):
            expected = vendi.score_K(kernel, q="inf" if math.isinf(q) else q)
            assert vendi_score(kernel, q) == pytest.approx(expected, rel=1e-9)
    different, same = (vendi_score(k) for k in kernels)
    assert 1.0 <= different <= 4.0 and different > same  # four sentences, two of one meaning, hold more than one
    if scorer.kind == "cross-encoder":  # its kernel is P(equivalent), both orders averaged
        both = scorer.prob_equivalent([(GROUPS[0][0], GROUPS[0][2])], symmetric=True)[0]
        assert kernels[0][0, 2] == pytest.approx(both)
    else:  # the cosine: identical answers are one answer
        assert same == pytest.approx(1.0)


def test_partition_and_kernels_together_equal_each_alone_and_a_bi_encoder_embeds_once(any_export):
    scorer = load_scorer(any_export)
    classes, _ = partition_responses(GROUPS, scorer, NOVELTYBENCH)
    kernels = scorer.similarity_matrices(GROUPS)
    calls = []
    if scorer.kind == "bi-encoder":  # count the real scorer's embedding calls (its results untouched)
        embed = scorer.embed
        scorer.embed = lambda texts: calls.append(len(texts)) or embed(texts)
    together, stats, together_kernels = partition_with_kernels(GROUPS, scorer, NOVELTYBENCH)
    assert together == classes
    assert all(np.allclose(a, b) for a, b in zip(together_kernels, kernels, strict=True))
    if scorer.kind == "bi-encoder":
        assert calls == [7] and stats.scorer_calls == 1  # every answer once, for the partition and the kernel


def test_the_bounds_hold_for_identical_and_orthogonal_answers():
    for q in (1, 2, math.inf):
        assert vendi_score(np.ones((5, 5)), q) == pytest.approx(1.0)
        assert vendi_score(np.eye(5), q) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="square"):
        vendi_score(np.ones((2, 3)))


def test_a_negative_order_is_refused_in_one_line(tmp_path):
    from helpers import assert_one_line_error, darling

    args = ["--prompts", "x", "--model", "m", "--classifier", "c", "--output", str(tmp_path / "o")]
    assert_one_line_error(darling("eval", "novelty", *args, "--vendi-order", "-1"), "--vendi-order must be >= 0")
