"""The DARLING-vs-GRPO comparison's arithmetic on hand-made scores files: per-prompt figures, paired bootstrap
differences, and the sentence the report writes from them."""

import polars as pl
import pytest

from darling.pipeline.compare import compare_policies, paired_difference
from darling.pipeline.policy_report import compare_section


def write_scores(path, groups):
    """groups: {prompt_id: [(response, class_id), ...]} -> a scores.parquet like eval novelty's."""
    rows = [
        {"prompt_id": pid, "prompt": f"Name {pid}.", "sample_index": i, "response": text, "class_id": cls}
        for pid, group in groups.items()
        for i, (text, cls) in enumerate(group)
    ]
    pl.DataFrame(rows).write_parquet(path)
    return path


def rendered(result: dict) -> str:
    """The report's section for ``result`` with the settings compare() adds."""
    settings = {"quality": "short-answer", "max_words": 4, "prompt_set": "x", "prompts": 6, "k": 4}
    return "\n".join(compare_section({"bootstrap": 2000, "temperature": 0.7, **settings, **result}))


def test_figures_per_prompt_and_paired_differences(tmp_path):
    collapsed = {f"p{i}": [("Paris", 0), ("paris.", 0), ("Paris", 0), ("Rome", 1)] for i in range(6)}
    spread = {
        f"p{i}": [("Paris", 0), ("Oslo", 1), ("Rome", 2), ("a very long answer indeed here", 3)] for i in range(6)
    }
    scores = {
        "grpo": write_scores(tmp_path / "g.parquet", collapsed),
        "darling": write_scores(tmp_path / "d.parquet", spread),
    }
    result = compare_policies(scores, "short-answer", 4, [("darling", "grpo")])
    assert result["prompts"] == 6
    assert result["policies"]["grpo"] == {"distinct": 2.0, "distinct_answers": 2.0, "quality": 1.0, "short": 1.0}
    darling = result["policies"]["darling"]
    assert (darling["distinct"], darling["distinct_answers"], darling["short"]) == (4.0, 4.0, 0.75)
    assert darling["quality"] == pytest.approx((3 + 4 / 6) / 4)
    diff = result["differences"]["darling - grpo"]
    assert diff["distinct"] == {"mean": 2.0, "interval": [2.0, 2.0], "n": 6}  # the same gap on every prompt
    section = rendered(result)
    assert "distinct: DARLING above GRPO by 2.00" in section
    assert "quality: DARLING below GRPO by" in section


def test_an_interval_that_includes_zero_is_reported_as_no_difference():
    d = paired_difference([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5], seed=0)
    assert d["mean"] == 0 and d["interval"][0] < 0 < d["interval"][1]
    metrics = ("distinct", "distinct_answers", "quality", "short")
    section = rendered({"policies": {}, "differences": {"darling-rl - grpo-rl": dict.fromkeys(metrics, d)}})
    assert "distinct: no difference shows at this budget" in section and "interval includes 0" in section
