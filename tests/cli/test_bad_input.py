"""A corpus of malformed record files (pairs, problems, prompts) for every command that reads one, run as a
user runs them; generator lists, configs, exports, rollouts folders and judge inputs: test_bad_input_files.py.

Each case: exit code 2, exactly one line on stderr naming the file (and the line or row and field where there
is one), no traceback, and the --output folder never created. The corpus calls the real command line in this
process (`darling_in_process`: ~1 s of interpreter start-up saved per case); a case per command of it runs as a
real process (`test_as_a_user_runs_it`). Pairs, problems and prompts go through one reader
(darling.core.readers), so the whole set of broken JSONL/Parquet/folder inputs is tried on the first command
of each kind and the two the issue found on every other command that reads the same kind.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from helpers import assert_one_line_error, darling, darling_in_process, write_jsonl

GOOD_PAIR = {"prompt": "p", "generation_0": "a", "generation_1": "b", "similar": 1}
GOOD_PROBLEM = {"problem": "What is 1 + 1?", "answer": "2"}
GOOD_PROMPT = {"prompt": "Tell me a story about a cat."}
NOT_UTF8 = "caf\udce9"  # written with surrogateescape: the Latin-1 byte 0xe9, invalid in UTF-8

# kind -> (good record, field removed for "missing field", (field, bad value), messages for missing / wrong type /
# empty / folder)
KINDS = {
    "pairs": (
        GOOD_PAIR,
        "similar",
        ("generation_0", 3),
        ("missing field 'similar'", "field 'generation_0' must be a string", "no pairs found", "unsupported pair file"),
    ),
    "problems": (
        GOOD_PROBLEM,
        "problem",
        ("problem", 3),
        ("no problem field", "field 'problem' must be a string", "no problems found", "unsupported problem file"),
    ),
    "prompts": (
        GOOD_PROMPT,
        "prompt",
        ("prompt", 3),
        (
            "missing field 'prompt'",
            "field 'prompt' must be a non-empty string",
            "no prompts found",
            "unsupported problem file",
        ),
    ),
}


def _line(record: dict) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")


def _gzip(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data, mtime=0))
    return path


# --- malformed record files: (tmp, kind) -> (path, fragments the one-line error must contain) --------------
def not_utf8(tmp: Path, kind: str):
    good, text_field = KINDS[kind][0], next(k for k, v in KINDS[kind][0].items() if isinstance(v, str))
    path = tmp / "in.jsonl"
    path.write_bytes(_line(good) + _line({**good, text_field: NOT_UTF8}))
    return path, [f"{path}:2", "not UTF-8"]


def not_utf8_gz(tmp: Path, kind: str):
    good, text_field = KINDS[kind][0], next(k for k, v in KINDS[kind][0].items() if isinstance(v, str))
    path = _gzip(tmp / "in.jsonl.gz", _line(good) + _line({**good, text_field: NOT_UTF8}))
    return path, [f"{path}:2", "not UTF-8"]


def truncated_gz(tmp: Path, kind: str):
    good = KINDS[kind][0]
    rows = b"".join(_line({**good, "id": i}) for i in range(300))
    data = gzip.compress(rows, mtime=0)
    path = tmp / "in.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])  # a copy cut short
    return path, [str(path), "truncated or corrupt gzip data"]


def not_gzip(tmp: Path, kind: str):
    path = tmp / "in.jsonl.gz"
    path.write_bytes(_line(KINDS[kind][0]))  # plain text under a .gz name
    return path, [str(path), "not a gzip file"]


def broken_json(tmp: Path, kind: str):
    path = write_jsonl(tmp / "in.jsonl", [KINDS[kind][0], '{"prompt": "unterminated'])
    return path, [f"{path}:2", "not valid JSON"]


def missing_field(tmp: Path, kind: str):
    good, drop, _, messages = KINDS[kind]
    path = write_jsonl(tmp / "in.jsonl", [good, {k: v for k, v in good.items() if k != drop}])
    return path, [f"{path}:2", messages[0]]


def wrong_type(tmp: Path, kind: str):
    good, _, (name, value), messages = KINDS[kind]
    path = write_jsonl(tmp / "in.jsonl", [good, {**good, name: value}])
    return path, [f"{path}:2", messages[1]]


def not_an_object(tmp: Path, kind: str):
    path = write_jsonl(tmp / "in.jsonl", [KINDS[kind][0], "[1, 2]"])
    return path, [f"{path}:2", "expected"]


def empty_file(tmp: Path, kind: str):
    path = tmp / "in.jsonl"
    path.write_text("\n\n")
    return path, [str(path), KINDS[kind][3][2]]


def fake_parquet(tmp: Path, kind: str):
    path = tmp / "in.parquet"
    path.write_text("this is not Parquet\n")
    return path, [str(path), "cannot read Parquet"]


def parquet_missing_field(tmp: Path, kind: str):
    good, drop, _, messages = KINDS[kind]
    path = tmp / "in.parquet"
    pl.DataFrame([{k: v for k, v in good.items() if k != drop}]).write_parquet(path)
    return path, [f"{path}: row 0", messages[0]]


def folder(tmp: Path, kind: str):
    path = tmp / "in"
    path.mkdir()
    (path / "notes.txt").write_text("no data here")
    return path, [str(path), KINDS[kind][3][3] if kind != "prompts" else "unsupported"]


def damaged_dataset_folder(tmp: Path, kind: str):
    path = tmp / "saved"
    path.mkdir()
    (path / "dataset_info.json").write_text("{}")  # looks like save_to_disk's, holds nothing
    return path, [str(path), "cannot load Hugging Face dataset"]


def missing_file(tmp: Path, kind: str):
    path = tmp / "nowhere.jsonl"
    return path, [str(path), "not found"]


RECORD_FILES: dict[str, Callable] = {
    f.__name__: f
    for f in (
        not_utf8,
        not_utf8_gz,
        truncated_gz,
        not_gzip,
        broken_json,
        missing_field,
        wrong_type,
        not_an_object,
        empty_file,
        fake_parquet,
        parquet_missing_field,
        folder,
        damaged_dataset_folder,
        missing_file,
    )
}
# On every other command of the same kind: the two the issue found (one process start each costs seconds).
SOME = ("not_utf8", "truncated_gz")
MORE = {"eval math --problems": ("broken_json", "fake_parquet")}


# --- commands that read record files: name -> (kind, argv from (tmp, bad file, output)) ---------------------
def good_pairs(tmp: Path) -> Path:
    return write_jsonl(tmp / "good-pairs.jsonl", [{**GOOD_PAIR, "similar": i % 2} for i in range(8)])


def good_problems(tmp: Path) -> Path:
    return write_jsonl(tmp / "good-problems.jsonl", [GOOD_PROBLEM])


RECORD_COMMANDS = {
    "train-classifier --data": ("pairs", lambda t, f, o: ["train-classifier", "--data", f, "--output", o]),
    "train-classifier --val": (
        "pairs",
        lambda t, f, o: ["train-classifier", "--data", good_pairs(t), "--val", f, "--output", o],
    ),
    "train-classifier --test": (
        "pairs",
        lambda t, f, o: ["train-classifier", "--data", good_pairs(t), "--test", f, "--output", o],
    ),
    "eval classifier --data": (
        "pairs",
        lambda t, f, o: ["eval", "classifier", "--model", t / "clf", "--data", f, "--output", o],
    ),
    "eval classifier --fit-data": (
        "pairs",
        lambda t, f, o: [
            "eval",
            "classifier",
            "--zero-shot",
            "packaged:x",
            "--fit-data",
            f,
            "--data",
            good_pairs(t),
            "--output",
            o,
        ],
    ),
    "datagen rollouts --problems": (
        "problems",
        lambda t, f, o: ["datagen", "rollouts", "--problems", f, "--model", "smollm2", "--output", o],
    ),
    "eval math --problems": (
        "problems",
        lambda t, f, o: [
            "eval",
            "math",
            "--problems",
            "arithmetic",
            "--problems",
            f,
            "--model",
            "smollm2",
            "--output",
            o,
        ],
    ),
    "rl-train --problems": (
        "problems",
        lambda t, f, o: ["rl-train", "--method", "grpo", "--problems", f, "--output", o],
    ),
    "eval novelty --prompts": (
        "prompts",
        lambda t, f, o: [
            "eval",
            "novelty",
            "--prompts",
            f,
            "--model",
            "smollm2",
            "--classifier",
            t / "clf",
            "--output",
            o,
        ],
    ),
}
FIRST_OF_KIND = {"train-classifier --data", "datagen rollouts --problems", "eval novelty --prompts"}
RECORD_CASES = [
    pytest.param(command, name, id=f"{command} | {name}")
    for command in RECORD_COMMANDS
    for name in RECORD_FILES
    if command in FIRST_OF_KIND or name in SOME or name in MORE.get(command, ())
    # rl-train reads only the first --limit problems (32 in its cpu preset), so a file cut after them is fine
    if (command, name) != ("rl-train --problems", "truncated_gz")
]


@pytest.mark.parametrize(("command", "malformed"), RECORD_CASES)
def test_malformed_record_file(tmp_path, command, malformed):
    kind, argv = RECORD_COMMANDS[command]
    path, fragments = RECORD_FILES[malformed](tmp_path, kind)
    out = tmp_path / "out"
    assert_one_line_error(darling_in_process(*argv(tmp_path, path, out)), *fragments)
    assert not out.exists()


@pytest.mark.parametrize("command", list(RECORD_COMMANDS))
def test_as_a_user_runs_it(tmp_path, command):
    """One malformed file per command through a real `darling` process: exit code 2, one line, no traceback."""
    kind, argv = RECORD_COMMANDS[command]
    path, fragments = RECORD_FILES["not_utf8"](tmp_path, kind)
    out = tmp_path / "out"
    assert_one_line_error(darling(*argv(tmp_path, path, out)), *fragments)
    assert not out.exists()


# --- the shared readers, in process ------------------------------------------------------------------------
def test_a_utf8_bom_and_blank_lines_are_fine(tmp_path):
    from darling.classifier.labelled_pairs import load_pairs
    from darling.datagen.problems import load_problems

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _line(GOOD_PAIR) + b"\n  \n" + _line(GOOD_PAIR | {"similar": 0}))
    assert load_pairs(path).labels == [1, 0]
    gz = _gzip(tmp_path / "bom.jsonl.gz", b"\xef\xbb\xbf" + _line(GOOD_PROBLEM))
    assert load_problems(gz)[0].reference_answer == "2"


def test_messages_of_libraries_are_one_line():
    from darling.core.readers import one_line

    assert one_line("unable to find column 'x'\n\nResolved plan:\n\t---> FAILED") == (
        "unable to find column 'x' Resolved plan: ---> FAILED"
    )
