"""A pytest plugin that records every test phase as it ends: ``pytest -p suite_clock`` with ``bench/`` on
PYTHONPATH and ``DARLING_SUITE_CLOCK=FILE`` set (``bench/suite_times.py`` does both). One JSON line per phase
(setup, call, teardown): its test, module, worker, start, stop and outcome, written by the process that collects the
reports (xdist's controller), so one file holds both workers' phases. Kept out of tests/ so that any commit can be
measured with the same clock: the plugin needs nothing from the tree under test.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

_lines: list[dict[str, Any]] = []
_started = time.time()


def _worker(report: pytest.TestReport) -> str:
    node = getattr(report, "node", None)  # xdist's controller sets the worker that ran it
    gateway = getattr(node, "gateway", None)
    return getattr(gateway, "id", None) or os.environ.get("PYTEST_XDIST_WORKER", "main")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker: its reports reach the controller, which records them
        return
    _lines.append(
        {
            "nodeid": report.nodeid,
            "module": report.nodeid.split("::")[0],
            "when": report.when,
            "worker": _worker(report),
            "start": report.start,
            "stop": report.stop,
            "duration": report.duration,
            "outcome": report.outcome,
        }
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("DARLING_SUITE_CLOCK")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "w") as out:
        out.write(json.dumps({"session": {"start": _started, "stop": time.time(), "exitstatus": int(exitstatus)}}))
        out.write("\n")
        for line in _lines:
            out.write(json.dumps(line) + "\n")
