"""A directory of Parquet shards that long stages append to, safe against crashes and kill -9.

Each flush writes ``part-NNNNNN.parquet`` through a temporary file and an atomic rename, so a shard is
either complete or absent. Rows are keyed by stable ids; reading keeps the *last* row written for a key,
so a rerun that retries a failed row supersedes it without rewriting old shards. Next to the shards,
``run.json`` records the settings a directory was made with, so a rerun with different settings is refused
instead of silently mixing two experiments.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from darling.errors import UserInputError
from darling.schemas import polars_schema

SHARD_GLOB = "part-*.parquet"
RUN_FILE = "run.json"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(frame: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ShardStore:
    """Append-only Parquet shards in ``directory`` with rows keyed by ``key`` columns."""

    def __init__(self, directory: Path, columns: Mapping[str, str], key: Sequence[str]):
        self.directory = Path(directory)
        self.schema = polars_schema(dict(columns))
        self.key = list(key)
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in self.directory.glob(".part-*.tmp"):  # a write killed before its rename
            leftover.unlink(missing_ok=True)

    def shards(self) -> list[Path]:
        return sorted(self.directory.glob(SHARD_GLOB))

    def read(self) -> pl.DataFrame:
        """All rows, one per key (the last written wins), in a stable key order."""
        files = self.shards()
        if not files:
            return pl.DataFrame(schema=self.schema)
        frames = []
        for file in files:
            try:
                frames.append(pl.read_parquet(file).select(list(self.schema)).cast(self.schema))
            except Exception as exc:  # a foreign or damaged file in the output folder
                raise UserInputError(f"{file}: not a shard of this stage ({exc.__class__.__name__}: {exc})") from None
        frame = pl.concat(frames, how="vertical")
        return frame.unique(subset=self.key, keep="last", maintain_order=True).sort(self.key)

    def append(self, rows: Iterable[Mapping[str, Any]]) -> Path | None:
        rows = list(rows)
        if not rows:
            return None
        frame = pl.DataFrame(rows, schema=self.schema)
        existing = self.shards()
        index = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
        path = self.directory / f"part-{index:06d}.parquet"
        atomic_write_parquet(frame, path)
        return path

    # -- settings ------------------------------------------------------------------------------------------
    def check_settings(self, settings: Mapping[str, Any], what: str = "settings") -> None:
        """Record ``settings`` on first use; refuse a rerun whose settings differ (names the first difference)."""
        path = self.directory / RUN_FILE
        current = json.loads(json.dumps(settings, sort_keys=True, default=str))
        if path.exists():
            saved = json.loads(path.read_text())
            for name in sorted(set(saved) | set(current)):
                if saved.get(name) != current.get(name):
                    raise UserInputError(
                        f"{self.directory}: was made with {name}={saved.get(name)!r}, this run has "
                        f"{name}={current.get(name)!r}; use a new --output to change {what}"
                    )
            return
        atomic_write_bytes(path, (json.dumps(current, indent=2, sort_keys=True) + "\n").encode())
