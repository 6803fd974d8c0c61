"""Loading math problems (darling.datagen.problems) and the CHAMP dataset (darling.datagen.champ)."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter

import polars as pl
import pytest
from helpers import MATH_SETS, darling, write_jsonl

from darling.core.errors import UserInputError
from darling.core.math_grading import answers_equivalent, is_correct
from darling.core.schemas import ROLLOUT_COLUMNS, Problem, polars_schema, stable_id
from darling.datagen import champ
from darling.datagen.problems import BUILTIN_SOURCES, PACKAGED_SETS, load_problems, packaged_problem_file

# --- the real benchmark files, packaged (datagen/resources/math, MIT) -----------------------------------------
# name -> (first problem id, first reference answer, the field the problem text came from, SHA-256 of the
# uncompressed file: the packaged copies are the released files byte for byte)
REAL_FILES = {
    "aime24": ("aime24:60", "204", "problem", "af2b8bd2aa911b6333ad0df32f3ca05c7ae8ed10f1731f4372c8ae26990bf7ac"),
    "aime25": ("aime25:0", "70", "question", "60324e7a6e767f3637b7fdd16540a0c5a4090695b34a950f59ae1097e8bfa206"),
    # a float in the file
    "amc23": ("amc23:0", "27.0", "problem", "43707e1ca784602d8479de24ee8ce36609dbebc46dd152b0b12a46611aa898a4"),
    # "... #### 18"
    "gsm8k": ("gsm8k:0", "18", "question", "9f098df7ff4522078d6ccec27a5c38a454790fdb51131bedfaa0e490070d5394"),
    "hmmt": ("hmmt:1", "103", "question", "168366b467385a14f675265c32d707ed34c6e55c6c9d176d3c598bc8526b5b31"),
    # last \boxed{} of the solution
    "minerva_math": (
        "minerva_math:0",
        "1.6",
        "problem",
        "0e656b430d3a0a1dab6aa853f453ba3805e28e2cabe4fc72486a897cc09d8ba2",
    ),
    # final_answer == ['2']
    "olympiadbench": (
        "olympiadbench:1606",
        "2",
        "question",
        "bb8c1e38a16ea9eacb77530315a674d883f267fbff79183effc53681b4fcc416",
    ),
}
COUNTS = {"aime24": 30, "aime25": 30, "amc23": 40, "gsm8k": 1319, "hmmt": 30, "minerva_math": 272, "olympiadbench": 675}


def packaged_lines(name: str) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress((MATH_SETS / f"{name}.jsonl.gz").read_bytes()).splitlines()]


@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_math_files(name):
    path = MATH_SETS / f"{name}.jsonl.gz"
    first_id, first_answer, problem_field, sha256 = REAL_FILES[name]
    assert hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest() == sha256
    lines = packaged_lines(name)
    problems = load_problems(path)
    assert len(problems) == len(lines) == COUNTS[name]
    assert problems[0] == Problem(first_id, name, lines[0][problem_field], first_answer)
    assert all(p.source == name and p.problem_id.startswith(f"{name}:") for p in problems)
    assert all(p.reference_answer for p in problems)
    assert len({p.problem_id for p in problems}) == len(problems)
    assert load_problems(name) == problems  # by name: the same problems, the same ids
    assert load_problems(name, limit=3) == problems[:3]


def test_packaged_sets_by_name_alias_and_licence():
    # every prompt file shipped is a built-in set by its file's name, and nothing else is
    shipped_prompts = {p.name.removesuffix(".jsonl.gz") for p in (MATH_SETS.parent / "prompts").glob("*.jsonl.gz")}
    assert {"naming-train", "items-heldout", "items-phrase-train"} <= shipped_prompts
    assert set(PACKAGED_SETS) == set(REAL_FILES)
    assert set(BUILTIN_SOURCES) == {"champ", "arithmetic", *shipped_prompts, *REAL_FILES}
    assert load_problems("minerva") == load_problems("minerva_math")  # alias: the same ids either way
    assert "MIT License" in (MATH_SETS / "LICENSE").read_text()
    assert sorted(p.name for p in MATH_SETS.glob("*.jsonl.gz")) == sorted(f"{n}.jsonl.gz" for n in REAL_FILES)
    with pytest.raises(UserInputError, match="fixed fields"):
        load_problems("aime24", answer_field="solution")
    with pytest.raises(UserInputError, match=r"aime2024: file not found \(nor a built-in set: champ, arithmetic, aime"):
        load_problems("aime2024")


def test_the_pipeline_manifest_records_a_packaged_set_as_a_file(tmp_path):
    from darling.pipeline import build_config
    from darling.pipeline.report import used_inputs
    from darling.pipeline.stage import Plan

    config = build_config("cpu", tmp_path / "run", **{"eval_math.problems": ["aime24", "arithmetic"]})
    problems = [e for e in used_inputs(Plan(config), {}) if e["role"] == "problems"]
    packaged = packaged_problem_file("aime24")
    assert packaged is not None and packaged.name == "aime24.jsonl.gz" and packaged_problem_file("nope") is None
    assert (problems[0]["name"], problems[0]["path"]) == ("aime24", str(packaged))
    assert problems[0]["sha256"] == hashlib.sha256((MATH_SETS / "aime24.jsonl.gz").read_bytes()).hexdigest()
    assert problems[1] == {"role": "problems", "name": "arithmetic", "note": "built in (generated in code, seeded)"}


def test_a_local_file_named_like_a_set_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "aime24", [{"problem": "mine"}])  # no suffix: not a supported file
    with pytest.raises(UserInputError, match="unsupported problem file"):
        load_problems("aime24")


def test_real_answer_shapes():
    gsm8k = load_problems("gsm8k")
    raw = [line["answer"].split("####")[-1].strip() for line in packaged_lines("gsm8k")]
    assert any("," in answer for answer in raw)  # e.g. "70,000": thousands separators are dropped
    assert [p.reference_answer for p in gsm8k] == [answer.replace(",", "") for answer in raw]

    amc = load_problems("amc23")
    assert answers_equivalent(amc[0].reference_answer, "27")
    assert is_correct(amc[0].reference_answer, r"They meet \boxed{27} miles from A.")

    olympiad = load_problems("olympiadbench")
    assert olympiad[1].reference_answer == r"$\frac{1}{2 n+2}$"
    assert max(len(p.reference_answer) for p in olympiad) > 100  # list answers are never cut off

    hmmt = load_problems("hmmt")
    assert hmmt[2].reference_answer == r"\frac{1}{576}"


def test_eval_math_and_rollouts_take_the_sets_by_name(tmp_path):
    """The sets by name through `eval math`, answered by a tiny random policy over byte ids (what it says is noise)."""
    out = tmp_path / "eval"
    result = darling(
        "eval",
        "math",
        "--problems",
        "aime24",
        "--problems",
        "minerva",
        "--limit",
        1,
        "--model",
        "policy=tiny:bytes-lm",
        "-n",
        1,
        "--max-tokens",
        4,
        "--threads",
        1,
        "--output",
        out,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "metrics.json").read_text())["datasets"] == ["aime24", "minerva_math"]
    rows = pl.concat(
        [pl.read_parquet(out / "generations" / d / "policy" / "part-*.parquet") for d in ("aime24", "minerva_math")]
    )
    assert rows["problem_id"].to_list() == ["aime24:60", "minerva_math:0"]
    assert rows["reference_answer"].to_list() == ["204", "1.6"] and (rows["status"] == "ok").all()


# --- overrides and detection -------------------------------------------------------------------------------
def test_field_overrides(tmp_path):
    path = write_jsonl(
        tmp_path / "custom.jsonl",
        [{"q": "What is 1+1?", "gold": "2", "key": "a", "question": "ignored"}, {"q": "3*3?", "gold": 9, "key": "b"}],
    )
    problems = load_problems(path, problem_field="q", answer_field="gold", id_field="key")
    assert problems == [Problem("custom:a", "custom", "What is 1+1?", "2"), Problem("custom:b", "custom", "3*3?", "9")]
    with pytest.raises(UserInputError, match=r"custom.jsonl:2: missing field 'question' \(given by --problem-field\)"):
        load_problems(path, problem_field="question")
    with pytest.raises(UserInputError, match=r"custom.jsonl:1: missing field 'answer' \(given by --answer-field\)"):
        load_problems(path, problem_field="q", answer_field="answer")
    with pytest.raises(UserInputError, match=r"custom.jsonl:1: missing field 'nope' \(given by --id-field\)"):
        load_problems(path, problem_field="q", id_field="nope")


def test_detection_order_ids_and_lists(tmp_path):
    rows = [
        {"prompt": "p1", "instruction": "i1", "final_answer": ["1", "2"], "unique_id": 7},
        {"instruction": "i2", "ground_truth": None, "solution": r"so \boxed{x+1}"},  # null fields are absent
        {"question": "q3", "problem": None},
    ]
    problems = load_problems(write_jsonl(tmp_path / "mixed.jsonl", rows))
    assert problems[0] == Problem("mixed:7", "mixed", "p1", "1, 2")
    assert problems[1] == Problem(f"mixed:{stable_id('i2')}", "mixed", "i2", "x+1")  # no id: content hash
    assert problems[2].problem == "q3" and problems[2].reference_answer is None


def test_limit_and_gzip(tmp_path):
    path = tmp_path / "set.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(json.dumps({"id": i, "problem": f"p{i}", "answer": str(i)}) + "\n" for i in range(5))
    problems = load_problems(path, limit=2)
    assert [p.problem_id for p in problems] == ["set:0", "set:1"]
    with pytest.raises(UserInputError, match="limit must be at least 1"):
        load_problems(path, limit=0)


# --- bad input: one line naming file, line and field -------------------------------------------------------
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"problem": "ok"}, {"text": "no problem field"}],
            r"bad.jsonl:2: no problem field \(tried problem, question, prompt, instruction\); name it with "
            r"--problem-field",
        ),
        ([{"problem": "ok"}, '{"problem": "broken'], r"bad.jsonl:2: not valid JSON"),
        (
            [{"id": 1, "problem": "a"}, {"id": 2, "problem": "b"}, {"id": 1, "problem": "c"}],
            r"bad.jsonl:3: duplicate problem id 'bad:1' \(also at .*bad.jsonl:1\)",
        ),
        ([{"problem": "same"}, {"problem": "same"}], r"bad.jsonl:2: duplicate problem id"),
        ([{"question": 12}], r"bad.jsonl:1: field 'question' must be a string, got int"),
        ([{"problem": "  "}], r"bad.jsonl:1: field 'problem' is empty"),
        ([{"problem": "p", "answer": {"a": 1}}], r"bad.jsonl:1: field 'answer' must be a string, number or list"),
        ([["a", "list"]], r"bad.jsonl:1: expected an object"),
        ([], r"bad.jsonl: no problems found"),
    ],
)
def test_bad_jsonl(tmp_path, rows, message):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(UserInputError, match=message) as info:
        load_problems(path)
    assert "\n" not in str(info.value)


def test_bad_sources(tmp_path):
    with pytest.raises(UserInputError, match="file not found"):
        load_problems(tmp_path / "missing.jsonl")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UserInputError, match="unsupported problem file"):
        load_problems(tmp_path / "notes.txt")
    with pytest.raises(UserInputError, match="cannot load Hugging Face dataset"):
        load_problems("darling-tests/no-such-dataset")  # HF_HUB_OFFLINE=1 in helpers: fails without network
    with pytest.raises(UserInputError, match="fixed fields"):
        load_problems("champ", problem_field="question")


# --- Parquet and datasets folders --------------------------------------------------------------------------
def test_parquet_file_and_folder(tmp_path):
    frame = pl.DataFrame({"idx": [0, 1, 2], "question": ["a", "b", None], "answer": ["#### 1,000", "2", "3"]})
    frame.write_parquet(tmp_path / "bench.parquet")
    with pytest.raises(UserInputError, match=r"bench.parquet: row 2: no problem field"):
        load_problems(tmp_path / "bench.parquet")

    shards = tmp_path / "shards"
    shards.mkdir()
    frame.head(2).write_parquet(shards / "part-0.parquet")
    frame.head(2).with_columns(pl.col("idx") + 10).write_parquet(shards / "part-1.parquet")
    problems = load_problems(shards)
    assert [p.problem_id for p in problems] == ["shards:0", "shards:1", "shards:10", "shards:11"]
    assert problems[0].reference_answer == "1000"

    frame.head(2).write_parquet(shards / "part-2.parquet")
    with pytest.raises(UserInputError, match=r"part-2.parquet: row 0: duplicate problem id 'shards:0'"):
        load_problems(shards)


def test_datasets_folder(tmp_path):
    import datasets

    datasets.Dataset.from_list([{"problem": "p", "answer": "4", "id": "x"}]).save_to_disk(str(tmp_path / "saved"))
    assert load_problems(tmp_path / "saved") == [Problem("saved:x", "saved", "p", "4")]


# --- CHAMP -------------------------------------------------------------------------------------------------
def test_champ_problems():
    problems = load_problems("champ")
    assert len(problems) == 270 == len({p.problem_id for p in problems})
    assert problems[0] == Problem(
        "champ:P_Combinatorics_1",
        "champ",
        "Let a string consist of digit 1, 2, 3. How many such strings of length 6 have adjacent digit differing "
        "by less than or equal to 1?",
        "239",
    )
    assert all(p.reference_answer for p in problems)
    assert len(load_problems("champ", limit=5)) == 5


@pytest.mark.parametrize(
    ("answer", "forms"),
    [
        ("C(10, 5), or equivalently 252", ["C(10, 5)", "252"]),
        ("100 (i.e., all values)", ["100"]),
        ("0 is the only possible value", ["0"]),
        ("The limit exists and is equal to (a+3b)/2", ["(a+3b)/2"]),
        ("At most 0 values (i.e., no such values)", ["0"]),
        ("98 values", ["98"]),
        ("5/14, or approximately 35.7%", ["5/14", "35.7%"]),
        ("x=6, y=5", ["x=6, y=5"]),
        ("sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2", ["(n(n+1)/2)^2"]),
        ("sum_(k=1)^n 1/k", ["sum_(k=1)^n 1/k"]),
    ],
)
def test_champ_reference_forms(answer, forms):
    assert champ.reference_forms(answer) == forms


def test_champ_summary_answers_and_grading():
    assert champ.summary_answer("There are 89 ways to tile a 2 x 21 rectangle with 2 x 1 tiles.", "") == "89"
    assert champ.summary_answer("The smallest value of the expression is \\( 2^{m+1} \\).", "") == "2^{m+1}"
    assert champ.summary_answer("It cannot be determined.", r"so \boxed{7}") == "7"
    # A bare plain-text expression after the last "is", cut at its clause: math-verify alone reads 1/sqrt(3) as 1.
    assert champ.summary_answer("The minimum is 1/sqrt(3), attained when a = b = c.", "") == "1/sqrt(3)"
    assert champ.summary_answer("The count is 3*4^(n-1).", "") == "3*4^(n-1)"
    assert champ.summary_answer("The number of ways is n factorial.", "") is None
    assert champ.grade("No", "No, there is no such polynomial.", "", None) is True
    assert champ.grade("Yes", "No, there is no such polynomial.", "", None) is False
    assert champ.grade("C(10, 5), or equivalently 252", "", "", "252") is True
    assert champ.grade("100 (i.e., all values)", "", "", "99") is False
    assert champ.grade("sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2", "", "", "(n*(n+1)/2)^2") is True
    assert champ.grade("sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2", "", "", "1") is False
    assert champ.grade(None, "", "", "1") is None


def check_rollout_rows(rows: list[dict], stats: dict, conversations: int) -> None:
    assert stats["total"] == conversations
    assert stats["imported"] == len(rows) == conversations - stats["skipped"]
    assert all(list(row) == list(ROLLOUT_COLUMNS) for row in rows)
    frame = pl.DataFrame(rows, schema=polars_schema(ROLLOUT_COLUMNS))  # the writers' schema accepts them
    assert frame["rollout_id"].n_unique() == len(rows)
    per_key = Counter((row["problem_id"], row["model"]) for row in rows)
    assert max(per_key.values()) <= 18
    assert set(frame["sample_index"].unique()) <= set(range(18))
    assert set(frame["finish_reason"]) == {"imported"} and set(frame["status"]) == {"ok"}
    assert set(frame["engine"]) == {"import"} and frame["error"].null_count() == len(rows)
    for row in rows[:50]:
        assert row["rollout_id"] == stable_id(row["problem_id"], row["model"], row["sample_index"])


def test_champ_import_subset(monkeypatch):
    # Three problems, so the row format is checked in seconds; the full import is the slow test below.
    data = champ._champ_json()
    subset = {k: data[k] for k in ("P_Combinatorics_1", "P_Combinatorics_7", "P_Combinatorics_9")}
    monkeypatch.setattr(champ, "_champ_json", lambda: subset)
    rows, stats = champ.import_champ_rollouts(progress=True)
    check_rollout_rows(rows, stats, conversations=3 * 72)
    with_error = sum(
        any(m["error"] for m in c["messages"]) for entry in subset.values() for c in entry["conversations"].values()
    )
    assert stats["skipped"] == with_error == stats["skipped_by_reason"]["LENGTH_CURRENT"] > 0  # length-limited
    first = next(r for r in rows if r["problem_id"] == "champ:P_Combinatorics_1" and r["model"] == "GPT-3.5")
    assert first["prompt_setting"] == "0-Shot" and first["sample_index"] == 0  # sorted setting names
    assert first["reference_answer"] == "239" and first["response"].startswith("To solve this problem")
    again, _ = champ.import_champ_rollouts()
    assert again == rows  # stable across runs


@pytest.mark.slow
def test_champ_import_graded_on_a_stratified_sample():
    """Every 9th of CHAMP's 270 problems (30, every category; ~2,100 responses graded in ~15 s, where all 19,440 take
    minutes): the rows are complete, every response is graded, and the grades rank the models as CHAMP's paper does
    (GPT-4 above GPT-3.5 above PaLM 2). The full import runs in `darling pipeline --preset cpu` and bench/."""
    ids = champ.champ_identifiers()[::9]
    rows, stats = champ.import_champ_rollouts(only=ids)
    check_rollout_rows(rows, stats, conversations=len(ids) * 72)
    assert 0 < stats["skipped"] < 0.05 * stats["total"]  # solutions cut by the length limit: no summary
    models = Counter(row["model"] for row in rows)
    assert set(models) == {"GPT-3.5", "GPT-4", "GPT-4 Turbo", "PaLM 2 Medium"}
    assert len({row["problem_id"] for row in rows}) == 30
    rate = {m: sum(bool(r["correct"]) for r in rows if r["model"] == m) / n for m, n in models.items()}
    assert all(r["correct"] is not None for r in rows)
    assert 0.05 < rate["GPT-3.5"] < rate["GPT-4"] < 0.95
    assert rate["PaLM 2 Medium"] < rate["GPT-3.5"]
    assert sum(r["extracted_answer"] is not None for r in rows) > 0.9 * len(rows)


def test_builtin_arithmetic_problems_are_seeded_and_graded():
    from darling.core.math_grading import is_correct

    first = load_problems("arithmetic", limit=4)
    assert first == load_problems("arithmetic")[:4] and len(load_problems("arithmetic")) == 200
    for p in first:
        a, op, b = p.problem.removeprefix("What is ").removesuffix("?").split()
        assert p.reference_answer == str(int(a) + int(b) if op == "+" else int(a) - int(b))
        assert is_correct(p.reference_answer, f"The answer is \\boxed{{{p.reference_answer}}}.")
