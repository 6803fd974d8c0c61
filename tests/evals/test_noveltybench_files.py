"""NoveltyBench's files in and out of eval novelty (issue 63): a NoveltyBench eval folder's generations.jsonl is
partitioned and scored by a darling export through the command line, and NoveltyBench's summary, recomputed from the
files darling writes by NoveltyBench's published definitions (src/score.py, src/summarize.py), gives darling's
figures."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import assert_one_line_error, darling, write_jsonl

from darling.evals.noveltybench_files import read_partitions

PATIENCE = 0.8  # NoveltyBench's default, and eval novelty's
INSTANCES = [
    {
        "id": "planets",
        "prompt": "Name a planet.",
        "model": "someone/model",
        "generations": ["Mars is the red planet.", "Mars is the red planet.", "Jupiter is the largest one.", "Mars"],
    },
    {
        "id": "snacks",
        "prompt": "Suggest a snack.",
        "model": "someone/model",
        "generations": [
            "Apple slices with peanut butter.",
            "A bowl of salted popcorn.",
            "Greek yogurt and honey.",
            "Apple slices with peanut butter.",
        ],
    },
]


def test_a_noveltybench_folder_round_trips_through_eval_novelty(tmp_path, minilm_bi_export):
    folder = tmp_path / "nb"
    folder.mkdir()
    write_jsonl(folder / "generations.jsonl", INSTANCES)
    out = tmp_path / "out"
    darling("eval", "novelty", "--noveltybench", folder, "--classifier", minilm_bi_export, "--output", out, check=True)

    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [s["id"] for s in scores] == ["planets", "snacks"] and scores[0]["model"] == "someone/model"
    for s in scores:  # NoveltyBench's numbering and definitions, recomputed from the file
        partition = s["partition"]
        assert partition[0] == 0 and all(c <= max(partition[:i], default=-1) + 1 for i, c in enumerate(partition))
        assert s["distinct"] == max(partition) == len(s["partition_scores"]) - 1  # NoveltyBench's partition.py
        firsts = [i for i, c in enumerate(partition) if c not in partition[:i]]
        assert [g for i, g in enumerate(s["generation_scores"]) if i not in firsts] == [0] * (4 - len(firsts))
        weights = PATIENCE ** np.arange(len(s["generations"]))
        assert s["utility"] == pytest.approx(np.average(s["generation_scores"], weights=weights))
    assert scores[0]["partition"][:2] == [0, 0] and scores[1]["partition"][3] == scores[1]["partition"][0]

    summary = json.loads((out / "summary.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert summary["mean_distinct"] == pytest.approx(np.mean([len(s["partition_scores"]) for s in scores]))
    assert summary["mean_utility"] == pytest.approx(np.mean([s["utility"] for s in scores]))
    assert (summary["mean_distinct"], summary["mean_utility"]) == pytest.approx(
        (metrics["mean_distinct"], metrics["mean_utility"])
    )
    partitions, convention = read_partitions(out / "partitions.jsonl")
    assert partitions == {s["id"]: s["partition"] for s in scores} and convention == "max(partition)"
    said = summary["darling"]  # what NoveltyBench's fields cannot say: no reward model, so every quality is 1
    assert said["quality"].startswith("none: quality = 1") and said["utility"] == "noveltybench"
    assert said["patience"] == PATIENCE and "max(partition)" in said["distinct"]

    # rerun: the imported generations are reused, not appended twice
    darling("eval", "novelty", "--noveltybench", folder, "--classifier", minilm_bi_export, "--output", out, check=True)
    assert json.loads((out / "summary.json").read_text()) == summary

    # the DARLING fork's utility (sum / k) is written under NoveltyBench's names: summary.json says which it is
    fork_args = ["--classifier", minilm_bi_export, "--output", out, "--utility", "darling-fork"]
    darling("eval", "novelty", "--noveltybench", folder, *fork_args, check=True)
    fork = json.loads((out / "summary.json").read_text())
    assert fork["darling"]["utility"] == "darling-fork" and fork["darling"]["patience"] is None
    scored = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [s["utility"] for s in scored] == pytest.approx([sum(s["generation_scores"]) / 4 for s in scored])


def test_both_distinct_conventions_are_read_and_named(tmp_path):
    nb = write_jsonl(tmp_path / "nb.jsonl", [{"id": "a", "partition": [0, 0, 1], "distinct": 1}])
    assert read_partitions(nb) == ({"a": [0, 0, 1]}, "max(partition)")  # NoveltyBench 5b22b53's partition.py
    older = write_jsonl(tmp_path / "older.jsonl", [{"id": "a", "partition": [0, 0, 1], "distinct": 2}])
    assert read_partitions(older) == ({"a": [0, 0, 1]}, "class count")  # darling's files before issue 70


def test_a_bad_generations_file_is_one_line_naming_its_line_and_field(tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    write_jsonl(folder / "generations.jsonl", [INSTANCES[0], {"id": "x", "prompt": "p", "generations": "text"}])
    result = darling("eval", "novelty", "--noveltybench", folder, "--classifier", tmp_path, "--output", tmp_path / "o")
    assert_one_line_error(result, "generations.jsonl:2", "field 'generations'")
    assert not (tmp_path / "o" / "generations").exists()  # nothing half-written


def test_two_real_partitions_of_the_same_generations_are_compared(tmp_path, minilm_bi_export, minilm_export):
    """darling eval agreement on two real partitions of one NoveltyBench folder (the bi-encoder's and the
    cross-encoder's), and on darling's against a NoveltyBench-written file with the older distinct convention."""
    from sklearn.metrics import adjusted_rand_score

    folder = tmp_path / "nb"
    folder.mkdir()
    write_jsonl(folder / "generations.jsonl", INSTANCES)
    files = {}
    for name, export in (("bi", minilm_bi_export), ("cross", minilm_export)):
        out = tmp_path / name
        darling("eval", "novelty", "--noveltybench", folder, "--classifier", export, "--output", out, check=True)
        files[name] = out / "partitions.jsonl"
    nb = write_jsonl(tmp_path / "nb-partitions.jsonl", [{"id": "planets", "partition": [0, 0, 1, 0], "distinct": 1}])

    args = ["--partitions", f"bi={files['bi']}", "--partitions", f"cross={files['cross']}"]
    darling("eval", "agreement", *args, "--output", tmp_path / "agree", check=True)
    result = json.loads((tmp_path / "agree" / "agreement.json").read_text())
    a, b = (read_partitions(files[n])[0] for n in ("bi", "cross"))
    assert result["prompts"] == 2 and set(result["per_prompt"]) == {"planets", "snacks"}
    for pid, row in result["per_prompt"].items():
        assert row["exact"] == (a[pid] == b[pid]) and row["ari"] == pytest.approx(adjusted_rand_score(a[pid], b[pid]))
    assert result["ari"]["mean"] == pytest.approx(np.mean([r["ari"] for r in result["per_prompt"].values()]))
    assert result["files"]["bi"]["settings"]["tokens per side"] == "32"  # the export's, read beside the file

    # each file's settings are those its partition used: union-find has no short-answer rule and no representative
    out = tmp_path / "union-find"
    uf_args = ["--classifier", minilm_bi_export, "--output", out, "--partition", "union-find"]
    darling("eval", "novelty", "--noveltybench", folder, *uf_args, check=True)
    args = ["--partitions", f"bi={files['bi']}", "--partitions", f"uf={out / 'partitions.jsonl'}"]
    darling("eval", "agreement", *args, "--output", tmp_path / "agree-uf", check=True)
    settings = json.loads((tmp_path / "agree-uf" / "agreement.json").read_text())["files"]
    assert settings["bi"]["settings"]["answers of at most 5 words"] == "word overlap"
    assert settings["uf"]["settings"]["answers of at most 5 words"] == "no rule: the classifier decides"
    assert settings["uf"]["settings"]["partition"] == "union-find" and ">=" in settings["uf"]["settings"]["threshold"]

    darling(
        "eval",
        "agreement",
        "--partitions",
        f"darling={files['bi']}",
        "--partitions",
        f"nb={nb}",
        "--output",
        tmp_path / "agree-nb",
        check=True,
    )
    report = (tmp_path / "agree-nb" / "report.md").read_text()
    assert "1 prompts in both (1 in only one, left out)" in report
    assert "128 (its DeBERTa)" in report and "| `distinct` in the file | max(partition) | max(partition) |" in report
