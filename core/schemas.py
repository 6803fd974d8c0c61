"""Record schemas shared by every stage, defined once.

A *labelled pair* is what ``darling datagen label`` writes and what the classifier trains on; it is the
NoveltyBench layout (``prompt, generation_0, generation_1, similar``) with ``similar == 1`` meaning the two
responses are equivalent. Extra columns (provenance) are allowed and carried along untouched.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

# The settings record a stage writes beside its shards (``darling.core.shards``), so a rerun with other settings is
# refused; defined here, import-light, because the command line also looks for it when it cleans a refused run up.
RUN_FILE = "run.json"

PAIR_TEXT_FIELDS = ("prompt", "generation_0", "generation_1")
PAIR_LABEL_FIELD = "similar"
PAIR_FIELDS = (*PAIR_TEXT_FIELDS, PAIR_LABEL_FIELD)


@dataclass(frozen=True)
class LabelledPair:
    prompt: str
    generation_0: str
    generation_1: str
    similar: int  # 1 = equivalent, 0 = different
    pair_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def texts(self) -> tuple[str, str]:
        return self.generation_0, self.generation_1


def stable_pair_id(prompt: str, generation_0: str, generation_1: str) -> str:
    """Content hash used when a source has no id column, so splits and resumes stay stable."""
    h = hashlib.sha256()
    for part in (prompt, generation_0, generation_1):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


# --- datagen records -------------------------------------------------------------------------------------
# Column name -> polars dtype name. One definition used by the writers (datagen), the readers (pairs, label,
# evals) and the tests. Stable ids: a rollout is keyed by (problem_id, model, sample_index); a pair by the
# content-independent hash of its two rollout ids; a judged pair by its pair_id.

ROLLOUT_KEY = ("problem_id", "model", "sample_index")
ROLLOUT_COLUMNS: dict[str, str] = {
    "rollout_id": "String",  # stable_id(problem_id, model, sample_index)
    "problem_id": "String",
    "source": "String",  # dataset the problem came from (file stem, hub name, "champ")
    "model": "String",
    "sample_index": "Int64",
    "prompt_setting": "String",  # named prompt / system-prompt setting (CHAMP: its 18 settings)
    "problem": "String",
    "reference_answer": "String",  # null when the source has no answer
    "response": "String",  # null when status == "failed"
    "finish_reason": "String",  # stop | length | imported | ...
    "num_tokens": "Int64",  # completion tokens; null when the source does not say
    "extracted_answer": "String",  # final answer found in the response (last \boxed{}, else math-verify)
    "correct": "Boolean",  # math-verify(reference, response); null without a reference
    "engine": "String",  # hf | openai | vllm | import
    "sampling": "String",  # JSON of temperature, top_p, max_tokens, seed, n
    "status": "String",  # ok | failed  (failed rows are retried by a rerun)
    "error": "String",
}

PAIR_COLUMNS: dict[str, str] = {
    "pair_id": "String",
    "problem_id": "String",
    "prompt": "String",  # the problem text: the classifier's "prompt" field
    "generation_0": "String",
    "generation_1": "String",
    "rollout_id_0": "String",
    "rollout_id_1": "String",
    "model_0": "String",
    "model_1": "String",
    "answer": "String",  # the (equivalent) final answer both responses reach
    "correct": "Boolean",  # whether that answer matches the reference (null without one)
}

# A judged pair is a PAIR row plus these; ``similar`` is set only when status == "labelled" (the others: abstain,
# disagree, failed).
JUDGE_COLUMNS: dict[str, str] = {
    **PAIR_COLUMNS,
    "similar": "Int64",  # 1 equivalent (same strategy), 0 different; null unless labelled
    "status": "String",  # labelled | abstain | disagree | failed
    "verdicts": "List(String)",  # parsed per call: yes | no | abstain | failed  (order 0 calls first)
    "raw_outputs": "List(String)",  # the judge's full outputs, same order
    "rationale": "String",  # the first call's text before its verdict
    "judge_model": "String",
    "judge_engine": "String",
    "prompt_sha256": "String",
    "error": "String",
}


def stable_id(*parts: object) -> str:
    """Short content hash of the parts; the same parts give the same id on every machine and rerun."""
    h = hashlib.sha256()
    for part in parts:
        h.update(str(part).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def polars_schema(columns: dict[str, str]):
    """The polars schema of a column spec above (polars imported lazily: ``darling --help`` stays instant)."""
    import polars as pl

    def dtype(name: str):
        if name.startswith("List(") and name.endswith(")"):
            return pl.List(dtype(name[5:-1]))
        return getattr(pl, name)

    return {column: dtype(kind) for column, kind in columns.items()}


@dataclass(frozen=True)
class Problem:
    problem_id: str  # "<source>:<id>", stable across runs: rollouts are keyed by it
    source: str
    problem: str
    reference_answer: str | None  # None when the source has no usable answer
