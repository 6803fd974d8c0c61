"""`darling datagen` from the command line: the hf engine with the real SmolLM2, and bad input -> one line, exit 2."""

from pathlib import Path
from types import SimpleNamespace

import polars as pl
from helpers import assert_one_line_error, darling, write_jsonl
from typer.testing import CliRunner

from darling.core.engine_config import engine_options


def test_hf_engine_rollouts_with_the_real_smollm2(tmp_path, smollm2_dir):
    problems = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"id": 1, "question": "What is 2 + 3?", "answer": "#### 5"},
            {"id": 2, "question": "What is 10 - 4?", "answer": "#### 6"},
        ],
    )
    args = [
        "datagen",
        "rollouts",
        "--problems",
        problems,
        "--model",
        "smollm2",
        "-n",
        2,
        "--max-tokens",
        24,
        "--output",
        tmp_path / "out",
        "--threads",
        1,
        "--shard-size",
        2,
    ]
    result = darling(*args)
    assert result.returncode == 0, result.stderr
    rows = pl.read_parquet(tmp_path / "out" / "part-*.parquet")
    assert rows.height == 4 and set(rows["problem_id"]) == {"p:1", "p:2"} and (rows["status"] == "ok").all()
    assert set(rows["engine"]) == {"hf"} and set(rows["finish_reason"]) <= {"stop", "length"}
    assert rows["num_tokens"].max() <= 24 and rows["response"].str.len_chars().min() > 0
    assert rows["reference_answer"].sort().to_list() == ["5", "5", "6", "6"] and rows["correct"].null_count() == 0
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) == 2  # flushed every 2 responses
    again = darling(*args)  # everything is there: nothing is generated twice
    assert again.returncode == 0 and "0 new, 4 already there" in again.stdout


def test_bad_problem_file_names_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "ok", "answer": "1"}\n{"text": "no problem field"}\n')
    result = darling("datagen", "rollouts", "--problems", bad, "--model", "smollm2", "--output", tmp_path / "o")
    assert_one_line_error(result, "bad.jsonl:2", "--problem-field")
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("part-*"))


def test_option_errors_are_one_line(tmp_path):
    p = write_jsonl(tmp_path / "p.jsonl", [{"problem": "1+1?", "answer": "2"}])
    assert_one_line_error(
        darling(
            "datagen", "rollouts", "--problems", p, "--model", "m", "--engine", "openai", "--output", tmp_path / "o"
        ),
        "--base-url",
    )
    assert_one_line_error(
        darling("datagen", "rollouts", "--problems", p, "--engine", "hf", "--output", tmp_path / "o"), "--model"
    )
    gens = tmp_path / "g.toml"
    gens.write_text('[[generators]]\nname = "a"\ntemprature = 0.5\n')
    assert_one_line_error(
        darling("datagen", "rollouts", "--problems", p, "--generators", gens, "--output", tmp_path / "o"),
        "g.toml",
        "temprature",
    )
    assert_one_line_error(
        darling("datagen", "pairs", "--rollouts", tmp_path / "nope", "--output", tmp_path / "x"),
        "no such rollouts folder",
    )


def test_label_option_errors_are_one_line(tmp_path):
    pairs = tmp_path / "pairs.parquet"
    pl.DataFrame({"pair_id": ["a"], "prompt": ["p"]}).write_parquet(pairs)
    base = [
        "datagen",
        "label",
        "--pairs",
        pairs,
        "--output",
        tmp_path / "l",
        "--judge-model",
        "j",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]
    assert_one_line_error(darling(*base), "pairs.parquet", "missing field")
    assert_one_line_error(darling(*base, "--votes", 3), "--temperature")
    assert_one_line_error(darling(*base, "--structured", "json"), "structured must be one of none, choice, regex")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{problem} {solution_1}")
    assert_one_line_error(darling(*base, "--prompt-file", prompt), "prompt.txt", "{solution_2}")


def test_changed_sampling_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "run.json").write_text('{"engine": "hf", "seed": 1}')
    result = darling("datagen", "rollouts", "--problems", "gsm8k", "--limit", 1, "--model", "smollm2", "--output", out)
    assert_one_line_error(result, str(out), "use a new --output")


def test_flags_and_their_aliases_reach_the_configs(tmp_path, monkeypatch):
    """Each command's flags are its config's fields (the engine's among them), in process up to the API call."""
    import darling.datagen.judge
    import darling.datagen.pairs
    import darling.datagen.rollouts
    from darling.cli.main import app

    seen = []
    rollouts = SimpleNamespace(output=tmp_path, rows=0, generated=0, skipped=0, failed=0)
    pairs = SimpleNamespace(
        pairs=0, problems_with_pairs=0, responses_used=0, duplicates_dropped=0, per_problem={}, per_model_pair={}
    )
    labels = SimpleNamespace(counts={}, label_balance={}, judged_now=0, skipped=0, requests=0)
    monkeypatch.setattr(darling.datagen.rollouts, "generate_rollouts", lambda c, progress: seen.append(c) or rollouts)
    monkeypatch.setattr(darling.datagen.pairs, "build_pairs", lambda c, progress: seen.append(c) or pairs)
    monkeypatch.setattr(darling.datagen.judge, "label_pairs", lambda c, progress: seen.append(c) or labels)

    def run(*args):
        result = CliRunner().invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, result.output
        return seen.pop()

    config = run(
        "datagen",
        "rollouts",
        "--problems",
        "gsm8k",
        "-m",
        "a",
        "-m",
        "b",
        "-n",
        2,
        "--top-p",
        0.9,
        "--system-prompt",
        "",
        "--engine",
        "openai",
        "--base-url",
        "http://h/v1",
        "--concurrency",
        3,
        "--max-retries",
        0,
        "-o",
        tmp_path / "r",
    )
    assert (config.output, config.problems, config.model, config.n, config.top_p) == (
        tmp_path / "r",
        "gsm8k",
        ["a", "b"],
        2,
        0.9,
    )
    assert [(s.name, s.system_prompt) for s in config.generator_specs()] == [("a", None), ("b", None)]
    assert engine_options(config) == {
        "base_url": "http://h/v1",
        "api_key_env": "OPENAI_API_KEY",
        "concurrency": 3,
        "timeout": 300.0,
        "max_retries": 0,
    }
    config = run("datagen", "rollouts", "--problems", "gsm8k", "--model", "a", "--threads", 1, "-o", tmp_path / "r")
    assert (config.engine, config.n, engine_options(config)) == ("hf", 4, {"threads": 1, "device": "cpu"})
    assert config.generator_specs()[0].system_prompt.startswith("You are a helpful assistant")

    config = run(
        "datagen",
        "pairs",
        "--rollouts",
        tmp_path,
        "-o",
        tmp_path / "p",
        "--max-pairs-per-problem",
        0,
        "--cross-model-only",
        "--workers",
        1,
    )
    assert (config.max_pairs_per_problem, config.cross_model_only, config.correct_only, config.workers) == (
        None,
        True,
        False,
        1,
    )

    label = ["datagen", "label", "--pairs", tmp_path, "-o", tmp_path / "l", "--judge-model", "j"]
    config = run(
        *label, "--engine", "vllm-offline", "--tensor-parallel-size", 4, "--one-order", "--structured", "choice"
    )
    assert (config.both_orders, config.structured, engine_options(config)) == (
        False,
        "choice",
        {"tensor_parallel_size": 4},
    )
    config = run(*label, "--base-url", "http://h/v1", "--votes", 3, "--temperature", 0.7)
    assert (config.engine, config.both_orders, config.votes, config.temperature) == ("openai", True, 3, 0.7)
    assert Path(config.pairs) == tmp_path
