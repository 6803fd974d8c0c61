"""`darling eval compare`: the comparison's arithmetic on hand-made scores files (per-prompt figures, paired
bootstrap differences, the sentence the report writes from them), paired pass@k from eval math's generations, and
the command through its command line."""

import json

import pytest
from helpers import assert_one_line_error, darling, write_log, write_scores

from darling.evals.compare import compare_math, compare_novelty, paired_difference
from darling.evals.compare_report import novelty_lines
from darling.evals.novelty import novelty_utility
from darling.evals.prompt_metrics import COMPARE_COLUMNS


def write_math(folder, correct: dict[str, list[bool]]):
    """One model's eval math generations: per problem id, the correctness of each of its n samples."""
    from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY
    from darling.core.shards import ShardStore

    n = len(next(iter(correct.values())))
    rows = [
        {
            "rollout_id": f"{pid}-{i}",
            "problem_id": pid,
            "source": "arith",
            "model": "policy",
            "sample_index": i,
            "prompt_setting": "default",
            "problem": "1+1",
            "reference_answer": "2",
            "engine": "hf",
            "sampling": json.dumps({"n": n}),
            "response": "2",
            "finish_reason": "stop",
            "num_tokens": 1,
            "status": "ok",
            "extracted_answer": "2",
            "correct": ok,
        }
        for pid, flags in correct.items()
        for i, ok in enumerate(flags)
    ]
    ShardStore(folder / "generations" / "arith" / "policy", ROLLOUT_COLUMNS, ROLLOUT_KEY).append(rows)
    return folder


def test_figures_per_prompt_and_paired_differences(tmp_path):
    collapsed = {f"p{i}": [("Paris", 0), ("paris.", 0), ("Paris", 0), ("Rome", 1)] for i in range(6)}
    spread = {
        f"p{i}": [("Paris", 0), ("Oslo", 1), ("Rome", 2), ("a very long answer indeed here", 3)] for i in range(6)
    }
    folders = {"darling": write_scores(tmp_path / "d", spread), "grpo": write_scores(tmp_path / "g", collapsed)}
    result = compare_novelty(folders, "short-answer", 4, [("darling", "grpo")])
    assert result["prompts"] == 6
    grpo_utility = novelty_utility([0, 0, 0, 1], [1] * 4, 0.8)  # eval novelty's, read from its per_prompt.parquet
    assert result["policies"]["grpo"] == {
        "distinct": 2.0,
        "distinct_answers": 2.0,
        "distinct_items": None,  # no item prompt among these
        "vendi": None,  # these hand-written scores carry no similarity kernel
        "utility": pytest.approx(grpo_utility),
        "quality": 1.0,
        "short": 1.0,
    }
    darling_figures = result["policies"]["darling"]
    assert (darling_figures["distinct"], darling_figures["distinct_answers"], darling_figures["short"]) == (
        4.0,
        4.0,
        0.75,
    )
    assert darling_figures["quality"] == pytest.approx((3 + 4 / 6) / 4)
    diff = result["differences"]["darling - grpo"]
    # the same gap on every prompt
    assert diff["distinct"] == {"mean": 2.0, "interval": [2.0, 2.0], "n": 6, "values": [2.0] * 6}
    section = "\n".join(novelty_lines(result, "short-answer", 4))
    assert "distinct: darling above grpo by 2.00 classes per prompt" in section
    assert "quality: darling below grpo by" in section
    assert "distinct items" not in section  # no item prompt: the column and its definition are left out
    eval_quality = compare_novelty(folders, "eval", 4, [("darling", "grpo")])  # eval novelty's own quality column
    assert eval_quality["policies"]["darling"]["quality"] == 1.0


def test_distinct_items_over_the_item_prompts_only(tmp_path):
    """A mixed prompt set: the item count's mean and paired difference cover the item prompts alone, the other
    metrics every prompt; the report says which counts depend on the eval classifier."""
    from darling.core.items import categories

    prompts = {"planet": categories()["planet"].prompt, "month": categories()["month"].prompt}
    many = {
        "planet": [("Mars is red.", 0), ("Venus is hot.", 1), ("Saturn has rings.", 2)],
        "month": [("May is warm.", 0), ("June is warmer.", 0), ("July is hot.", 0)],  # one class, three items
        "p0": [("Paris", 0), ("Rome", 1), ("Oslo", 2)],
    }
    one = {
        "planet": [("Mars is red.", 0), ("Mars has moons.", 1), ("The red Mars.", 2)],  # three classes, one item
        "month": [("May is warm.", 0), ("May again.", 1), ("In May, yes.", 2)],
        "p0": [("Paris", 0), ("Paris", 0), ("Paris", 0)],
    }
    folders = {"a": write_scores(tmp_path / "a", many, prompts), "b": write_scores(tmp_path / "b", one, prompts)}
    result = compare_novelty(folders, "eval", 4, [("a", "b")])
    assert result["policies"]["a"]["distinct_items"] == 3.0 and result["policies"]["b"]["distinct_items"] == 1.0
    assert result["differences"]["a - b"]["distinct_items"]["n"] == 2  # the naming prompt p0 has no item count
    assert result["differences"]["a - b"]["distinct"]["n"] == 3
    section = "\n".join(novelty_lines(result, "eval", 4))
    assert "**distinct items (by rule)**: different category members" in section
    assert "(by the eval classifier" in section.split("**distinct (eval partition)**")[1].splitlines()[0]
    assert "(by the eval classifier" not in section.split("**distinct items (by rule)**")[1].splitlines()[0]
    assert "distinct items: a above b by 2.00 items per prompt" in section


def test_an_interval_that_includes_zero_is_reported_as_no_difference():
    d = paired_difference([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5], seed=0)
    assert d["mean"] == 0 and d["interval"][0] < 0 < d["interval"][1]
    result = {"policies": {}, "differences": {"darling-rl - grpo-rl": dict.fromkeys(COMPARE_COLUMNS, d)}, "prompts": 6}
    section = "\n".join(novelty_lines({**result, "bootstrap": 2000}, "short-answer", 4))
    assert "distinct: no difference shows at this budget" in section and "interval includes 0" in section


def test_pass_at_k_paired_over_the_problems_both_scored(tmp_path):
    """pass@k per problem from the graded samples (Chen et al.'s estimator), the difference paired over problems."""
    a = write_math(tmp_path / "a", {"p1": [True, True, False, False], "p2": [True, True, True, True]})
    b = write_math(tmp_path / "b", {"p1": [False, False, False, False], "p2": [True, False, False, False]})
    result = compare_math({"a": a, "b": b}, [1, 2], [("a", "b")])
    assert (result["problems"], result["n"]) == (2, 4)
    assert result["policies"]["a"]["pass@1"] == pytest.approx((0.5 + 1.0) / 2)
    assert result["policies"]["b"]["pass@2"] == pytest.approx((0.0 + 0.5) / 2)  # 1 - C(3,2)/C(4,2) = 0.5 on p2
    diff = result["differences"]["a - b"]["pass@1"]
    assert diff["mean"] == pytest.approx(((0.5 - 0) + (1 - 0.25)) / 2) and diff["n"] == 2


def test_the_command_writes_compare_json_and_the_report(tmp_path):
    groups = {f"p{i}": [("Paris", 0), ("Rome", 1)] for i in range(3)}
    write_scores(tmp_path / "x", groups)
    write_scores(tmp_path / "y", groups)
    out = tmp_path / "cmp"
    result = darling(
        "eval", "compare", "--novelty", f"x={tmp_path / 'x'}", "--novelty", f"y={tmp_path / 'y'}", "-o", out
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads((out / "compare.json").read_text())
    assert data["pairs"] == ["x - y"] and data["novelty"]["differences"]["x - y"]["distinct"]["mean"] == 0
    assert "x - y" in (out / "report.md").read_text()
    missing = darling(
        "eval",
        "compare",
        "--novelty",
        f"x={tmp_path / 'x'}",
        "--novelty",
        f"z={tmp_path / 'nope'}",
        "-o",
        tmp_path / "o2",
    )
    assert missing.returncode == 2 and "is not a folder" in missing.stderr and not (tmp_path / "o2").exists()


@pytest.mark.parametrize(("shares", "cannot_show"), [([0.0, 0.0, 0.0, 0.25], True), ([0.0, 0.5, 0.5, 1.0], False)])
def test_the_report_says_whether_darlings_term_acted(tmp_path, shares, cannot_show):
    """Beside the outcome, the share of DARLING's groups its term changed (and the share it would have changed in
    GRPO's); below 10% one sentence says the comparison cannot show DARLING's effect, and why."""
    groups = {f"p{i}": [("Paris", 0), ("Rome", 1)] for i in range(3)}
    write_scores(tmp_path / "x", groups)
    write_scores(tmp_path / "y", groups)
    write_log(tmp_path / "rl-x", shares)
    write_log(tmp_path / "rl-y", [0.5, 0.5, 0.75, 0.75], would=True)
    out = tmp_path / "cmp"
    argv = ["--novelty", f"x={tmp_path / 'x'}", "--novelty", f"y={tmp_path / 'y'}"]
    argv += ["--training", f"x={tmp_path / 'rl-x'}", "--training", f"y={tmp_path / 'rl-y'}"]
    result = darling("eval", "compare", *argv, "-o", out)
    assert result.returncode == 0, result.stdout + result.stderr
    term = json.loads((out / "compare.json").read_text())["term"]
    share = sum(shares) / 4
    assert term["x"]["applied"] and term["x"]["share"] == pytest.approx(share)
    assert term["x"]["steps_acted"] == sum(s > 0 for s in shares) and not term["y"]["applied"]
    report = (out / "report.md").read_text()
    assert f"`x`: changed **{share:.0%}** of its groups" in report
    assert "`y` (no diversity term): DARLING's would have changed 62% of its groups" in report
    assert ("This comparison cannot show DARLING's effect" in report) == cannot_show
    if cannot_show:
        assert "every response was in a class of its own" in report


def test_strict_length_scores_long_answers_zero(tmp_path):
    """--strict-length reaches compare's quality: a 5-word answer keeps 4/5 of short-answer's score, or none."""
    groups = {"p0": [("Paris", 0), ("Rome is a fine city", 1)]}
    write_scores(tmp_path / "x", groups)
    write_scores(tmp_path / "y", groups)
    for strict, expected in [(False, (1 + 4 / 5) / 2), (True, 0.5)]:
        out = tmp_path / f"cmp-{strict}"
        flags = ["--strict-length"] if strict else []
        argv = ["--novelty", f"x={tmp_path / 'x'}", "--novelty", f"y={tmp_path / 'y'}", "--quality", "short-answer"]
        argv += [*flags, "-o", out]
        assert darling("eval", "compare", *argv).returncode == 0
        data = json.loads((out / "compare.json").read_text())
        assert (
            data["novelty"]["policies"]["x"]["quality"] == pytest.approx(expected) and data["strict_length"] == strict
        )


def test_an_eval_folder_without_a_metric_column_is_refused_in_one_line(tmp_path):
    """A per_prompt.parquet of an older darling (no distinct_answers column): rerun eval novelty, said in one line."""
    import polars as pl

    folder = write_scores(tmp_path / "old", {"p0": [("Paris", 0), ("Rome", 1)]})
    per_prompt = folder / "per_prompt.parquet"
    pl.read_parquet(per_prompt).drop("distinct_answers").write_parquet(per_prompt)
    write_scores(tmp_path / "new", {"p0": [("Paris", 0), ("Rome", 1)]})
    result = darling(
        "eval", "compare", "--novelty", f"a={folder}", "--novelty", f"b={tmp_path / 'new'}", "-o", tmp_path / "c"
    )
    assert_one_line_error(result, "no column 'distinct_answers'")
    assert not (tmp_path / "c" / "compare.json").exists()


def test_training_curves_show_a_running_mean_beside_each_steps_point(tmp_path, monkeypatch):
    """At 2 groups a step the per-step values of two runs cross at every step: the figure draws each run's points
    faint and their running mean (a quarter of the run, 2-8 steps) as the line a reader follows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from darling.evals.compare import plot_curves, running_mean, trend_window

    assert running_mean([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert [trend_window(n) for n in (4, 16, 64)] == [2, 4, 8]
    zigzag = [0.2, 0.8] * 8
    curves = {"darling": {"step": list(range(1, 17)), "distinct answers": zigzag}}
    figures = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read its lines back (closed below)
    plot_curves(curves, tmp_path / "curves.png")
    lines = [line for ax in figures[0].axes for line in ax.get_lines()]
    trend = next(line for line in lines if line.get_label() == "darling (mean of 4 steps)")
    assert list(trend.get_ydata())[4:] == pytest.approx([0.5] * 12)  # the zigzag's trend is flat at its mean
    assert (tmp_path / "curves.png").exists()
    real_close(figures[0])
