"""The packaged checks (darling.classifier.checks): the pair sets ship, are what they claim to be, and are scored
at the classifier's own threshold, beside word overlap, flagged when the classifier saw their prompts."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from helpers import assert_one_line_error, darling_in_process
from sklearn.metrics import roc_auc_score

from darling.classifier.checks import checks_markdown, score_checks
from darling.classifier.config import CHECK_NAMES
from darling.classifier.labelled_pairs import load_pairs
from darling.classifier.ngram import ngram_scorer
from darling.core.lexical import BASELINES, jaccard, overlap_scores


def test_noveltybench_heldout_is_the_100_balanced_pairs_and_shares_no_prompt_with_the_1000():
    held, train = load_pairs("noveltybench-heldout"), load_pairs("noveltybench")
    assert len(held) == 100 and sum(held.labels) == 50
    assert not {p.prompt for p in held.pairs} & {p.prompt for p in train.pairs}


def test_word_overlap_ranks_the_minimal_pairs_backwards():
    """By construction: for every prompt the key-swapped pair shares more words than the paraphrase."""
    pairs = load_pairs("minimal-pairs").pairs
    labels = np.array([p.similar for p in pairs])
    assert 0.4 < labels.mean() < 0.6 and len(pairs) >= 100
    for key in BASELINES:
        assert roc_auc_score(labels, overlap_scores(pairs, key)) <= 0.10, key
    by_prompt = defaultdict(dict)
    for p in pairs:
        by_prompt[p.prompt][p.similar] = jaccard(*p.texts)
    assert all(set(v) == {0, 1} and v[0] > v[1] for v in by_prompt.values())
    assert {p.extra["form"] for p in pairs} == {"short", "sentence", "paragraph"}


def test_checks_are_scored_at_the_scorers_own_threshold_beside_word_overlap(tmp_path):
    clf = ngram_scorer(n=1, threshold=0.3)  # token Jaccard as a scorer: its row must equal the Jaccard row's AUC
    fit = load_pairs("noveltybench").pairs[:300]
    results = score_checks(clf, CHECK_NAMES, fit, tmp_path)
    assert list(results) == list(CHECK_NAMES)
    held = results["noveltybench-heldout"]
    assert held["classifier"]["threshold"] == 0.3  # never refitted on the check
    assert held["classifier"]["roc_auc"] == pytest.approx(held["jaccard"]["roc_auc"])
    assert held["jaccard"]["threshold"] != 0.3  # the baselines' thresholds come from the fit pairs
    assert held["prompts_in_training"] == 0 and held["published_roc_auc"]["NoveltyBench's DeBERTa-v3-large"] == 0.812
    low, high = held["classifier"]["intervals_95"]["roc_auc"]
    assert low < held["classifier"]["roc_auc"] < high
    assert results["minimal-pairs"]["classifier"]["roc_auc"] < 0.2  # word overlap fails it
    rows = (tmp_path / "noveltybench-heldout" / "predictions.jsonl").read_text().splitlines()
    assert len(rows) == 100 and {"pair_id", "prob_equivalent"} <= set(json.loads(rows[0]))
    table = checks_markdown(results)
    assert "not held out" not in table and "| token Jaccard (threshold from the training pairs) |" in table


def test_a_check_whose_prompts_were_trained_on_says_it_is_not_held_out(tmp_path):
    held = load_pairs("noveltybench-heldout").pairs
    results = score_checks(ngram_scorer(), ["noveltybench-heldout"], held[:20], tmp_path)
    assert results["noveltybench-heldout"]["prompts_in_training"] == len({p.prompt for p in held[:20]})
    assert "**not held out**" in checks_markdown(results)


def test_an_unknown_check_is_one_line_naming_the_choices(tmp_path):
    result = darling_in_process(
        "train-classifier", "--data", "noveltybench", "--output", tmp_path / "clf", "--checks", "heldout"
    )
    assert_one_line_error(result, "checks: unknown check 'heldout'", "noveltybench-heldout")
    assert not (tmp_path / "clf").exists()


def test_the_packaged_item_pairs_are_the_checkers_labels_and_the_heldout_set_shares_no_category():
    """item-pairs (the training categories, balanced as the item chain pairs) and item-pairs-heldout (a check): each
    label is what the items checker reads off the two answers today, and no held-out category is a training one."""
    from darling.core.checkers import ITEMS
    from darling.core.items import category_of, item_prompt_sets

    train, held = load_pairs("item-pairs").pairs, load_pairs("item-pairs-heldout").pairs
    for pairs in (train, held):
        for p in pairs:
            keys = ITEMS.keys(p.prompt, list(p.texts))
            assert None not in keys and p.similar == int(keys[0] == keys[1]) and p.extra["keys"] == keys
    assert sum(train_labels := [p.similar for p in train]) * 2 == len(train_labels) >= 300
    packaged = {name: {r["category"] for r in rows} for name, rows in item_prompt_sets().items()}
    assert {category_of(p.prompt).key for p in train} <= packaged["items-train"]
    assert {category_of(p.prompt).key for p in held} <= packaged["items-heldout"]
    assert len({p.prompt for p in held}) >= 20 and len(held) >= 300
