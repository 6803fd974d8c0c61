"""The classifier's floor (issue 67, darling.classifier.floor): train-classifier stops, exit 2 in one line, when its
validation split shows it learned nothing; it reports its validation AUC beside the content-word rule's."""

import json
import random

from helpers import darling, write_jsonl

from darling.classifier.floor import floor_verdict
from darling.classifier.labelled_pairs import load_pairs


def verdict(interval: list[float], floor: float | None = 0.7) -> dict:
    return floor_verdict(floor, {"roc_auc": sum(interval) / 2, "n": 57, "intervals_95": {"roc_auc": interval}}, {})


def test_the_floor_stops_what_the_split_shows_is_poor_and_not_what_it_cannot_tell():
    """Issue 61's seed-1 classifier (AUC 0.50 on 57 pairs: its interval wholly below 0.7) stops; the main job's (AUC
    0.60 on 29 pairs, [0.37, 0.82]: too few pairs to show it poor) and any classifier without a floor do not."""
    assert not verdict([0.35, 0.66])["passed"]
    assert verdict([0.37, 0.82])["passed"] and verdict([0.35, 0.66], floor=None)["passed"]


def item_pairs(tmp_path, shuffled: bool):
    rows = [
        {"prompt": p.prompt, "generation_0": p.generation_0, "generation_1": p.generation_1, "similar": p.similar}
        for p in load_pairs("item-pairs").pairs
    ]
    if shuffled:  # labels that carry nothing: whatever it trains, the classifier cannot learn the task
        labels = [r["similar"] for r in rows]
        random.Random(0).shuffle(labels)
        rows = [{**r, "similar": y} for r, y in zip(rows, labels, strict=True)]
    return write_jsonl(tmp_path / ("shuffled.jsonl" if shuffled else "pairs.jsonl"), rows)


def train(data, output, *extra):
    args = ["--preset", "cpu", "--max-steps", "3", "--set", "max_tokens_per_response=48", "--val-fraction", "0.3"]
    return darling("train-classifier", "--data", data, "--output", output, *args, "--checks", "none", *extra)


def test_a_classifier_trained_on_labels_that_carry_nothing_is_stopped_in_one_line(tmp_path, minilm_path):
    """The packaged item pairs with their labels shuffled: the default floor stops it (exit 2, one line naming the
    figure, the floor and the setting), its export written and flagged; the same pairs with their labels pass."""
    stopped = train(item_pairs(tmp_path, shuffled=True), tmp_path / "coin")
    # after training's own log lines, the refusal: exit 2, one error line, no traceback
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr
    errors = [line for line in stopped.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0] == stopped.stderr.strip().splitlines()[-1]
    for fragment in ("did not learn its task: validation AUC", "auc_floor = 0.7", "--set classifier.auc_floor"):
        assert fragment in errors[0]
    floor = json.loads((tmp_path / "coin" / "darling.json").read_text())["floor"]
    assert floor["passed"] is False and floor["interval"][1] < 0.7 and floor["pairs"] >= 90
    learned = train(item_pairs(tmp_path, shuffled=False), tmp_path / "items")
    assert learned.returncode == 0, learned.stderr
    meta = json.loads((tmp_path / "items" / "darling.json").read_text())
    assert meta["floor"]["passed"] and meta["floor"]["interval"][1] >= 0.7
    # the validation AUC beside the content-word rule's on the same pairs, in the output and the model card
    rule = meta["validation_content_rule"]
    assert rule["rule"] == "content-word rule" and rule["n"] == meta["validation_metrics"]["n"]
    assert f"the content-word rule {rule['roc_auc']:.3f}" in learned.stdout.replace("\n", " ")
    assert "the content-word rule" in (tmp_path / "items" / "README.md").read_text()
    # the floor lowered: the coin goes on, said so
    on = train(item_pairs(tmp_path, shuffled=True), tmp_path / "coin-on", "--auc-floor", "0.1")
    assert on.returncode == 0 and "floor 0.1, passed" in on.stdout.replace("\n", " ")
