"""Load math problems (text, reference answer, stable id) from the formats benchmarks ship in.

Math benchmarks disagree on field names (``problem`` / ``question``, ``answer`` / ``final_answer`` /
``solution``) and on answer types (strings, floats, lists), so fields are detected per record and
overridable. Every bad record is reported as one line naming the file, the line (JSONL, 1-based) or row
(Parquet and datasets, 0-based) and the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.math_grading import reference_from_text
from darling.core.readers import iter_dataset, iter_jsonl, iter_parquet
from darling.core.schemas import Problem, stable_id
from darling.datagen.champ import champ_problems

PROBLEM_FIELDS = ("problem", "question", "prompt", "instruction")
ANSWER_FIELDS = ("answer", "final_answer", "ground_truth", "solution")
ID_FIELDS = ("id", "idx", "problem_id", "unique_id", "identifier")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".jsonlines", ".json-lines")
# Test sets shipped inside the package (resources/math/NAME.jsonl.gz, MIT, see the LICENSE there), so the
# paper's benchmarks (and GSM8K) load by name, offline. Names are the files' (and the eval harnesses') own.
PACKAGED_MATH = Path(__file__).parent / "resources" / "math"
PACKAGED_SETS = ("aime24", "aime25", "amc23", "hmmt", "minerva_math", "olympiadbench", "gsm8k")
ALIASES = {"minerva": "minerva_math"}
# Open-ended prompts shipped with the package (resources/prompts, MIT): no reference answers; the naming
# prompts of the DARLING-vs-GRPO comparison, split once into training and held-out categories.
PACKAGED_PROMPTS = Path(__file__).parent / "resources" / "prompts"
PACKAGED_PROMPT_SETS = (
    "naming-train",
    "naming-heldout",
    "items-train",
    "items-heldout",
    "items-phrase-train",
    "items-phrase-heldout",
    "world-train",
    "world-heldout",
)
GENERATED_SETS = ("champ", "arithmetic")  # built in code (CHAMP's from its package), no file of ours
BUILTIN_SOURCES = (*GENERATED_SETS, *PACKAGED_SETS, *PACKAGED_PROMPT_SETS)


def _first_present(record: Mapping[str, Any], fields: tuple[str, ...]) -> str | None:
    return next((f for f in fields if record.get(f) is not None), None)


def _answer_text(value: Any, where: str, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        # A list is a list of final answers (olympiadbench ['2']), never a worked solution, so it is kept
        # whatever its length.
        parts = [str(v).strip() for v in value if v is not None and str(v).strip()]
        return reference_from_text(", ".join(parts), max_chars=None) if parts else None
    if isinstance(value, bool | int | float):
        # str(27.0) == "27.0", which math-verify treats as equal to 27: no rounding needed here.
        return str(value)
    if isinstance(value, str):
        return reference_from_text(value)
    raise UserInputError(f"{where}: field '{field}' must be a string, number or list, got {type(value).__name__}")


def record_to_problem(
    record: Any,
    where: str,
    source: str,
    problem_field: str | None = None,
    answer_field: str | None = None,
    id_field: str | None = None,
) -> Problem:
    """Validate one raw record into a Problem, or raise naming ``where`` and the field."""
    if not isinstance(record, Mapping):
        raise UserInputError(f"{where}: expected an object with a problem field, got {type(record).__name__}")

    if problem_field is not None:
        if record.get(problem_field) is None:
            raise UserInputError(f"{where}: missing field '{problem_field}' (given by --problem-field)")
        pfield: str | None = problem_field
    else:
        pfield = _first_present(record, PROBLEM_FIELDS)
        if pfield is None:
            raise UserInputError(
                f"{where}: no problem field (tried {', '.join(PROBLEM_FIELDS)}); name it with --problem-field"
            )
    text = record[pfield]
    if not isinstance(text, str):
        raise UserInputError(f"{where}: field '{pfield}' must be a string, got {type(text).__name__}")
    if not text.strip():
        raise UserInputError(f"{where}: field '{pfield}' is empty")

    if answer_field is not None:
        if answer_field not in record:
            raise UserInputError(f"{where}: missing field '{answer_field}' (given by --answer-field)")
        afield: str | None = answer_field
    else:
        afield = _first_present(record, ANSWER_FIELDS)
    reference = _answer_text(record[afield], where, afield) if afield else None

    if id_field is not None:
        if record.get(id_field) in (None, ""):
            raise UserInputError(f"{where}: missing field '{id_field}' (given by --id-field)")
        raw_id = record[id_field]
    else:
        ifield = next((f for f in ID_FIELDS if record.get(f) not in (None, "")), None)
        raw_id = record[ifield] if ifield else None
    # Without an id the problem text is the identity, so a reordered file keeps its ids.
    local_id = str(raw_id) if raw_id is not None else stable_id(text)
    return Problem(problem_id=f"{source}:{local_id}", source=source, problem=text, reference_answer=reference)


def _source_name(path: Path) -> str:
    name = path.name
    for suffix in sorted(JSONL_SUFFIXES + (".parquet",), key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def builtin_name(spec: str) -> str | None:
    """The built-in set ``spec`` names (aliases resolved), or None; a file or folder of that name wins."""
    name = ALIASES.get(spec, spec)
    return name if name in BUILTIN_SOURCES and not Path(spec).exists() else None


def packaged_problem_file(spec: str) -> Path | None:
    """The packaged file behind a built-in name (``aime24`` -> ``.../resources/math/aime24.jsonl.gz``), or None."""
    name = builtin_name(spec)
    if name in PACKAGED_PROMPT_SETS:
        return PACKAGED_PROMPTS / f"{name}.jsonl.gz"
    return PACKAGED_MATH / f"{name}.jsonl.gz" if name in PACKAGED_SETS else None


def problem_records(spec: str) -> tuple[Iterator[tuple[str, Any]], str]:
    """The (where, record) stream of a file, folder, hub dataset or packaged set, and the source name used in
    problem ids (a file's stem; a packaged set's name, so ``minerva`` and ``minerva_math`` give the same ids)."""
    packaged = packaged_problem_file(spec)
    if packaged is not None:
        return iter_jsonl(packaged), _source_name(packaged)
    path = Path(spec)
    if path.is_file() and path.name.endswith(JSONL_SUFFIXES):
        return iter_jsonl(path), _source_name(path)
    if (path.is_file() and path.suffix == ".parquet") or (path.is_dir() and any(path.glob("*.parquet"))):
        return iter_parquet(path), _source_name(path.resolve())
    if path.is_dir() and any((path / n).exists() for n in ("dataset_info.json", "dataset_dict.json")):
        return iter_dataset(spec), path.resolve().name
    if path.exists():
        raise UserInputError(f"{spec}: unsupported problem file (expected .jsonl, .parquet or a dataset folder)")
    if "/" in spec and not spec.startswith((".", "/")) and not path.suffix:
        return iter_dataset(spec), spec.partition(":")[0]
    raise UserInputError(f"{spec}: file not found (nor a built-in set: {', '.join(BUILTIN_SOURCES)})")


def load_problems(
    source: str | Path,
    problem_field: str | None = None,
    answer_field: str | None = None,
    id_field: str | None = None,
    limit: int | None = None,
) -> list[Problem]:
    """Problems from a ``.jsonl[.gz]`` file, a ``.parquet`` file or folder of shards, a ``save_to_disk``
    folder, a Hugging Face hub name ``owner/name[:split]``, or a built-in set by name: ``champ`` (270
    problems), ``arithmetic`` (200 generated problems) or a packaged test set: ``aime24`` (30), ``aime25``
    (30), ``amc23`` (40), ``hmmt`` (30, February 2025), ``minerva_math`` (272, alias ``minerva``),
    ``olympiadbench`` (675), ``gsm8k`` (1,319); or the open-ended prompts ``naming-train`` (48),
    ``naming-heldout`` (24), ``items-train`` (18), ``items-heldout`` (30) and their phrase forms
    ``items-phrase-train`` / ``items-phrase-heldout``, and the world's ``world-train`` (32) and ``world-heldout``
    (16), which have no reference answers.

    Fields are detected per record: problem from the first of PROBLEM_FIELDS, reference answer from the
    first of ANSWER_FIELDS (reduced to a final answer by ``reference_from_text``), id from ID_FIELDS; each
    can be named instead. ``limit`` keeps the first N problems."""
    if limit is not None and limit < 1:
        raise UserInputError(f"limit must be at least 1, got {limit}")
    spec = str(source)
    builtin = builtin_name(spec)
    if builtin is not None and (problem_field or answer_field or id_field):
        raise UserInputError(f"{spec}: the built-in set has fixed fields; drop --problem/answer/id-field")
    if builtin == "arithmetic":
        return arithmetic_problems()[:limit]
    if builtin == "champ":
        return champ_problems()[:limit]

    records, name = problem_records(spec)
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for where, record in records:
        problem = record_to_problem(record, where, name, problem_field, answer_field, id_field)
        if problem.problem_id in seen:
            raise UserInputError(
                f"{where}: duplicate problem id '{problem.problem_id}' (also at {seen[problem.problem_id]}); "
                "name a unique field with --id-field"
            )
        seen[problem.problem_id] = where
        problems.append(problem)
        if limit is not None and len(problems) >= limit:
            break
    if not problems:
        raise UserInputError(f"{spec}: no problems found")
    return problems


def arithmetic_problems(n: int = 200, seed: int = 0) -> list[Problem]:
    """Seeded one-step sums and differences: easy enough that a 135M model solves some on a CPU, so the
    ``cpu`` RL preset sees non-zero rewards (competition problems like CHAMP give it none)."""
    import random

    rng = random.Random(seed)
    problems = []
    for i in range(n):
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        a, b, op = (a, b, "+") if i % 2 == 0 else (max(a, b), min(a, b), "-")
        answer = a + b if op == "+" else a - b
        problems.append(Problem(f"arithmetic:{i}", "arithmetic", f"What is {a} {op} {b}?", str(answer)))
    return problems
