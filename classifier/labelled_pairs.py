"""Load and validate labelled pairs from JSONL, Parquet or a Hugging Face dataset.

Every problem is reported as one line naming the file, the line (JSONL, 1-based) or row (Parquet and
datasets, 0-based) and the field, so a user can fix the input without reading a traceback.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from darling.classifier.config import ITEM_PAIRS, ITEM_PAIRS_HELDOUT, MINIMAL_PAIRS, NOVELTYBENCH_HELDOUT
from darling.core.errors import UserInputError
from darling.core.readers import iter_dataset, iter_jsonl, iter_parquet
from darling.core.schemas import PAIR_FIELDS, PAIR_LABEL_FIELD, PAIR_TEXT_FIELDS, LabelledPair, stable_pair_id


@dataclass(frozen=True)
class PairSet:
    """Validated pairs plus where they came from (the SHA-256 goes into the export's provenance)."""

    pairs: list[LabelledPair]
    source: str
    sha256: str

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def labels(self) -> list[int]:
        return [p.similar for p in self.pairs]


def _label(value: Any, where: str) -> int:
    # bool is an int subclass; floats appear when a writer stored the label as a double.
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, float) and value in (0.0, 1.0):
        return int(value)
    raise UserInputError(f"{where}: field '{PAIR_LABEL_FIELD}' must be 0 or 1, got {value!r}")


def record_to_pair(record: Any, where: str) -> LabelledPair:
    """Validate one raw record (a mapping) into a LabelledPair, or raise naming ``where`` and the field."""
    if not isinstance(record, Mapping):
        raise UserInputError(f"{where}: expected a JSON object with fields {', '.join(PAIR_FIELDS)}")
    for name in PAIR_FIELDS:
        if name not in record:
            raise UserInputError(f"{where}: missing field '{name}'")
    for name in PAIR_TEXT_FIELDS:
        value = record[name]
        if not isinstance(value, str):
            shown = "null" if value is None else type(value).__name__
            raise UserInputError(f"{where}: field '{name}' must be a string, got {shown}")
    similar = _label(record[PAIR_LABEL_FIELD], where)
    prompt, g0, g1 = (record[n] for n in PAIR_TEXT_FIELDS)
    raw_id = record.get("id", record.get("pair_id"))
    pair_id = str(raw_id) if raw_id not in (None, "") else stable_pair_id(prompt, g0, g1)
    extra = {k: v for k, v in record.items() if k not in PAIR_FIELDS}
    return LabelledPair(prompt, g0, g1, similar, pair_id=pair_id, extra=extra)


# Built-in pair sets shipped with the package (name -> file), so the CPU quick start needs no download.
RESOURCES = Path(__file__).parent / "resources"
BUILTIN_PAIRS = {
    "noveltybench": RESOURCES / "noveltybench-pairs.jsonl.gz",  # the 1,000 the presets train on
    # the packaged checks (darling.classifier.checks): never trained or chosen on
    NOVELTYBENCH_HELDOUT: RESOURCES / "noveltybench-heldout.jsonl.gz",
    MINIMAL_PAIRS: RESOURCES / "minimal-pairs.jsonl.gz",
    # a warm-up policy's own answers to the item prompts, labelled by the items checker (ITEM-PAIRS.md): the training
    # categories' pairs as the item chain makes them, and every keyed pair of 30 held-out categories (a check)
    ITEM_PAIRS: RESOURCES / "item-pairs.jsonl.gz",
    ITEM_PAIRS_HELDOUT: RESOURCES / "item-pairs-heldout.jsonl.gz",
}


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _sha256_of_pairs(pairs: list[LabelledPair]) -> str:
    h = hashlib.sha256()
    for p in pairs:
        h.update(json.dumps([p.prompt, p.generation_0, p.generation_1, p.similar]).encode())
    return h.hexdigest()


def load_pairs(source: str | Path) -> PairSet:
    """Load labelled pairs from a ``.jsonl[.gz]`` file, a ``.parquet`` file or folder of shards, a folder
    written by ``datasets.save_to_disk``, a Hugging Face dataset name (``owner/name[:split]``), or a
    built-in set: ``noveltybench`` (NoveltyBench's 1,000 human-labelled pairs, MIT licence), or a packaged check,
    ``noveltybench-heldout`` (its 100 held-out pairs) or ``minimal-pairs`` (``darling.classifier.checks``)."""
    spec = str(source)
    path = BUILTIN_PAIRS.get(spec, Path(spec))
    if path.is_file() and path.name.endswith((".jsonl", ".json", ".jsonl.gz")):
        records = iter_jsonl(path)
    elif (path.is_file() and path.suffix == ".parquet") or (path.is_dir() and any(path.glob("*.parquet"))):
        records = iter_parquet(path)
    elif path.is_dir() and any((path / n).exists() for n in ("dataset_info.json", "dataset_dict.json")):
        records = iter_dataset(spec, prefer=("train",))
    elif path.exists():
        raise UserInputError(f"{spec}: unsupported pair file (expected .jsonl, .parquet or a dataset folder)")
    elif "/" in spec and not spec.startswith((".", "/")) and not path.suffix:
        records = iter_dataset(spec, prefer=("train",), split="train")
    else:
        raise UserInputError(f"{spec}: file not found")

    pairs = [record_to_pair(record, where) for where, record in records]
    if not pairs:
        raise UserInputError(f"{spec}: no pairs found")
    digest = _sha256_of(path) if path.exists() else _sha256_of_pairs(pairs)
    return PairSet(pairs=pairs, source=spec, sha256=digest)


def split_pairs(pairs: PairSet, val_fraction: float, seed: int) -> tuple[list[LabelledPair], list[LabelledPair]]:
    """Seeded split, stratified by label and grouped by prompt, so no prompt lands in both halves
    (datagen writes many pairs per problem; a prompt in both halves would leak)."""
    from sklearn.model_selection import StratifiedGroupKFold

    if not 0.0 < val_fraction < 1.0:
        raise UserInputError(f"val_fraction must be in (0, 1), got {val_fraction}")
    n_splits = max(2, round(1.0 / val_fraction))
    labels = pairs.labels
    if min(labels.count(0), labels.count(1)) < n_splits:
        raise UserInputError(
            f"{pairs.source}: too few pairs of one class ({labels.count(0)} x 0, {labels.count(1)} x 1) "
            f"for a {val_fraction:.0%} stratified validation split; pass --val"
        )
    groups = [p.prompt for p in pairs.pairs]
    splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    train_idx, val_idx = next(splitter.split(labels, labels, groups))
    return [pairs.pairs[i] for i in train_idx], [pairs.pairs[i] for i in val_idx]


def kfold_pairs(pairs: PairSet, k: int, seed: int) -> list[tuple[list[LabelledPair], list[LabelledPair]]]:
    """``k`` (train, held-out) folds, stratified by label and grouped by prompt like ``split_pairs``: every pair
    is held out exactly once (cross-validation for choosing a recipe without a test set)."""
    from sklearn.model_selection import StratifiedGroupKFold

    labels = pairs.labels
    splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    folds = splitter.split(labels, labels, [p.prompt for p in pairs.pairs])
    return [([pairs.pairs[i] for i in tr], [pairs.pairs[i] for i in te]) for tr, te in folds]
