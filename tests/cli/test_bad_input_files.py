"""Malformed inputs that are not record files, run as a user runs them: generator lists (--generators), training
configs (--config), classifier exports, rollouts folders, the judge's pairs and prompt template, missing models.

Each case: exit code 2, exactly one line on stderr naming the file (and the line, entry or field where there is
one), no traceback, the --output folder never created and nothing written beside the inputs. Record files
(pairs, problems, prompts): test_bad_input.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from helpers import assert_one_line_error, darling, darling_in_process, write_jsonl

from darling.core.schemas import PAIR_COLUMNS

GOOD_PAIR = {"prompt": "p", "generation_0": "a", "generation_1": "b", "similar": 1}
GOOD_PROBLEM = {"problem": "What is 1 + 1?", "answer": "2"}
GOOD_PROMPT = {"prompt": "Tell me a story about a cat."}


def good_pairs(tmp: Path) -> Path:
    return write_jsonl(tmp / "good-pairs.jsonl", [{**GOOD_PAIR, "similar": i % 2} for i in range(8)])


def good_problems(tmp: Path) -> Path:
    return write_jsonl(tmp / "good-problems.jsonl", [GOOD_PROBLEM])


def write(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def parquet(path: Path, frame: pl.DataFrame) -> Path:
    frame.write_parquet(path)
    return path


def export_dir(tmp: Path, meta: str | bytes | None) -> Path:
    """A folder shaped like an export whose darling.json is ``meta`` (None: no darling.json at all)."""
    path = tmp / "clf"
    path.mkdir()
    (path / "config.json").write_text("{}")
    if meta is not None:
        write(path, "darling.json", meta)
    return path


GOOD_META = {"kind": "cross-encoder", "threshold": 0.5, "max_tokens_per_response": 16, "max_length": 35}


def judge_pairs(tmp: Path, **overrides) -> Path:
    row = {name: f"{name}-0" for name, dtype in PAIR_COLUMNS.items() if dtype == "String"} | {"correct": True}
    frame = pl.DataFrame([{**row, **overrides}])
    path = tmp / "pairs.parquet"
    frame.write_parquet(path)
    return path


def rollout_shard(tmp: Path, content: bytes | pl.DataFrame) -> Path:
    folder = tmp / "rollouts"
    folder.mkdir()
    shard = folder / "part-000000.parquet"
    if isinstance(content, bytes):
        shard.write_bytes(content)
    else:
        content.write_parquet(shard)
    return folder


def rollouts(tmp: Path, gens: Path) -> list:
    return ["datagen", "rollouts", "--problems", good_problems(tmp), "--generators", gens, "--output", tmp / "out"]


def eval_math(tmp: Path, gens: Path) -> list:
    return ["eval", "math", "--problems", "arithmetic", "--generators", gens, "--output", tmp / "out"]


def label(tmp: Path, pairs: Path, *extra) -> list:
    return [
        "datagen",
        "label",
        "--pairs",
        pairs,
        "--judge-model",
        "j",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--output",
        tmp / "out",
        *extra,
    ]


def train(tmp: Path, config: Path) -> list:
    return ["train-classifier", "--data", good_pairs(tmp), "--config", config, "--output", tmp / "out"]


def eval_clf(tmp: Path, model: Path, *extra) -> list:
    return ["eval", "classifier", "--model", model, "--data", good_pairs(tmp), "--output", tmp / "out", *extra]


OTHER_CASES: dict[str, Callable[[Path], tuple[list, list[str]]]] = {
    # --generators (datagen rollouts, eval math): TOML/JSON/YAML, each entry checked before anything runs
    "rollouts --generators | entry without model": lambda t: (
        rollouts(t, g := write(t, "g.toml", '[[generators]]\nname = "a"\n')),
        [str(g), "generators[0]", "'model'"],
    ),
    "rollouts --generators | TOML does not parse": lambda t: (
        rollouts(t, g := write(t, "g.toml", '[[generators]\nname = "a"\n')),
        [str(g), "not valid TOML"],
    ),
    "rollouts --generators | JSON does not parse": lambda t: (
        rollouts(t, g := write(t, "g.json", '{"generators": [\n  {"name": "a",}\n]}')),
        [f"{g}:2", "not valid JSON"],
    ),
    "rollouts --generators | YAML does not parse": lambda t: (
        rollouts(t, g := write(t, "g.yaml", "generators:\n  - name: a\n    model: [b\n")),
        [str(g), "not valid YAML"],
    ),
    "rollouts --generators | not UTF-8": lambda t: (
        rollouts(t, g := write(t, "g.toml", b'[[generators]]\nname = "caf\xe9"\nmodel = "m"\n')),
        [f"{g}:2", "not UTF-8"],
    ),
    "rollouts --generators | wrong type": lambda t: (
        rollouts(t, g := write(t, "g.toml", '[[generators]]\nname = "a"\nmodel = "m"\nn = "four"\n')),
        [str(g), "generators[0]", "field 'n'"],
    ),
    "rollouts --generators | out of range": lambda t: (
        rollouts(t, g := write(t, "g.json", json.dumps({"generators": [{"name": "a", "model": "m", "top_p": 2}]}))),
        [str(g), "generators[0]", "field 'top_p'"],
    ),
    "rollouts --generators | template without {problem}": lambda t: (
        rollouts(
            t,
            g := write(
                t, "g.json", json.dumps({"generators": [{"name": "a", "model": "m", "user_template": "Solve it."}]})
            ),
        ),
        [str(g), "generators[0]", "user_template"],
    ),
    "rollouts --generators | no list": lambda t: (
        rollouts(t, g := write(t, "g.json", '{"models": []}')),
        [str(g), "'generators'"],
    ),
    "rollouts --generators | a folder": lambda t: (rollouts(t, g := mkdir(t / "g.toml")), [str(g), "is a folder"]),
    "rollouts --generators | missing": lambda t: (
        rollouts(t, t / "none.toml"),
        [str(t / "none.toml"), "no such generator config"],
    ),
    "rollouts --model | no such local model": lambda t: (
        ["datagen", "rollouts", "--problems", good_problems(t), "--model", str(t / "no-model"), "--output", t / "out"],
        [str(t / "no-model"), "cannot load the model"],
    ),
    "eval math --generators | entry without model": lambda t: (
        eval_math(t, g := write(t, "g.toml", '[[generators]]\nname = "a"\n')),
        [str(g), "generators[0]", "'model'"],
    ),
    "eval math --generators | not UTF-8": lambda t: (
        eval_math(t, g := write(t, "g.json", b'{"generators": [{"name": "caf\xe9", "model": "m"}]}')),
        [f"{g}:1", "not UTF-8"],
    ),
    "eval math --model | no such local model": lambda t: (
        [
            "eval",
            "math",
            "--problems",
            "arithmetic",
            "--limit",
            "1",
            "--model",
            f"x={t / 'no-model'}",
            "--output",
            t / "out",
        ],
        [str(t / "no-model"), "cannot load the model"],
    ),
    # --config (train-classifier): JSON or TOML
    "train-classifier --config | TOML does not parse": lambda t: (
        train(t, c := write(t, "c.toml", "epochs = \n")),
        [str(c), "not valid TOML"],
    ),
    "train-classifier --config | JSON does not parse": lambda t: (
        train(t, c := write(t, "c.json", '{"epochs": 1,}')),
        [f"{c}:1", "not valid JSON"],
    ),
    "train-classifier --config | not UTF-8": lambda t: (
        train(t, c := write(t, "c.toml", b"# caf\xe9\nepochs = 1\n")),
        [f"{c}:1", "not UTF-8"],
    ),
    "train-classifier --config | wrong type": lambda t: (
        train(t, c := write(t, "c.toml", "epochs = [3]\n")),
        [str(c), "option 'epochs'"],
    ),
    "train-classifier --config | not a table": lambda t: (
        train(t, c := write(t, "c.json", "[1, 2]")),
        [str(c), "expected a table/object"],
    ),
    "train-classifier --config | unknown option": lambda t: (
        train(t, c := write(t, "c.toml", "epoch = 1\n")),
        [str(c), "unknown option 'epoch'"],
    ),
    "train-classifier --config | a folder": lambda t: (train(t, c := mkdir(t / "c.toml")), [str(c), "is a folder"]),
    # exports (eval classifier --model/--compare, serve-classifier, eval novelty, rl-train --classifier)
    "eval classifier --model | no darling.json": lambda t: (
        eval_clf(t, m := export_dir(t, None)),
        [str(m), "no darling.json"],
    ),
    "eval classifier --model | darling.json does not parse": lambda t: (
        eval_clf(t, m := export_dir(t, '{"kind": "cross-encoder",\n')),
        [str(m / "darling.json"), "not valid JSON"],
    ),
    "eval classifier --model | darling.json not an object": lambda t: (
        eval_clf(t, m := export_dir(t, "[]")),
        [str(m / "darling.json"), "expected a JSON object"],
    ),
    "eval classifier --model | darling.json not UTF-8": lambda t: (
        eval_clf(t, m := export_dir(t, b'{"backbone": "caf\xe9"}')),
        [f"{m / 'darling.json'}:1", "not UTF-8"],
    ),
    "eval classifier --model | darling.json without threshold": lambda t: (
        eval_clf(t, m := export_dir(t, json.dumps({k: v for k, v in GOOD_META.items() if k != "threshold"}))),
        [str(m / "darling.json"), "missing field 'threshold'"],
    ),
    "eval classifier --model | darling.json of an unknown kind": lambda t: (
        eval_clf(t, m := export_dir(t, json.dumps({**GOOD_META, "kind": "tri-encoder"}))),
        [str(m / "darling.json"), "field 'kind'"],
    ),
    "eval classifier --model | a file": lambda t: (
        eval_clf(t, m := write(t, "model.bin", b"\0")),
        [str(m), "not a darling classifier export"],
    ),
    "eval classifier --compare | not an export": lambda t: (
        eval_clf(t, export_dir(t, json.dumps(GOOD_META)), "--compare", m := write(t, "other", b"")),
        [str(m), "not a darling classifier export"],
    ),
    "serve-classifier --model | no darling.json": lambda t: (
        ["serve-classifier", "--model", m := export_dir(t, None), "--devices", "cpu"],
        [str(m), "no darling.json"],
    ),
    "serve-classifier --model | darling.json not an object": lambda t: (
        ["serve-classifier", "--model", m := export_dir(t, '"clf"'), "--devices", "cpu"],
        [str(m / "darling.json"), "expected a JSON object"],
    ),
    "eval novelty --classifier | darling.json not an object": lambda t: (
        [
            "eval",
            "novelty",
            "--prompts",
            write_jsonl(t / "p.jsonl", [GOOD_PROMPT]),
            "--model",
            "smollm2",
            "--classifier",
            m := export_dir(t, "[]"),
            "--output",
            t / "out",
        ],
        [str(m / "darling.json"), "expected a JSON object"],
    ),
    "rl-train --classifier | no darling.json": lambda t: (
        ["rl-train", "--classifier", m := export_dir(t, None), "--output", t / "out"],
        [str(m), "no darling.json"],
    ),
    # rollouts folders (datagen pairs --rollouts)
    "pairs --rollouts | missing": lambda t: (
        ["datagen", "pairs", "--rollouts", t / "none", "--output", t / "out"],
        [str(t / "none"), "no such"],
    ),
    "pairs --rollouts | a file": lambda t: (
        ["datagen", "pairs", "--rollouts", r := write(t, "r.parquet", b"x"), "--output", t / "out"],
        [str(r), "no such"],
    ),
    "pairs --rollouts | a shard that is not Parquet": lambda t: (
        ["datagen", "pairs", "--rollouts", r := rollout_shard(t, b"not parquet"), "--output", t / "out"],
        [str(r / "part-000000.parquet"), "not a shard"],
    ),
    "pairs --rollouts | a shard without the columns": lambda t: (
        ["datagen", "pairs", "--rollouts", r := rollout_shard(t, pl.DataFrame({"x": [1]})), "--output", t / "out"],
        [str(r / "part-000000.parquet"), "not a shard"],
    ),
    "pairs --rollouts | empty folder": lambda t: (
        ["datagen", "pairs", "--rollouts", r := mkdir(t / "r"), "--output", t / "out"],
        [str(r), "no usable responses"],
    ),
    # pairs for the judge (datagen label --pairs) and its template (--prompt-file)
    "label --pairs | missing": lambda t: (label(t, t / "none.parquet"), [str(t / "none.parquet"), "no such pairs"]),
    "label --pairs | not Parquet": lambda t: (
        label(t, p := write(t, "pairs.parquet", b"PAR")),
        [str(p), "cannot read Parquet"],
    ),
    "label --pairs | folder without pairs.parquet": lambda t: (
        label(t, p := mkdir(t / "pairs")),
        [str(p / "pairs.parquet"), "no such"],
    ),
    "label --pairs | missing column": lambda t: (
        label(t, p := parquet(t / "p.parquet", pl.DataFrame({"pair_id": ["a"]}))),
        [str(p), "missing field 'problem_id'"],
    ),
    "label --pairs | text of the wrong type": lambda t: (
        label(t, p := judge_pairs(t, generation_0=7)),
        [f"{p}: row 0", "field 'generation_0' must be a string, got int"],
    ),
    "label --pairs | null pair id": lambda t: (
        label(t, p := judge_pairs(t, pair_id=None)),
        [f"{p}: row 0", "field 'pair_id'"],
    ),
    "label --prompt-file | not UTF-8": lambda t: (
        label(t, judge_pairs(t), "--prompt-file", f := write(t, "prompt.txt", b"{problem}\n\xff{solution_1}")),
        [f"{f}:2", "not UTF-8"],
    ),
    "label --prompt-file | a folder": lambda t: (
        label(t, judge_pairs(t), "--prompt-file", f := mkdir(t / "prompt.txt")),
        [str(f), "is a folder"],
    ),
    "label --prompt-file | missing": lambda t: (
        label(t, judge_pairs(t), "--prompt-file", t / "none.txt"),
        [str(t / "none.txt"), "no such prompt file"],
    ),
}


@pytest.mark.parametrize("case", OTHER_CASES)
def test_malformed_input(tmp_path, case):
    argv, fragments = OTHER_CASES[case](tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_one_line_error(darling_in_process(*argv), *fragments)
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written beside the inputs either


def test_report_only_run_on_an_empty_output_writes_nothing(tmp_path):
    """--no-generate reads OUTPUT: a folder without generations is refused and stays as it was."""
    out = tmp_path / "out"
    out.mkdir()
    assert_one_line_error(darling("eval", "math", "--no-generate", "--output", out), str(out), "no generations")
    assert list(out.iterdir()) == []


def test_a_generator_entry_may_set_every_field(tmp_path):
    from darling.datagen.config import GeneratorSpec, load_generator_config

    full = {
        "name": "a",
        "model": "m",
        "system_prompt": None,
        "user_template": "Q: {problem}",
        "prompt_setting": "s",
        "n": 2,
        "temperature": 1,
        "top_p": 0.9,
        "max_tokens": 8,
        "tensor_parallel_size": 4,
        "data_parallel_size": 2,
        "max_model_len": 4096,
        "gpu_memory_utilization": 0.85,
    }
    assert set(full) == set(GeneratorSpec.__dataclass_fields__)  # a new field needs its check in the loader
    (spec,) = load_generator_config(write(tmp_path, "g.yaml", json.dumps({"generators": [full]})))
    assert spec == GeneratorSpec(**full)
