"""What the whole suite shares across its workers: artefacts made once (the tiny exports, the trained MiniLM exports)
and vLLM-CPU servers started once, by whichever worker asks first, then used by every worker.

pytest-xdist runs a session-scoped fixture once per worker, so with two workers each server started twice (~25 s of
both cores each) and each worker trained its own copy of every export. Here the controller makes one folder for the
run (``DARLING_TEST_SHARED``, inherited by the workers it spawns); ``once`` makes a value under a file lock in it and
records it as JSON for the others; a server started there runs in its own session, outliving the worker that
started it, and is registered so that the controller stops it when the run ends (``stop_registered``). Run without
xdist (``-n 0``), the one process is both.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

SHARED_ENV = "DARLING_TEST_SHARED"
PROCESSES = "processes.jsonl"  # one line per registered process group: {"pgid": ..., "what": ..., "scratch": ...}


def is_controller() -> bool:
    return "PYTEST_XDIST_WORKER" not in os.environ


def start_run() -> None:
    """The controller, before it spawns workers: the run's shared folder."""
    os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="darling-suite-")


def root() -> Path:
    return Path(os.environ[SHARED_ENV])


def once(name: str, make: Callable[[Path], Any]) -> Any:
    """``make(folder)`` once per run, in a folder of its own; its JSON value for every worker. A failure (or skip) is
    recorded, so the others fail (or skip) with it instead of trying again."""
    record = root() / f"{name}.json"
    with FileLock(str(root() / f"{name}.lock")):
        if not record.exists():
            folder = root() / name
            folder.mkdir()
            try:
                record.write_text(json.dumps({"value": make(folder)}))
            except BaseException as exc:  # pytest's skip and fail are BaseExceptions
                skipped = isinstance(exc, pytest.skip.Exception)
                record.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}", "skipped": skipped}))
                raise
    data = json.loads(record.read_text())
    if "error" in data:
        (pytest.skip if data["skipped"] else pytest.fail)(f"shared {name!r} could not be made: {data['error']}")
    return data["value"]


def register(pgid: int, what: str, scratch: Path | None = None) -> None:
    """A process group the controller stops when the run ends (a server started by a worker outlives it), and the
    scratch folder it removes then."""
    line = json.dumps({"pgid": pgid, "what": what, "scratch": str(scratch) if scratch else None})
    with FileLock(str(root() / f"{PROCESSES}.lock")), (root() / PROCESSES).open("a") as out:
        out.write(line + "\n")


def stop_registered(grace: float = 20.0) -> None:
    """The controller, when the run ends: SIGTERM every registered process group, SIGKILL what is left after
    ``grace`` seconds, then remove the shared folder."""
    listing = root() / PROCESSES
    entries = [json.loads(line) for line in listing.read_text().splitlines()] if listing.exists() else []
    groups = [entry["pgid"] for entry in entries]
    for pgid in groups:
        _signal(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        groups = [g for g in groups if _alive(g)]
        time.sleep(0.2)
    for pgid in groups:
        _signal(pgid, signal.SIGKILL)
    for entry in entries:
        if entry["scratch"]:
            shutil.rmtree(entry["scratch"], ignore_errors=True)
    shutil.rmtree(root(), ignore_errors=True)


def _signal(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pgid, sig)


def _alive(pgid: int) -> bool:
    """Whether any process of the group still runs (a zombie does not: once its worker has gone, the server's
    process waits for an init that may never reap it)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, pgrp, ...
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
