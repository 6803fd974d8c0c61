"""``darling datagen training-pairs``: the classifier's training pairs, from the judge's labels, from NoveltyBench's
human-labelled pairs, or from the judge's topped up with human pairs when it gave too few of a class.

A classifier needs both labels, and a stratified validation split of both: a small judge that calls every pair
"same strategy" leaves one class empty. ``source=judge`` then mixes in ``human_pairs`` of NoveltyBench's built-in
pairs and says so; ``source=human`` trains on them by design. Writes ``OUTPUT/pairs.jsonl`` (the fields
``train-classifier --data`` reads, plus ``source``) and ``OUTPUT/summary.json`` (what went in, and why).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from darling.classifier.config import TrainingPairsConfig
from darling.classifier.labelled_pairs import BUILTIN_PAIRS, load_pairs
from darling.core.errors import UserInputError
from darling.core.shards import atomic_write_bytes

PAIRS_FILE, SUMMARY_FILE = "pairs.jsonl", "summary.json"
MIN_VALIDATION_PER_CLASS = 7  # the stratified 15% validation split needs 7 of each class


def judge_rows(labels: Path) -> list[dict[str, Any]]:
    """The judge's agreed labels (none when the judge had no pairs, or agreed on none)."""
    import pyarrow.parquet as pq

    path = labels / "labelled.parquet" if labels.is_dir() else labels
    if path.suffix == ".parquet" and path.is_file() and pq.ParquetFile(path).metadata.num_rows == 0:
        return []
    return [_row(p, "judge") for p in load_pairs(path).pairs]


def human_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """A seeded sample of ``n`` of NoveltyBench's built-in human-labelled pairs."""

    builtin = load_pairs("noveltybench").pairs
    return [_row(p, "noveltybench") for p in random.Random(seed).sample(builtin, min(n, len(builtin)))]


def _row(pair, source: str) -> dict[str, Any]:
    pair_id = f"noveltybench:{pair.pair_id}" if source == "noveltybench" else pair.pair_id
    return {
        "id": pair_id,
        "prompt": pair.prompt,
        "generation_0": pair.generation_0,
        "generation_1": pair.generation_1,
        "similar": pair.similar,
        "source": source,
    }


def build_training_pairs(config: TrainingPairsConfig) -> dict[str, Any]:
    """Write ``pairs.jsonl`` and ``summary.json``; returns the summary."""

    rows = judge_rows(Path(config.labels)) if config.labels is not None else []
    balance = {label: sum(r["similar"] == label for r in rows) for label in (0, 1)}
    by_design = config.source == "human"
    needed = max(config.min_per_class, MIN_VALIDATION_PER_CLASS)
    fallback = not by_design and min(balance.values()) < needed
    reason = None
    if by_design:
        rows = []
        reason = f"{config.human_pairs} of NoveltyBench's human-labelled pairs by design (--source human)"
    elif fallback:
        reason = (
            f"the judge labelled {balance[1]} pairs equivalent and {balance[0]} different; the classifier needs at "
            f"least {needed} of each, so {config.human_pairs} of NoveltyBench's human-labelled pairs were mixed in"
        )
    if by_design or fallback:
        rows += human_rows(config.human_pairs, config.seed)
    if len({r["similar"] for r in rows}) < 2:
        raise UserInputError(
            f"{config.labels}: the pairs carry one label only; raise --human-pairs (now {config.human_pairs})"
        )
    output = Path(config.output)
    atomic_write_bytes(output / PAIRS_FILE, "".join(json.dumps(r) + "\n" for r in rows).encode())
    summary = {
        "file": str(output / PAIRS_FILE),
        "pairs": len(rows),
        "source": config.source,
        "by_source": {s: sum(r["source"] == s for r in rows) for s in ("judge", "noveltybench")},
        "judge_balance": {str(k): v for k, v in balance.items()},
        "balance": {str(k): sum(r["similar"] == k for r in rows) for k in (0, 1)},
        "fallback": fallback,
        "by_design": by_design,
        "reason": reason,
        "noveltybench_file": str(BUILTIN_PAIRS["noveltybench"]) if by_design or fallback else None,
    }
    atomic_write_bytes(output / SUMMARY_FILE, (json.dumps(summary, indent=2) + "\n").encode())
    return summary
