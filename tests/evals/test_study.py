"""`darling eval study`: per-seed DARLING-minus-GRPO differences pooled by a hierarchical bootstrap (seeds, then
prompts), from the compare.json files `eval compare` writes; and `pipeline --seeds` laying out one run per seed."""

import json

import numpy as np
import pytest
from helpers import assert_one_line_error, darling, darling_in_process, write_log, write_scores

from darling.core.errors import UserInputError
from darling.evals.compare import paired_difference
from darling.evals.study import hierarchical_bootstrap


def test_the_pooled_interval_carries_the_seeds_disagreement():
    rng = np.random.default_rng(0)
    agree = [rng.normal(1.0, 0.5, 40) for _ in range(3)]
    disagree = [rng.normal(mean, 0.5, 40) for mean in (-1.0, 1.0, 3.0)]
    tight, wide = hierarchical_bootstrap(agree), hierarchical_bootstrap(disagree)
    assert abs(tight["mean"] - np.mean([g.mean() for g in agree])) < 1e-12 and tight["seeds"] == 3
    assert tight["interval"][0] < tight["mean"] < tight["interval"][1]
    # Pooling the prompts as if one seed gives about the tight width; the seeds' spread widens the pooled interval.
    flat = paired_difference(np.concatenate(disagree), np.zeros(120))
    assert (wide["interval"][1] - wide["interval"][0]) > 3 * (flat["interval"][1] - flat["interval"][0])
    with pytest.raises(UserInputError, match="at least two seeds"):
        hierarchical_bootstrap([agree[0]])


def test_eval_study_pools_the_compare_folders_of_each_seed(tmp_path):
    folders = []
    for seed, extra in ((1, 2), (2, 1), (3, 0)):  # DARLING finds `extra` more distinct answers per prompt than GRPO
        darling_groups = {f"p{i}": [(f"a{j}", j) for j in range(1 + extra + i % 2)] for i in range(8)}
        grpo_groups = {f"p{i}": [("a", 0), ("a", 0)] for i in range(8)}
        write_scores(tmp_path / f"s{seed}" / "darling", darling_groups)
        write_scores(tmp_path / f"s{seed}" / "grpo", grpo_groups)
        out = tmp_path / f"s{seed}" / "compare"
        novelty = [f"darling-rl={tmp_path / f's{seed}' / 'darling'}", f"grpo-rl={tmp_path / f's{seed}' / 'grpo'}"]
        log = write_log(tmp_path / f"s{seed}" / "rl", [0.5, 0.5] if seed < 3 else [0.0, 0.1])  # seed 3: 5%
        training = ["--training", f"darling-rl={log}"]
        darling("eval", "compare", "--novelty", novelty[0], "--novelty", novelty[1], *training, "-o", out, check=True)
        folders.append(f"{seed}={out}")
    args = ["eval", "study", *[w for f in folders for w in ("--compare", f)], "-o", tmp_path / "study"]
    result = darling(*args, check=True)
    assert "novelty/distinct: darling-rl - grpo-rl = +1.500" in result.stdout
    study = json.loads((tmp_path / "study" / "study.json").read_text())
    distinct = study["metrics"]["novelty/distinct"]
    assert [distinct["per_seed"][s]["mean"] for s in ("1", "2", "3")] == [2.5, 1.5, 0.5]
    lo, hi = distinct["pooled"]["interval"]
    assert lo < 1.5 < hi and hi - lo > 1.0  # the seeds differ by 1 each: the pooled interval says so
    report = (tmp_path / "study" / "study.md").read_text()
    assert "| novelty/distinct |" in report
    assert "`darling-rl`'s diversity term changed in training: seed 1: 50%, seed 2: 50%, seed 3: 5%." in report
    assert "In seed 3 the term changed fewer than 10% of the groups" in report
    one = darling_in_process("eval", "study", "--compare", folders[0], "-o", tmp_path / "one")
    assert_one_line_error(one, "at least two seeds")
    wrong = darling_in_process(*args[:-2], "--pair", "x - y", "-o", tmp_path / "wrong")
    assert_one_line_error(wrong, "no difference 'x - y'")
    assert not (tmp_path / "one").exists() and not (tmp_path / "wrong").exists()


def test_pipeline_seeds_writes_one_run_per_seed(tmp_path):
    result = darling("pipeline", "--preset", "cpu-compare", "--seeds", "1,2", "--dry-run", "-o", tmp_path / "study")
    assert result.returncode == 0, result.stderr
    for seed in (1, 2):
        script = (tmp_path / "study" / f"seed-{seed}" / "commands.sh").read_text()
        assert f"--seed {seed}" in script and "rl-train" in script
    same = darling_in_process("pipeline", "--preset", "cpu", "--seeds", "1,1", "-o", tmp_path / "bad")
    assert_one_line_error(same, "at least two different seeds")


def test_the_arms_table_has_a_column_per_metric_a_study_has():
    """RUN/arms.md's columns come from the metric table: the item count shows where the studies have it (the item
    prompts), and no empty column where none has (it was left out of the table, then shown empty everywhere)."""
    from darling.evals.study import render_pooled
    from darling.pipeline.stages.compare import ARM_TABLE_METRICS

    pooled = {"mean": 0.5, "interval": [0.1, 0.9]}
    items = {"metrics": {"novelty/distinct_items": {"pooled": pooled}, "novelty/distinct": {"pooled": pooled}}}
    naming = {"metrics": {"novelty/distinct": {"pooled": pooled}}}
    with_items = render_pooled({"study": {**items, "pair": "a - b"}}, ARM_TABLE_METRICS)
    assert "novelty/distinct_items" in with_items.splitlines()[4]
    without = render_pooled({"study": {**naming, "pair": "a - b"}}, ARM_TABLE_METRICS)
    assert "distinct_items" not in without and "| study | pair | novelty/distinct |" in without
