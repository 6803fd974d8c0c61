"""Rollouts -> candidate pairs: two responses to one problem that reach equivalent final answers (or, with a checker,
any two whose keys the checker reads: the same key or not, both labels balanced).

Equivalence of final answers is math-verify's (``1/2`` and ``0.5`` pair up; string equality would miss
them). Identical response texts are dropped before pairing (a pair of copies teaches the classifier
nothing). The stage is a deterministic function of its inputs and options, written atomically, so a
rerun simply rebuilds the same file.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import random
import re
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl

from darling.core.checkers import get_checker
from darling.core.errors import UserInputError
from darling.core.math_grading import answers_equivalent
from darling.core.progress import progress_bar
from darling.core.readers import one_line
from darling.core.schemas import PAIR_COLUMNS, polars_schema, stable_id
from darling.core.shards import atomic_write_bytes, atomic_write_parquet
from darling.datagen.config import PairConfig
from darling.datagen.rollouts import read_rollouts

PAIRS_FILE = "pairs.parquet"
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class PairSummary:
    output: Path
    pairs: int
    problems_with_pairs: int
    responses_used: int
    duplicates_dropped: int
    per_problem: dict[str, int] = field(default_factory=dict)
    per_model_pair: dict[str, int] = field(default_factory=dict)
    checker: str | None = None  # --checker: pairs by its keys, and what it saw
    by_label: dict[str, int] = field(default_factory=dict)  # "1" same key, "0" different keys (after balancing)
    without_key: int = 0  # usable answers the checker read no key on (never paired)
    several_keys: int = 0  # of those, with --one-key-only: answers naming several keys (never paired)
    dropped_to_balance: int = 0  # pairs of the larger label left out so both labels are equally many


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def answer_classes(answers: list[str]) -> list[int]:
    """Class index per answer, classes = math-verify-equivalent answers (compared to each class's first).

    Identical strings are grouped first, so math-verify runs once per distinct answer and class.
    """

    representatives: list[str] = []
    class_of: dict[str, int] = {}
    for answer in dict.fromkeys(a.strip() for a in answers):
        for k, rep in enumerate(representatives):
            if answers_equivalent(rep, answer):
                class_of[answer] = k
                break
        else:
            representatives.append(answer)
            class_of[answer] = len(representatives) - 1
    return [class_of[a.strip()] for a in answers]


def usable_responses(frame: pl.DataFrame, correct_only: bool) -> pl.DataFrame:
    keep = (pl.col("status") == "ok") & pl.col("response").is_not_null() & pl.col("extracted_answer").is_not_null()
    if correct_only:
        keep &= pl.col("correct").fill_null(False)
    return frame.filter(keep).sort(["problem_id", "model", "sample_index"])


def drop_duplicate_texts(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    seen, kept = set(), []
    for row in rows:
        text = _normalise(row["response"])
        if text not in seen:
            seen.add(text)
            kept.append(row)
    return kept, len(rows) - len(kept)


def problem_pairs(rows: list[dict[str, Any]], classes: list[int], config: PairConfig) -> list[dict[str, Any]]:
    """All same-answer pairs of one problem (after filters), sampled down to ``max_pairs_per_problem``."""
    candidates = []
    for (i, a), (j, b) in itertools.combinations(enumerate(rows), 2):
        if classes[i] != classes[j] or (config.cross_model_only and a["model"] == b["model"]):
            continue
        first = min((a, b), key=lambda r: r["rollout_id"])  # the answer and correctness of the pair's first rollout
        candidates.append(pair_record(a, b, first["extracted_answer"], first["correct"]))
    candidates.sort(key=lambda p: p["pair_id"])
    limit = config.max_pairs_per_problem or None  # 0 or None: all
    if limit is not None and len(candidates) > limit:
        rng = random.Random(f"{config.seed}:{rows[0]['problem_id']}")  # per problem: stable when others change
        candidates = sorted(rng.sample(candidates, limit), key=lambda p: p["pair_id"])
    return candidates


@contextmanager
def _pool(workers: int):
    """A process pool for math-verify (its timeouts need each worker's main thread); in-process for 1."""
    if workers <= 1:
        yield SimpleNamespace(map=lambda fn, items, chunksize=1: map(fn, items))
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


def pair_record(a: dict[str, Any], b: dict[str, Any], answer: str | None, correct: bool | None) -> dict[str, Any]:
    """One pair's row (``PAIR_COLUMNS``), its two rollouts in one canonical order."""
    a, b = sorted((a, b), key=lambda r: r["rollout_id"])
    return {
        "pair_id": stable_id(a["rollout_id"], b["rollout_id"]),
        "problem_id": a["problem_id"],
        "prompt": a["problem"],
        "generation_0": a["response"],
        "generation_1": b["response"],
        "rollout_id_0": a["rollout_id"],
        "rollout_id_1": b["rollout_id"],
        "model_0": a["model"],
        "model_1": b["model"],
        "answer": answer,
        "correct": correct,
    }


def key_pairs(rows: list[dict[str, Any]], keys: list[str | None], config: PairConfig) -> dict[int, list[dict]]:
    """One prompt's pairs by a checker's keys, per label (1: the same key, its ``answer``; 0: different keys, no
    shared answer), each sampled down to ``max_pairs_per_problem``; answers without a key are never paired."""
    by_label: dict[int, list[dict]] = {0: [], 1: []}
    for (i, a), (j, b) in itertools.combinations(enumerate(rows), 2):
        if keys[i] is None or keys[j] is None or (config.cross_model_only and a["model"] == b["model"]):
            continue
        same = keys[i] == keys[j]
        by_label[int(same)].append(pair_record(a, b, keys[i] if same else None, None))
    limit = config.max_pairs_per_problem or None
    for label, candidates in by_label.items():
        candidates.sort(key=lambda p: p["pair_id"])
        if limit is not None and len(candidates) > limit:
            rng = random.Random(f"{config.seed}:{rows[0]['problem_id']}:{label}")
            by_label[label] = sorted(rng.sample(candidates, limit), key=lambda p: p["pair_id"])
    return by_label


def balanced(by_label: dict[int, list[dict]], seed: int) -> tuple[list[dict], int]:
    """Both labels equally many: the larger sampled down (seeded) to the smaller's count; (pairs, how many left out)."""
    keep = min(len(pairs) for pairs in by_label.values())
    out: list[dict] = []
    for label, pairs in by_label.items():
        out += pairs if len(pairs) == keep else random.Random(f"{seed}:balance:{label}").sample(pairs, keep)
    return sorted(out, key=lambda p: (p["problem_id"], p["pair_id"])), sum(map(len, by_label.values())) - len(out)


def build_key_pairs(config: PairConfig, progress: bool = True) -> PairSummary:
    """``--checker``: every prompt's answers paired by the checker's keys (``one_key_only``: of the answers naming
    exactly one), both labels balanced."""
    checker = get_checker(str(config.checker))
    rows = read_rollouts(config.rollouts)
    frame = rows.filter((pl.col("status") == "ok") & pl.col("response").is_not_null())
    if frame.is_empty():
        raise UserInputError(f"{config.rollouts}: no usable responses (status ok)")
    frame = frame.sort(["problem_id", "model", "sample_index"])
    prompts = frame.unique("problem_id", maintain_order=True)["problem"].to_list()
    checker.require(prompts, f"{config.rollouts}")
    groups = [drop_duplicate_texts(g.to_dicts()) for g in frame.partition_by("problem_id", maintain_order=True)]
    by_label: dict[int, list[dict]] = {0: [], 1: []}
    without_key = several = 0
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task("pairs", total=len(groups))
        for group, _ in groups:
            named = [checker.named(r["problem"], r["response"]) for r in group]
            if config.one_key_only:  # an answer naming several is read by no key: never paired
                several += sum(len(n) > 1 for n in named)
                named = [n if len(n) == 1 else [] for n in named]
            keys = [n[0] if n else None for n in named]
            without_key += keys.count(None)
            for label, pairs in key_pairs(group, keys, config).items():
                by_label[label] += pairs
            bar.advance(task)
    pairs, dropped = balanced(by_label, config.seed)
    out = pl.DataFrame(pairs, schema=polars_schema(PAIR_COLUMNS))
    labels = {str(label): sum(1 for p in pairs if (p["answer"] is not None) == bool(label)) for label in (1, 0)}
    summary = PairSummary(
        config.output,
        len(out),
        out["problem_id"].n_unique(),
        sum(len(g) for g, _ in groups),
        sum(dropped for _, dropped in groups),
        dict(Counter(out["problem_id"].to_list())),
        dict(Counter(" + ".join(sorted(m)) for m in zip(out["model_0"], out["model_1"], strict=True))),
        checker.name,
        labels,
        without_key,
        several,
        dropped,
    )
    return write_pairs(config, out, summary)


def write_pairs(config: PairConfig, out: pl.DataFrame, summary: PairSummary) -> PairSummary:
    atomic_write_parquet(out, Path(config.output) / PAIRS_FILE)
    report = {**asdict(summary), "output": str(config.output), "config": {**asdict(config)}}
    atomic_write_bytes(Path(config.output) / SUMMARY_FILE, json.dumps(report, indent=2, default=str).encode())
    return summary


def build_pairs(config: PairConfig, progress: bool = True) -> PairSummary:
    if config.checker is not None:
        return build_key_pairs(config, progress)

    frame = usable_responses(read_rollouts(config.rollouts), config.correct_only)
    if frame.is_empty():
        raise UserInputError(f"{config.rollouts}: no usable responses (status ok, with a final answer)")
    groups = [drop_duplicate_texts(g.to_dicts()) for g in frame.partition_by("problem_id", maintain_order=True)]
    duplicates = sum(dropped for _, dropped in groups)
    used = sum(len(rows) for rows, _ in groups)
    answer_lists = [[r["extracted_answer"] for r in rows] for rows, _ in groups]
    workers = config.workers or min(os.cpu_count() or 1, 8)
    pairs: list[dict[str, Any]] = []
    with progress_bar(enabled=progress) as bar, _pool(workers) as pool:
        task = bar.add_task("pairs", total=len(groups))
        for (rows, _), classes in zip(groups, pool.map(answer_classes, answer_lists, chunksize=4), strict=True):
            pairs.extend(problem_pairs(rows, classes, config))
            bar.advance(task)
    out = pl.DataFrame(pairs, schema=polars_schema(PAIR_COLUMNS))
    per_problem = Counter(out["problem_id"].to_list())
    per_model_pair = Counter(" + ".join(sorted(m)) for m in zip(out["model_0"], out["model_1"], strict=True))
    summary = PairSummary(
        config.output, len(out), len(per_problem), used, duplicates, dict(per_problem), dict(per_model_pair)
    )
    return write_pairs(config, out, summary)


def read_pairs(path: Path) -> pl.DataFrame:
    """A pairs file, or a folder holding ``pairs.parquet``, checked for the pair columns."""
    path = Path(path)
    file = path / PAIRS_FILE if path.is_dir() else path
    if not file.exists():
        raise UserInputError(f"{file}: no such pairs file (make it with `darling datagen pairs`)")
    try:
        frame = pl.read_parquet(file)
    except Exception as exc:
        raise UserInputError(f"{file}: cannot read Parquet ({exc.__class__.__name__}: {one_line(exc)})") from None
    missing = [c for c in PAIR_COLUMNS if c not in frame.columns]
    if missing:
        raise UserInputError(f"{file}: missing field '{missing[0]}' (expected the columns of `darling datagen pairs`)")
    texts = ("pair_id", "prompt", "generation_0", "generation_1")
    for i, row in enumerate(frame.select(texts).iter_rows()):
        for name, value in zip(texts, row, strict=True):
            if not isinstance(value, str):
                shown = "null" if value is None else type(value).__name__
                raise UserInputError(f"{file}: row {i}: field '{name}' must be a string, got {shown}")
    try:
        return frame.select(list(PAIR_COLUMNS)).cast(polars_schema(PAIR_COLUMNS))
    except Exception as exc:  # a column of the wrong type (e.g. answer as a list): polars names it, we name the file
        raise UserInputError(f"{file}: columns do not match `darling datagen pairs` ({one_line(exc)})") from None
