import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score

from darling.classifier.calibration import binary_metrics, choose_threshold, expected_calibration_error


def test_ece_hand_computed():
    # bin [0.1, 0.2): two predictions of 0.1, one positive -> |0.1 - 0.5| * 2/4
    # bin [0.9, 1.0]: two predictions of 0.9, both positive -> |0.9 - 1.0| * 2/4
    assert expected_calibration_error([0, 1, 1, 1], [0.1, 0.1, 0.9, 0.9]) == pytest.approx(0.2 + 0.05)
    assert expected_calibration_error([0, 1], [0.0, 1.0]) == 0.0


@pytest.mark.parametrize("objective, fn", [("balanced_accuracy", balanced_accuracy_score), ("f1", f1_score)])
def test_chosen_threshold_is_optimal_against_brute_force(objective, fn):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 300)
    probs = np.clip(0.3 * labels + rng.normal(0.35, 0.2, 300), 0, 1)
    t = choose_threshold(labels, probs, objective)
    best = max(fn(labels, (probs >= c).astype(int)) for c in np.linspace(0, 1, 2001))
    assert fn(labels, (probs >= t).astype(int)) >= best - 1e-12


@pytest.mark.parametrize("labels", [[1, 1, 1, 0], [0, 0, 0, 1]])
def test_threshold_search_considers_all_positive_and_all_negative(labels):
    """Mostly one label and a ranking that points the wrong way: calling every pair the majority label is the
    most accurate decision, so the search must be able to put the threshold outside the probabilities."""
    probs = [0.1, 0.2, 0.3, 0.4] if labels[0] == 1 else [1.0, 0.8, 0.7, 0.6]
    t = choose_threshold(labels, probs, "accuracy")
    preds = (np.asarray(probs) >= t).astype(int)
    assert preds.tolist() == [labels[0]] * 4 and (preds == labels).mean() == 0.75


def test_metrics_match_sklearn():
    labels = np.array([0, 0, 1, 1, 1, 0])
    probs = np.array([0.1, 0.6, 0.7, 0.4, 0.9, 0.2])
    m = binary_metrics(labels, probs, 0.5)
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["roc_auc"] == pytest.approx(roc_auc_score(labels, probs))
    assert m["f1"] == pytest.approx(f1_score(labels, probs >= 0.5))
    assert m["n"] == 6 and m["threshold"] == 0.5


def test_an_expected_share_chooses_the_threshold_for_accuracy_at_that_share():
    """Validation has 25% equivalent pairs; the user expects 50%. Accuracy on validation picks a high threshold (few
    pairs called equivalent), accuracy at the stated share the one balanced accuracy picks, and a share of 25%
    gives back validation's own accuracy optimum."""
    rng = np.random.default_rng(1)
    labels = np.array([1] * 100 + [0] * 300)
    probs = np.clip(0.25 * labels + rng.normal(0.4, 0.15, 400), 0, 1)
    t_acc, t_bal = choose_threshold(labels, probs, "accuracy"), choose_threshold(labels, probs, "balanced_accuracy")
    assert t_acc > t_bal + 0.02
    assert choose_threshold(labels, probs, "accuracy", share=0.5) == t_bal
    assert choose_threshold(labels, probs, "accuracy", share=0.25) == t_acc
    # at a 50% share, reweighting the validation pairs is what a balanced test set measures
    balanced = np.concatenate([np.flatnonzero(labels == 1)] * 3 + [np.flatnonzero(labels == 0)])
    acc = lambda t: ((probs[balanced] >= t) == labels[balanced]).mean()  # noqa: E731
    assert acc(t_bal) > acc(t_acc)
