"""`darling eval math`: the pass@k estimator against brute force, metrics recomputed from real rollout
shards (failed samples excluded, never counted wrong), the CLI end to end with the real SmolLM2, bad input."""

import itertools
import json
from pathlib import Path

import polars as pl
import pytest
from helpers import assert_one_line_error, darling, write_jsonl

from darling.core.engine_api import Sampling
from darling.core.errors import UserInputError
from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY, Problem
from darling.core.shards import ShardStore
from darling.datagen.config import GeneratorSpec, parse_model
from darling.datagen.rollouts import finish_rows, rollout_row
from darling.evals.config import MathEvalConfig
from darling.evals.math import default_ks, evaluate_math, ks_for, pass_at_k

# --- the estimator ----------------------------------------------------------------------------------------


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """Share of all k-subsets of n samples (c correct) that contain a correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(samples, k))
    return sum(any(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 10])
def test_pass_at_k_equals_enumeration_over_all_k_subsets(n):
    for c in range(n + 1):  # c = 0 and c = n included
        for k in range(1, n + 1):  # k = n included
            assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(n, c, k), abs=1e-12), (n, c, k)
    assert pass_at_k(n, 0, n) == 0.0 and pass_at_k(n, n, 1) == 1.0


def test_pass_at_k_is_stable_for_large_n_and_rejects_nonsense():
    assert pass_at_k(1024, 1, 1) == pytest.approx(1 / 1024)
    assert pass_at_k(1024, 3, 512) == pytest.approx(1 - (512 * 511 * 510) / (1024 * 1023 * 1022))
    for bad in [(4, 5, 1), (4, -1, 1), (4, 2, 0), (4, 2, 5)]:
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_reported_ks_are_powers_of_two_plus_n():
    assert default_ks(1) == [1] and default_ks(8) == [1, 2, 4, 8] and default_ks(6) == [1, 2, 4, 6]
    assert ks_for(8, [3, 16]) == [1, 3, 8]  # beyond n dropped; 1 and n always there


def test_model_names_and_paths():
    assert (parse_model("smollm2").name, parse_model("smollm2").engine_model) == ("smollm2", "smollm2")
    spec = parse_model("step100=runs/rl/checkpoint-100")
    assert (spec.name, spec.engine_model) == ("step100", "runs/rl/checkpoint-100")
    assert parse_model("runs/lr=1e-5/ckpt").engine_model == "runs/lr=1e-5/ckpt"
    with pytest.raises(UserInputError, match="NAME=PATH"):
        parse_model("=runs/x")


# --- metrics from real rollout shards ---------------------------------------------------------------------

N = 4


def write_rows(output: Path, dataset: str, model: str, outcomes: dict[str, list[str]]) -> None:
    """Real rollout rows (schema, ids, math-verify grading) in OUTPUT/generations/<dataset>/<model>/.

    outcomes: problem -> one entry per sample: "right" (boxes the answer), "wrong", "failed"."""
    store = ShardStore(output / "generations" / dataset / model, ROLLOUT_COLUMNS, ROLLOUT_KEY)
    spec, sampling = GeneratorSpec(model), Sampling(N, 0.6, 0.95, 64, 0)
    rows = []
    for pid, samples in outcomes.items():
        problem = Problem(f"{dataset}:{pid}", dataset, f"What is {pid} + 1?", str(int(pid) + 1))
        for i, outcome in enumerate(samples):
            row = rollout_row(problem, spec, i, "hf", sampling)
            if outcome == "failed":
                row.update(status="failed", error="HTTP 500")
            else:
                answer = int(pid) + 1 if outcome == "right" else int(pid) + 7
                row.update(response=f"So it is \\boxed{{{answer}}}.", finish_reason="stop", num_tokens=9, status="ok")
            rows.append(row)
    store.append(finish_rows(rows))


def test_metrics_recomputed_from_parquet_with_failed_samples_excluded(tmp_path):
    r, w, f = "right", "wrong", "failed"
    write_rows(tmp_path, "alpha", "m1", {"1": [r, r, w, w], "2": [w, w, w, w], "3": [r, r, r, f]})
    write_rows(tmp_path, "beta", "m1", {"5": [r, w, w, w]})
    write_rows(tmp_path, "alpha", "m2", {"1": [r, r, r, r], "2": [w, w, w, r]})
    write_rows(tmp_path, "beta", "m2", {"5": [w, w, w, w]})
    write_rows(tmp_path, "gamma", "m2", {"9": [f, f, f, f]})  # nothing scored: null, left out of the mean
    metrics = evaluate_math(MathEvalConfig(output=tmp_path, generate=False))
    assert metrics["generation"] is None and metrics["ks"] == [1, 2, 4]
    assert metrics["datasets"] == ["alpha", "beta", "gamma"] and list(metrics["models"]) == ["m1", "m2"]

    alpha = metrics["models"]["m1"]["datasets"]["alpha"]
    # problem 3 has a failed sample: excluded, not scored 3/4 (nor 3/3); problems 1 (2/4) and 2 (0/4) remain
    assert (alpha["problems"], alpha["scored"], alpha["excluded_incomplete"], alpha["samples_failed"]) == (3, 2, 1, 1)
    assert alpha["pass@k"] == pytest.approx({"1": (0.5 + 0) / 2, "2": (1 - 1 / 6) / 2, "4": 0.5})
    assert alpha["accuracy"] == alpha["pass@k"]["1"]
    beta = metrics["models"]["m1"]["datasets"]["beta"]
    assert beta["pass@k"] == pytest.approx({"1": 0.25, "2": 0.5, "4": 1.0})
    mean = metrics["models"]["m1"]["mean"]
    assert (mean["datasets"], mean["problems"]) == (2, 3)
    assert mean["pass@k"] == pytest.approx({k: (alpha["pass@k"][k] + beta["pass@k"][k]) / 2 for k in ("1", "2", "4")})
    gamma = metrics["models"]["m2"]["datasets"]["gamma"]
    assert (gamma["scored"], gamma["samples_failed"], gamma["accuracy"], gamma["pass@k"]["4"]) == (0, 4, None, None)
    assert "gamma" not in metrics["models"]["m1"]["datasets"] and metrics["models"]["m2"]["mean"]["datasets"] == 2
    assert metrics["models"]["m2"]["mean"]["pass@k"]["4"] == pytest.approx((1.0 + 0.0) / 2)

    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved == {k: v for k, v in metrics.items() if k != "generation"}
    report = (tmp_path / "report.md").read_text()
    assert "| m1 | alpha | 3 | 2 | 1 | 0 | 1 | 0 |" in report  # the exclusion is reported, not hidden
    assert "| m1 | 25.0 | 25.0 | – | **25.0** |" in report  # pass@1 table: alpha 25, beta 25, no gamma, mean 25
    assert (tmp_path / "passk.png").stat().st_size > 1000 and (tmp_path / "passk_by_dataset.png").exists()

    # A rerun that retried the failed sample supersedes it (a later shard): problem 3 is now scored.
    write_rows(tmp_path, "alpha", "m1", {"3": [r, r, r, w]})
    again = evaluate_math(MathEvalConfig(output=tmp_path, generate=False, specs=[GeneratorSpec("m1")]))
    assert list(again["models"]) == ["m1"]
    assert evaluate_math(MathEvalConfig(output=tmp_path, generate=False, model=["m1"]))["models"] == again["models"]
    alpha = again["models"]["m1"]["datasets"]["alpha"]
    assert (alpha["scored"], alpha["excluded_incomplete"], alpha["samples_failed"]) == (3, 0, 0)
    assert alpha["pass@k"]["1"] == pytest.approx((0.5 + 0 + 0.75) / 3)


# --- the command line -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_end_to_end_with_the_real_smollm2_resumes_and_reports_again(tmp_path, smollm2_dir):
    tiny = write_jsonl(
        tmp_path / "tiny.jsonl",
        [
            {"id": 1, "question": "What is 2 + 3?", "answer": "#### 5"},
            {"id": 2, "question": "What is 10 - 4?", "answer": "6"},
            {"id": 3, "question": "What is 1 + 1?", "answer": "2"},
        ],
    )
    out = tmp_path / "eval"
    args = [
        "eval",
        "math",
        "--problems",
        "arithmetic",
        "--problems",
        tiny,
        "--limit",
        2,
        "--model",
        "smollm2",
        "--model",
        "again=smollm2",
        "--n",
        2,
        "--max-tokens",
        24,
        "--threads",
        1,
        "--paired-seeds",  # the same seeds for both names: the same weights answer alike
        "--output",
        out,
    ]
    first = darling(*args)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "generated 16 samples (0 already there, 0 failed)" in first.stdout
    for name in ("metrics.json", "report.md", "passk.png", "passk_by_dataset.png"):
        assert (out / name).stat().st_size > 0, name
    for dataset in ("arithmetic", "tiny"):
        for model in ("smollm2", "again"):
            rows = pl.read_parquet(out / "generations" / dataset / model / "part-*.parquet")
            assert rows.height == 2 * 2 and (rows["status"] == "ok").all() and set(rows["model"]) == {model}
            assert rows["correct"].null_count() == 0 and rows["num_tokens"].max() <= 24
        twin = pl.read_parquet(out / "generations" / dataset / "again" / "part-*.parquet").sort(
            "problem_id", "sample_index"
        )
        mine = pl.read_parquet(out / "generations" / dataset / "smollm2" / "part-*.parquet").sort(
            "problem_id", "sample_index"
        )
        assert twin["response"].to_list() == mine["response"].to_list()  # paired: identical weights, identical samples
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics["models"]) == ["smollm2", "again"] and metrics["datasets"] == ["arithmetic", "tiny"]
    for m in metrics["models"].values():
        assert m["ks"] == [1, 2] and m["mean"]["datasets"] == 2 and m["mean"]["problems"] == 4
        assert all(0 <= v <= 1 for v in m["mean"]["pass@k"].values())
    assert "| smollm2 | tiny |" in (out / "report.md").read_text()

    shards = sorted(p.stat().st_mtime_ns for p in out.glob("generations/*/*/part-*.parquet"))
    again = darling(*args)  # resume: everything is there, nothing is generated
    assert again.returncode == 0 and "generated 0 samples (16 already there, 0 failed)" in again.stdout
    assert sorted(p.stat().st_mtime_ns for p in out.glob("generations/*/*/part-*.parquet")) == shards
    assert json.loads((out / "metrics.json").read_text()) == metrics

    (out / "metrics.json").unlink()
    report_only = darling("eval", "math", "--output", out, "--no-generate", "--model", "smollm2", "--model", "again")
    assert report_only.returncode == 0, report_only.stderr
    assert json.loads((out / "metrics.json").read_text()) == metrics


def test_bad_input_is_one_line_exit_2(tmp_path):
    ok = write_jsonl(tmp_path / "p.jsonl", [{"problem": "1+1?", "answer": "2"}])
    base = ["eval", "math", "--model", "smollm2", "--output", tmp_path / "o"]
    assert_one_line_error(darling(*base, "--problems", ok, "--problems", tmp_path / "missing.jsonl"), "missing.jsonl")
    assert not (tmp_path / "o" / "generations").exists()  # validated before anything is generated
    assert_one_line_error(darling(*base, "--problems", ok, "--n", 0), "--n must be at least 1")
    assert_one_line_error(darling(*base, "--problems", ok, "--n", 4, "--k", 8), "--k 8")
    assert_one_line_error(darling(*base), "--problems")
    assert_one_line_error(darling("eval", "math", "--output", tmp_path / "empty", "--no-generate"), "no generations")
    twin = tmp_path / "sub"
    twin.mkdir()
    write_jsonl(twin / "p.jsonl", [{"problem": "2+2?", "answer": "4"}])
    assert_one_line_error(darling(*base, "--problems", ok, "--problems", twin / "p.jsonl"), "share the folder")


def test_flags_and_their_aliases_reach_the_config(tmp_path, monkeypatch):
    """eval math's flags are MathEvalConfig's fields (the engine's among them), in process up to evaluate_math."""
    from typer.testing import CliRunner

    import darling.evals.math
    from darling.cli.main import app
    from darling.core.engine_config import engine_options

    seen = []
    metrics = {"generation": None, "datasets": [], "models": {}}
    monkeypatch.setattr(darling.evals.math, "evaluate_math", lambda c, progress: seen.append(c) or metrics)
    args = [
        "eval",
        "math",
        "--problems",
        "aime24",
        "--problems",
        "amc23",
        "-m",
        "base=Qwen/Q",
        "--model",
        "smollm2",
        "-n",
        16,
        "--k",
        1,
        "--k",
        8,
        "--engine",
        "vllm-offline",
        "--tensor-parallel-size",
        2,
        "-o",
        tmp_path,
    ]
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    (config,) = seen
    assert (config.problems, config.model, config.n, config.ks, config.generate) == (
        ["aime24", "amc23"],
        ["base=Qwen/Q", "smollm2"],
        16,
        [1, 8],
        True,
    )
    assert (config.temperature, config.top_p, config.max_tokens) == (0.6, 0.95, 4096)  # the command's defaults
    assert [(s.name, s.engine_model) for s in config.generator_specs()] == [("base", "Qwen/Q"), ("smollm2", "smollm2")]
    assert engine_options(config) == {"tensor_parallel_size": 2}
    result = CliRunner().invoke(app, ["eval", "math", "--no-generate", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert seen[-1].generate is False and seen[-1].problems == [] and seen[-1].model == []


@pytest.mark.parametrize("paired", [False, True])
def test_paired_seeds_give_every_generator_the_same_seeds(tmp_path, paired):
    """Per-request seeds derive from the generator's name unless --paired-seeds: then every generator draws the same
    seed for the same problem and samples (eval math's paired comparison of policies; the pipeline sets it)."""
    from darling.core.schemas import Problem
    from darling.datagen.config import GeneratorSpec, RolloutConfig
    from darling.datagen.rollouts import plan_requests

    config = RolloutConfig(output=tmp_path, problems="p.jsonl", n=3, paired_seeds=paired)
    specs = [GeneratorSpec(name="base", model="m"), GeneratorSpec(name="rl", model="m")]
    problems = [Problem("t:p1", "t", "What is 1 + 1?", "2"), Problem("t:p2", "t", "What is 2 + 2?", "4")]
    requests, _ = plan_requests(config, specs, problems, done={("t:p1", "rl", 0)})
    seeds = {r.key[:2]: r.sampling.seed for r in requests}
    assert (seeds["base", "t:p2"] == seeds["rl", "t:p2"]) is paired
    assert len({seeds["base", "t:p1"], seeds["base", "t:p2"]}) == 2  # per problem either way
    assert seeds["rl", "t:p1"] != seeds["base", "t:p1"]  # rl's p1 starts at sample 1: another request, another seed
    assert ("paired_seeds" in config.identity(specs)) is paired  # a rerun that changes it is refused
