"""NoveltyBench's own files, in and out of ``eval novelty``, so a darling classifier partitions and scores the
generations NoveltyBench made and NoveltyBench's summariser reads what darling wrote.

In: an eval folder's ``generations.jsonl`` (``id``, ``prompt``, ``generations``: the k answers; ``model`` and any other
field kept), read into darling's generation store (no generation runs). Out, beside darling's own outputs, with
NoveltyBench's field names and conventions (its ``src/partition.py``, ``score.py`` and ``summarize.py`` at 5b22b53):
``partitions.jsonl`` (each instance plus ``partition``: class ids numbered by first appearance, and ``distinct``:
``max(partition)``, one less than the class count, as NoveltyBench's partition.py writes it), ``scores.jsonl`` (plus
``generation_scores``: each answer's quality, 0 for a repeat of an earlier class; ``partition_scores``: one per class;
``utility``) and ``summary.json`` (``mean_distinct``: classes per prompt, ``len(partition_scores)`` as its
summariser counts them; ``mean_utility``), with a ``darling`` entry that says what NoveltyBench's fields cannot: the
``distinct`` convention, where quality came from (every answer 1 without a reward model, so utility then measures
diversity alone) and which utility (NoveltyBench's patience-weighted mean, or the DARLING fork's sum / k under the
same name). ``read_partitions`` reads either convention (darling's files before this wrote the class count), saying
which it found.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from darling.core.errors import UserInputError
from darling.core.readers import iter_jsonl
from darling.core.shards import ShardStore, atomic_write_bytes
from darling.evals.config import NoveltyConfig
from darling.evals.novelty_store import GENERATION_COLUMNS, GENERATION_KEY

GENERATIONS, PARTITIONS, SCORES, SUMMARY = "generations.jsonl", "partitions.jsonl", "scores.jsonl", "summary.json"
NOVELTYBENCH_COMMIT = "5b22b53"  # the NoveltyBench code whose conventions these files follow
# read_partitions' names for the two ``distinct`` conventions
MAX_PARTITION, CLASS_COUNT = "max(partition)", "class count"


def read_generations(folder: Path) -> list[dict[str, Any]]:
    """The instances of ``folder/generations.jsonl``, checked: each an ``id`` (unique), a ``prompt`` and the same
    number of ``generations`` (strings) as the first; a bad one is one line naming the file, line and field."""
    path = Path(folder) / GENERATIONS
    instances: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where, record in iter_jsonl(path):
        if not isinstance(record, dict):
            raise UserInputError(f"{where}: expected an object with id, prompt and generations")
        for field, kind in (("id", str), ("prompt", str), ("generations", list)):
            if not isinstance(record.get(field), kind):
                raise UserInputError(f"{where}: field '{field}' must be a {kind.__name__}, got {record.get(field)!r}")
        if not all(isinstance(g, str) for g in record["generations"]) or not record["generations"]:
            raise UserInputError(f"{where}: field 'generations' must be a non-empty list of strings")
        if record["id"] in seen:
            raise UserInputError(f"{where}: field 'id' {record['id']!r} appears twice")
        if instances and len(record["generations"]) != len(instances[0]["generations"]):
            k = len(instances[0]["generations"])
            raise UserInputError(f"{where}: field 'generations' has {len(record['generations'])} answers, not {k}")
        seen.add(record["id"])
        instances.append(record)
    if not instances:
        raise UserInputError(f"{path}: no instances")
    return instances


def generation_rows(instances: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """darling's generation rows (``GENERATION_COLUMNS``) of NoveltyBench's instances."""
    return [
        {
            "prompt_id": inst["id"],
            "prompt": inst["prompt"],
            "category": None,
            "sample_index": i,
            "response": text,
            "finish_reason": None,
            "num_tokens": None,
            "status": "ok",
            "error": None,
        }
        for inst in instances
        for i, text in enumerate(inst["generations"])
    ]


def generation_identity(folder: Path, instances: list[dict[str, Any]]) -> dict[str, Any]:
    """The imported generations' identity (their store's run.json): the file, by path and content, and k."""
    path = (Path(folder) / GENERATIONS).resolve()
    return {
        "noveltybench": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "k": len(instances[0]["generations"]),
        "model": instances[0].get("model"),
    }


def import_noveltybench(config: NoveltyConfig) -> list[dict[str, Any]]:
    """Read ``--noveltybench``'s generations into OUTPUT's generation store (once: a rerun with the same file reuses
    it; another file is refused by the store's identity) and return its instances."""
    folder = Path(str(config.noveltybench))
    instances = read_generations(folder)
    store = ShardStore(Path(config.output) / "generations", GENERATION_COLUMNS, GENERATION_KEY)
    store.check_settings(generation_identity(folder, instances), what="the NoveltyBench generations")
    if not store.shards():
        store.append(generation_rows(instances))
    return instances


def noveltybench_scores(
    instances: list[dict[str, Any]], scored: pl.DataFrame, per_prompt: pl.DataFrame
) -> list[dict[str, Any]]:
    """Per instance (its order) its classes, qualities and utility from eval novelty's tables."""
    by_id = {pid: rows for (pid,), rows in scored.sort(GENERATION_KEY).group_by("prompt_id", maintain_order=True)}
    utility = dict(per_prompt.select("prompt_id", "utility").iter_rows())
    return [
        {
            "classes": by_id[inst["id"]]["class_id"].to_list(),
            "quality": by_id[inst["id"]]["quality"].to_list(),
            "utility": utility[inst["id"]],
        }
        for inst in instances
    ]


def first_appearance(classes: list[int]) -> list[int]:
    """Class ids renumbered 0, 1, ... in order of first appearance (NoveltyBench's numbering)."""
    order: dict[int, int] = {}
    return [order.setdefault(c, len(order)) for c in classes]


def write_noveltybench_files(
    output: Path, instances: list[dict[str, Any]], scored: list[dict[str, Any]], metrics: dict[str, Any]
) -> None:
    """partitions.jsonl, scores.jsonl and summary.json in ``output``. ``scored``: per instance (same order) its
    ``classes``, ``quality`` (per answer) and ``utility`` as eval novelty computed them; ``metrics``: eval novelty's
    metrics.json, whose quality and utility settings summary.json repeats under ``darling``."""
    partitions, scores = [], []
    for inst, s in zip(instances, scored, strict=True):
        partition = first_appearance(list(s["classes"]))
        partitions.append({**inst, "partition": partition, "distinct": max(partition)})
        credited: list[int] = []
        partition_scores: list[int] = []
        for q, c in zip(s["quality"], partition, strict=True):
            first = c == len(partition_scores)
            credited.append(q if first else 0)
            partition_scores += [q] if first else []
        scores.append(
            {
                **partitions[-1],
                "generation_scores": credited,
                "partition_scores": partition_scores,
                "utility": s["utility"],
            }
        )
    summary = {
        "mean_distinct": sum(len(s["partition_scores"]) for s in scores) / len(scores),
        "mean_utility": sum(s["utility"] for s in scores) / len(scores),
        "darling": provenance(metrics),
    }
    for name, rows in ((PARTITIONS, partitions), (SCORES, scores)):
        atomic_write_bytes(output / name, "".join(json.dumps(r) + "\n" for r in rows).encode())
    atomic_write_bytes(output / SUMMARY, (json.dumps(summary, indent=2) + "\n").encode())


def provenance(metrics: dict[str, Any]) -> dict[str, Any]:
    """What summary.json's figures are, in words NoveltyBench's fields leave out."""
    utility = metrics["utility"]
    return {
        "conventions": f"NoveltyBench {NOVELTYBENCH_COMMIT}",
        "distinct": f"{MAX_PARTITION} in partitions.jsonl and scores.jsonl, one less than the classes (NoveltyBench's "
        "partition.py); mean_distinct counts classes (len(partition_scores), its summarize.py)",
        "quality": metrics["quality"],
        "utility": utility["method"],
        "utility_definition": utility["definition"],
        "patience": utility["patience"],
        "partition": metrics["partition"]["method"],
    }


def read_partitions(path: Path) -> tuple[dict[str, list[int]], str]:
    """``id -> partition`` of a NoveltyBench ``partitions.jsonl`` (NoveltyBench's or darling's), and which
    ``distinct`` convention it holds: "max(partition)" (NoveltyBench's, and darling's since it follows it), or
    "class count" (darling's files before that)."""
    found: dict[str, list[int]] = {}
    conventions: set[str] = set()
    for where, record in iter_jsonl(Path(path)):
        partition = record.get("partition") if isinstance(record, dict) else None
        if not isinstance(partition, list) or not all(isinstance(c, int) for c in partition) or not partition:
            raise UserInputError(f"{where}: field 'partition' must be a non-empty list of class ids")
        if not isinstance(record.get("id"), str):
            raise UserInputError(f"{where}: field 'id' must be a string")
        distinct = record.get("distinct")
        if distinct == max(partition):
            conventions.add(MAX_PARTITION)
        elif distinct == len(set(partition)):
            conventions.add(CLASS_COUNT)
        found[record["id"]] = partition
    convention = " and ".join(sorted(conventions)) or "none given"
    return found, convention
