"""`darling eval partitions` (issue 61): how a partition splits answers a checker calls the same and joins answers it
calls different, counted over the answer pairs of each prompt, from real eval novelty files through the command line."""

import json

import pytest
from helpers import assert_one_line_error, darling_in_process, write_scores

from darling.core.items import categories

PLANET, MONTH = categories()["planet"].prompt, categories()["month"].prompt
# Two answers naming Mars in other words (the 4-gram rule splits them), two near-identical sentences naming two
# different months (the 4-gram rule joins them), answers naming nothing (never counted).
GROUPS = {
    "planet": [("Mars is the red planet.", 0), ("I would choose Mars, it is fourth.", 1), ("Venus is hot.", 2)],
    "month": [
        ("My favourite month of the year is May.", 0),
        ("My favourite month of the year is June.", 0),
        ("Months are long.", 1),
        ("May is warm and sunny.", 2),
    ],
}


def test_splits_and_joins_are_counted_against_the_checker_and_refused_off_its_prompts(tmp_path):
    answers = write_scores(tmp_path / "start", GROUPS, prompts={"planet": PLANET, "month": MONTH})
    result = darling_in_process("eval", "partitions", "--answers", f"start={answers}", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "out" / "partitions.json").read_text())["sets"]["start"]
    # same-key pairs: (Mars, Mars) and (May, May): 2; different-key pairs: planet (Mars, Venus) x2, month
    # (May, June) x2: 4 (pairs with "Months are long." have no key on one side, and are never counted)
    ceiling, ngram = table["partitions"]["checker (ceiling)"], table["partitions"]["4-gram rule"]
    assert (ceiling["splits_same_key"]["share"], ceiling["joins_different_keys"]["share"]) == (0.0, 0.0)
    assert ngram["splits_same_key"] == {"share": 1.0, "interval": [1.0, 1.0], "pairs": 2}
    # the rule joins the two "My favourite month ..." sentences (May, June): 1 of 4 different-key pairs
    joins = ngram["joins_different_keys"]
    assert joins["share"] == pytest.approx(1 / 4) and joins["pairs"] == 4
    # the content-word rule (stop words and the prompt's words left out) joins the two Mars sentences ({mars, red},
    # {choose, mars, fourth}) and the May and June ones ({favourite}, {favourite, june}); "May is warm and sunny."
    # shares none ("may" is a stop word): it splits 1 of the 2 same-key pairs and joins 1 of the 4 different-key ones
    content = table["partitions"]["content-word rule"]
    assert content["splits_same_key"]["share"] == pytest.approx(1 / 2)
    assert content["joins_different_keys"]["share"] == pytest.approx(1 / 4)
    assert table["keyed_share"] == pytest.approx(6 / 7)
    assert "| 4-gram rule | 3.00 | 1.000 [1.00, 1.00] (of 2) | 0.250" in (tmp_path / "out" / "report.md").read_text()
    # an answer naming two members is read by its first (Mars) in the all-keys figures and left out of the one-key
    # ones: same-key pairs 1 of all, 0 of one-key; different-key pairs 2 of all, 1 of one-key
    listed = {"planet": [("Mars is red.", 0), ("Mars and Venus are rocky.", 1), ("Venus is hot.", 2)]}
    answers = write_scores(tmp_path / "listed", listed, prompts={"planet": PLANET})
    assert darling_in_process("eval", "partitions", "--answers", f"l={answers}", "-o", tmp_path / "l").returncode == 0
    table = json.loads((tmp_path / "l" / "partitions.json").read_text())["sets"]["l"]
    row = table["partitions"]["checker (ceiling)"]
    assert (row["splits_same_key"]["pairs"], row["joins_different_keys"]["pairs"]) == (1, 2)
    assert (row["one_key"]["splits_same_key"]["pairs"], row["one_key"]["joins_different_keys"]["pairs"]) == (0, 1)
    assert table["one_key_share"] == pytest.approx(2 / 3) and table["keyed_share"] == 1.0
    naming = write_scores(tmp_path / "naming", {"fruit": [("Apple.", 0)]})  # "Name fruit.": no item prompt
    bad = darling_in_process("eval", "partitions", "--answers", f"naming={naming}", "-o", tmp_path / "bad")
    assert_one_line_error(bad, "--answers naming", "has no items checker")
    assert not (tmp_path / "bad").exists()


def test_each_scorer_gets_its_auc_over_the_keyed_pairs(tmp_path):
    """The threshold-free figure beside each partition: how its own score orders the same-key pairs above the
    different-key ones (scikit-learn's ROC AUC of the pairs a checker labels), with a bootstrap interval."""
    from sklearn.metrics import roc_auc_score

    from darling.core.lexical import content_jaccard, ngram_jaccard

    answers = write_scores(tmp_path / "start", GROUPS, prompts={"planet": PLANET, "month": MONTH})
    result = darling_in_process("eval", "partitions", "--answers", f"start={answers}", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    aucs = json.loads((tmp_path / "out" / "partitions.json").read_text())["sets"]["start"]["auc"]
    assert set(aucs) == {"4-gram rule", "content-word rule"}  # the checker's own partition has no score
    keyed = [  # the 6 keyed pairs, same key first: (Mars, Mars), (May, May); then the 4 different-key ones
        (PLANET, GROUPS["planet"][0][0], GROUPS["planet"][1][0], 1),
        (MONTH, GROUPS["month"][0][0], GROUPS["month"][3][0], 1),
        (PLANET, GROUPS["planet"][0][0], GROUPS["planet"][2][0], 0),
        (PLANET, GROUPS["planet"][1][0], GROUPS["planet"][2][0], 0),
        (MONTH, GROUPS["month"][0][0], GROUPS["month"][1][0], 0),
        (MONTH, GROUPS["month"][1][0], GROUPS["month"][3][0], 0),
    ]
    labels = [same for *_, same in keyed]
    expected = {
        "4-gram rule": roc_auc_score(labels, [ngram_jaccard(a, b, 4) for _, a, b, _ in keyed]),
        "content-word rule": roc_auc_score(labels, [content_jaccard(a, b, p) for p, a, b, _ in keyed]),
    }
    for name, figure in aucs.items():
        assert figure["auc"] == pytest.approx(expected[name]) and figure["pairs"] == 6
        low, high = figure["interval"]
        assert 0 <= low <= high <= 1
    assert "| content-word rule | " in (tmp_path / "out" / "report.md").read_text().split("AUC over keyed pairs")[-1]
