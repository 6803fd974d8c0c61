"""The per-prompt metric table (``evals/prompt_metrics.py``): each metric of one prompt's answers, and the columns
eval novelty writes from it."""

import pytest

from darling.evals.prompt_metrics import PROMPT_METRIC_NAMES, PromptAnswers, mean_key, metric_columns


def test_each_metric_of_one_prompts_answers():
    answers = PromptAnswers(["Paris", "paris.", "Rome", "Oslo"], [0, 0, 1, 1], [2, 4, 6, 8], utility=0.5)
    columns = metric_columns([answers])
    assert list(columns) == list(PROMPT_METRIC_NAMES)
    assert columns["distinct"] == [2.0]  # the partition's classes
    assert columns["distinct_answers"] == [3.0]  # Paris and paris. are one answer; the partition joined Rome, Oslo
    assert columns["utility"] == [0.5] and columns["quality"] == [pytest.approx(5.0)]
    assert columns["distinct_items"] == [None]  # no item prompt: the count does not apply


def test_distinct_items_reads_the_item_off_each_answer():
    """The classifier-free count of the item prompts: the partition (one class for all) does not enter it."""
    from darling.core.items import categories

    texts = ["Mars is red.", "Mars has two moons, Phobos and Deimos.", "Venus is hot.", "I like the stars."]
    answers = PromptAnswers(texts, [0, 0, 0, 0], [1] * 4, utility=0.25, prompt=categories()["planet"].prompt)
    columns = metric_columns([answers])
    assert columns["distinct_items"] == [2.0] and columns["distinct"] == [1.0]


def test_metric_means_are_named_after_the_metric():
    assert [mean_key(name) for name in PROMPT_METRIC_NAMES] == [
        "mean_distinct",
        "mean_distinct_answers",
        "mean_distinct_items",
        "mean_vendi",
        "mean_utility",
        "mean_quality",
    ]


def test_a_folder_scored_before_a_metric_was_added_is_not_finished(tmp_path):
    """The benches rescore such a folder (eval compare would refuse it) instead of skipping it as done."""
    import json

    from darling.evals.prompt_metrics import has_every_metric

    assert not has_every_metric(tmp_path)  # nothing scored
    means = {mean_key(name): 1.0 for name in PROMPT_METRIC_NAMES}
    (tmp_path / "metrics.json").write_text(json.dumps({k: v for k, v in means.items() if k != "mean_distinct_answers"}))
    assert not has_every_metric(tmp_path)
    (tmp_path / "metrics.json").write_text(json.dumps(means))
    assert has_every_metric(tmp_path)
