"""`darling datagen` from the command line: the hf engine with the real SmolLM2, and bad input -> one line, exit 2."""

import polars as pl
from helpers import assert_one_line_error, darling, write_jsonl


def test_hf_engine_rollouts_with_the_real_smollm2(tmp_path, smollm2_dir):
    problems = write_jsonl(tmp_path / "p.jsonl", [
        {"id": 1, "question": "What is 2 + 3?", "answer": "#### 5"},
        {"id": 2, "question": "What is 10 - 4?", "answer": "#### 6"},
    ])  # fmt: skip
    args = ["datagen", "rollouts", "--problems", problems, "--model", "smollm2", "-n", 2, "--max-tokens", 24,
            "--output", tmp_path / "out", "--threads", 1, "--shard-size", 2]  # fmt: skip
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
        "g.toml", "temprature",
    )  # fmt: skip
    assert_one_line_error(darling("datagen", "pairs", "--rollouts", tmp_path / "nope", "--output", tmp_path / "x"),
                          "no such rollouts folder")  # fmt: skip


def test_label_option_errors_are_one_line(tmp_path):
    pairs = tmp_path / "pairs.parquet"
    pl.DataFrame({"pair_id": ["a"], "prompt": ["p"]}).write_parquet(pairs)
    base = ["datagen", "label", "--pairs", pairs, "--output", tmp_path / "l", "--judge-model", "j",
            "--base-url", "http://127.0.0.1:9/v1"]  # fmt: skip
    assert_one_line_error(darling(*base), "pairs.parquet", "missing field")
    assert_one_line_error(darling(*base, "--votes", 3), "--temperature")
    assert_one_line_error(darling(*base, "--structured", "json"), "--structured")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{problem} {solution_1}")
    assert_one_line_error(darling(*base, "--prompt-file", prompt), "prompt.txt", "{solution_2}")


def test_changed_sampling_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "run.json").write_text('{"engine": "hf", "seed": 1}')
    result = darling("datagen", "rollouts", "--problems", "gsm8k", "--limit", 1, "--model", "smollm2", "--output", out)
    assert_one_line_error(result, str(out), "use a new --output")
