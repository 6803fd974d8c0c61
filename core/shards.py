"""A directory of Parquet shards that long stages append to, safe against crashes and kill -9.

Each flush writes ``part-NNNNNN.parquet`` through a temporary file and an atomic rename, so a shard is
either complete or absent. Rows are keyed by stable ids; reading keeps the *last* row written for a key,
so a rerun that retries a failed row supersedes it without rewriting old shards. Next to the shards,
``run.json`` records the settings a directory was made with, so a rerun with different settings is refused
instead of silently mixing two experiments.

One writer at a time: the first append takes an exclusive lock on ``.writer.lock`` (``flock``, released by
the kernel when the process ends, ``kill -9`` included), so a second process writing the same folder is
refused with one line instead of both numbering their next part alike. Inside a process, a part is put in
place with ``link`` (which fails if the name is taken) rather than ``rename`` (which would replace it), so
threads that race for one part number never overwrite each other's part.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from darling.core.errors import UserInputError
from darling.core.schemas import RUN_FILE, polars_schema

if TYPE_CHECKING:  # polars loads where a store reads or writes: atomic_write_bytes' users (the pipeline) stay light
    import polars as pl

SHARD_GLOB = "part-*.parquet"
LOCK_FILE = ".writer.lock"
# folder -> [fd of its lock, number of live stores writing it]: one flock per process and folder (flock would
# refuse this process's own second descriptor); closed when the last store writing the folder is gone.
_HELD_LOCKS: dict[Path, list[int]] = {}
_HELD_LOCKS_GUARD = threading.Lock()


def hold_writer_lock(directory: Path) -> Path:
    """Take the exclusive writer lock of ``directory`` (or share this process's); another process holding it
    is an error. Pair with ``release_writer_lock``."""
    key = directory.resolve()
    with _HELD_LOCKS_GUARD:
        if key in _HELD_LOCKS:
            _HELD_LOCKS[key][1] += 1
            return key
        fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise UserInputError(
                f"{directory}: another process (pid {holder}) is writing to this folder; wait for it to finish "
                "(then rerun to resume) or use another --output"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        _HELD_LOCKS[key] = [fd, 1]
        # Only the writer may clear leftovers: a temporary part of a write that was killed before its link.
        for leftover in key.glob(".part-*.tmp"):
            leftover.unlink(missing_ok=True)
        return key


def release_writer_lock(key: Path) -> None:
    with _HELD_LOCKS_GUARD:
        held = _HELD_LOCKS.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            os.close(held[0])  # closing the descriptor releases the flock
            del _HELD_LOCKS[key]


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
        self._lock: weakref.finalize | None = None

    def shards(self) -> list[Path]:
        return sorted(self.directory.glob(SHARD_GLOB))

    def read(self) -> pl.DataFrame:
        """All rows, one per key (the last written wins), in a stable key order."""
        import polars as pl

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
        import polars as pl

        frame = pl.DataFrame(rows, schema=self.schema)
        if self._lock is None:  # held from the first append until this store is garbage-collected
            key = hold_writer_lock(self.directory)
            self._lock = weakref.finalize(self, release_writer_lock, key)
        fd, tmp = tempfile.mkstemp(prefix=".part-", suffix=".tmp", dir=self.directory)
        os.close(fd)
        try:
            frame.write_parquet(tmp)
            while True:
                existing = self.shards()
                index = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
                path = self.directory / f"part-{index:06d}.parquet"
                try:
                    os.link(tmp, path)  # atomic, and unlike rename it never replaces a part that is there
                    return path
                except FileExistsError:
                    continue  # another thread took this number first
        finally:
            Path(tmp).unlink(missing_ok=True)

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
