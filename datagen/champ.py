"""The CHAMP competition-math dataset (package ``champ-dataset``): its 270 problems, and the 19,440 model
solutions it ships (4 models x 18 prompt settings x 270 problems) imported as rollouts.

Each CHAMP conversation ends with the model's full solution, a User turn asking to "summarize the answer
above in one sentence", and the model's one-sentence summary. The solution is the rollout's response; the
final answer is taken from the summary first, because that is where the model states it.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.local_models import package_dir
from darling.core.math_grading import extract_final_answer, is_correct, reference_from_text
from darling.core.schemas import ROLLOUT_COLUMNS, Problem, stable_id

SOURCE = "champ"
ENGINE = "import"
SUMMARY_REQUEST = "summarize the answer above"

# CHAMP's reference answers are phrases ("100 (i.e., all values)", "C(10, 5), or equivalently 252"); these
# reduce the common shapes to bare answers math-verify can read, for grading only.
_ANSWER_ALTERNATIVES = re.compile(r", or (?:equivalently|an equivalent form such as|approximately) ")
_ANSWER_PREFIX = re.compile(
    r"^(?:The limit exists and is equal to|The only possible value for the limit is|At least|At most|Exactly)\s+"
)
_ANSWER_SUFFIX = re.compile(r"\s+(?:is the only possible value|\((?:i\.e\.|none |no ).*\))$")
_COUNT_WITH_NOUN = re.compile(r"^(-?\d+) [A-Za-z][A-Za-z -]*$")  # "98 values" -> "98"
# Summaries are one English sentence: the answer usually follows the last "is"/"are", or opens it in
# "There are N ...". math-verify alone takes the sentence's last number, often a parameter of the problem.
_COPULA_TAIL = re.compile(r".*\b(?:is|are|equals|be)\s+(.+)$", re.DOTALL)
_THERE_ARE = re.compile(r"^There (?:are|is|will be|exists?) (\S+)")
# The tail up to the end of its clause ("sqrt(3), and this occurs when a = b = c" -> "sqrt(3)") is the answer
# when it is a bare plain-text expression, which math-verify's prose extraction misreads ("1/sqrt(3)" -> 1).
_CLAUSE_END = re.compile(r",\s|[.;](?:\s|$)|\s(?:when|where|and|for|if|because|since|as|which|with|regardless)\b")
_MATH_WORDS = {"sqrt", "floor", "ceil", "binom", "frac", "sin", "cos", "tan", "log", "exp", "mod", "abc", "pi"}


def reference_forms(answer: str) -> list[str]:
    """The bare answers a CHAMP reference phrase stands for (any one of them counts as correct)."""
    forms = []
    for part in _ANSWER_ALTERNATIVES.split(answer.strip()):
        part = _ANSWER_SUFFIX.sub("", _ANSWER_PREFIX.sub("", part.strip()))
        forms.append(_COUNT_WITH_NOUN.sub(r"\1", part))
    forms = [f for f in forms if f]
    # math-verify reads CHAMP's "sum_(i=1)^n i^2" as 1, which would pass any answer of 1: use the closed form.
    return [f for f in forms if "sum_" not in f] or forms


def _bare_expression(tail: str) -> str | None:
    head = _CLAUSE_END.split(tail.strip(), maxsplit=1)[0].strip()
    if not head or "$" in head or "\\" in head or not re.search(r"\d|^[A-Za-z]", head):
        return None  # LaTeX is math-verify's strength; leave it to extract_final_answer
    if any(word.lower() not in _MATH_WORDS for word in re.findall(r"[A-Za-z]{3,}", head)):
        return None  # English words: not a bare expression
    if any(head.count(a) != head.count(b) for a, b in ("()", "[]", "{}")):
        return None  # cut inside a tuple "(x, y)"
    return head


def summary_answer(summary: str, solution: str) -> str | None:
    """The final answer of a CHAMP conversation: from its one-sentence summary, else from the solution."""
    summary = summary.strip()
    if "\\boxed" in summary or "\\fbox" in summary:
        return extract_final_answer(summary)
    there_are, copula = _THERE_ARE.match(summary), _COPULA_TAIL.match(summary)
    if there_are and (found := extract_final_answer(there_are.group(1))):
        return found
    if copula and (found := _bare_expression(copula.group(1)) or extract_final_answer(copula.group(1))):
        return found
    return extract_final_answer(summary) or extract_final_answer(solution)


def grade(reference: str | None, summary: str, solution: str, extracted: str | None) -> bool | None:
    """Correctness against any form of the reference; Yes/No questions by the summary's first word."""
    if reference is None:
        return None
    forms = reference_forms(reference)
    if forms and forms[0] in ("Yes", "No"):
        first = re.split(r"\W+", summary.strip(), maxsplit=1)[0]
        return first.lower() == forms[0].lower()
    return any(is_correct(form, solution, extracted) for form in forms)


def champ_path() -> Path:
    """v0.json inside the installed package, found without importing the package (nothing in it is needed)."""

    root = package_dir("champ_dataset")
    if root is None:
        raise UserInputError("the CHAMP dataset needs its package: pip install champ-dataset")
    return root / "dataset_files" / "v0.json"


@lru_cache(maxsize=1)
def _champ_json() -> dict[str, Any]:
    with champ_path().open(encoding="utf-8") as fh:
        return json.load(fh)["problems"]


def _problem(identifier: str, entry: dict[str, Any]) -> Problem:
    # CHAMP answers are short phrases ("C(10, 5), or equivalently 252"): no length cut-off.
    reference = reference_from_text(entry.get("_answer") or "", max_chars=None)
    return Problem(
        problem_id=f"{SOURCE}:{identifier}", source=SOURCE, problem=entry["_text"], reference_answer=reference
    )


def champ_problems() -> list[Problem]:
    """The 270 CHAMP problems in the dataset's order, ids ``champ:<identifier>``."""
    return [_problem(identifier, entry) for identifier, entry in _champ_json().items()]


def _setting_indices(problems: dict[str, Any]) -> dict[str, dict[str, int]]:
    """model -> setting -> sample_index: the model's settings in sorted order, so indices never depend on
    the order of the JSON file."""
    settings: dict[str, set[str]] = {}
    for entry in problems.values():
        for name in entry["conversations"]:
            model, _, setting = name.partition("|")
            settings.setdefault(model, set()).add(setting)
    return {model: {s: i for i, s in enumerate(sorted(names))} for model, names in settings.items()}


def _solution_and_summary(messages: list[dict[str, Any]], model: str) -> tuple[dict, dict] | str:
    """The solution and summary messages of a conversation, or the reason it cannot be imported."""
    if len(messages) < 3:
        return "malformed"
    solution, request, summary = messages[-3], messages[-2], messages[-1]
    model_role = f"Model.{model}"
    if (
        solution["role"] != model_role
        or summary["role"] != model_role
        or request["role"] != "User"
        or SUMMARY_REQUEST not in (request.get("text") or "")
    ):
        return "malformed"
    for message in (solution, summary):
        if message.get("error") is not None:
            # LENGTH_CURRENT: the solution hit the length limit; LENGTH_PREVIOUS: so no summary was made.
            return str(message["error"])
        if not (message.get("text") or "").strip():
            return "empty"
    return solution, summary


def champ_identifiers(limit: int | None = None) -> list[str]:
    """CHAMP's problem identifiers in the dataset's own order (``limit``: the first N)."""
    return list(_champ_json())[:limit]


def rollout_row(problem: Any, model: str, setting: str, sample_index: int, found: tuple) -> dict[str, Any]:
    """One CHAMP solution (and its summary) as a row of ROLLOUT_COLUMNS, its answer graded with math-verify."""
    solution, summary = found[0]["text"], found[1]["text"]
    extracted = summary_answer(summary, solution)
    row = {
        "rollout_id": stable_id(problem.problem_id, model, sample_index),
        "problem_id": problem.problem_id,
        "source": SOURCE,
        "model": model,
        "sample_index": sample_index,
        "prompt_setting": setting,
        "problem": problem.problem,
        "reference_answer": problem.reference_answer,
        "response": solution,
        "finish_reason": "imported",
        "num_tokens": None,
        "extracted_answer": extracted,
        "correct": grade(problem.reference_answer, summary, solution, extracted),
        "engine": ENGINE,
        "sampling": "{}",
        "status": "ok",
        "error": None,
    }
    return {column: row[column] for column in ROLLOUT_COLUMNS}


def import_champ_rollouts(
    progress: bool = False, limit: int | None = None, only: Collection[str] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """CHAMP's model solutions as rows of ROLLOUT_COLUMNS, graded with math-verify.

    Conversations whose solution or summary carries an error (the model hit its length limit) or is empty
    are skipped (261 of 19,440). Returns ``(rows, stats)``; stats has ``total``, ``imported``, ``skipped``,
    ``skipped_by_reason`` and ``seconds``. Grading takes 2.5-5 minutes on one core, about a third of it in
    math-verify's 5-second timeouts on answers like ``(x+y+z)^{1999}``; ``progress`` shows a bar.
    ``limit``: the first N problems; ``only``: just these problem identifiers (sample indices stay the same)."""
    start = time.perf_counter()
    data = _champ_json()
    indices = _setting_indices(data)
    wanted = set(champ_identifiers(limit)) if only is None else set(only) & set(champ_identifiers(limit))
    conversations = [
        (identifier, entry, name, conversation)
        for identifier, entry in data.items()
        if identifier in wanted
        for name, conversation in sorted(entry["conversations"].items())
    ]
    iterator: Any = conversations
    if progress:
        from rich.progress import track

        iterator = track(conversations, description="Importing CHAMP rollouts")

    rows: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    problems = {identifier: _problem(identifier, entry) for identifier, entry in data.items()}
    for identifier, _, name, conversation in iterator:
        problem = problems[identifier]
        model, _, setting = name.partition("|")
        found = _solution_and_summary(conversation["messages"], model)
        if isinstance(found, str):
            skipped[found] += 1
            continue
        rows.append(rollout_row(problem, model, setting, indices[model][setting], found))
    stats = {
        "total": len(conversations),
        "imported": len(rows),
        "skipped": sum(skipped.values()),
        "skipped_by_reason": dict(sorted(skipped.items())),
        "seconds": round(time.perf_counter() - start, 1),
    }
    return rows, stats
