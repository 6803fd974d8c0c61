"""A pytest plugin that records every test phase as it ends: ``pytest -p suite_clock`` with this folder on
PYTHONPATH and ``DARLING_SUITE_CLOCK=FILE`` set (``suite_times.py`` does both). One JSON line per phase
(setup, call, teardown): its test, module, worker, start, stop and outcome, written by the process that collects the
reports (xdist's controller), so one file holds both workers' phases. Each process that runs tests also writes the
CPU seconds of each phase (``FILE.cpu.<worker>.jsonl``): its own and those of its children that ended and were
waited for by then (a server shared by the whole suite, stopped by the controller, counts nowhere). Kept out of
tests/ so that any commit can be measured with the same clock: the plugin needs nothing from the tree under test.
"""

from __future__ import annotations

import json
import os
import resource
import time
from typing import Any

import pytest

_lines: list[dict[str, Any]] = []  # the collecting process's: every phase's times
_cpu_lines: list[dict[str, Any]] = []  # a running process's: every phase's CPU seconds
_started = time.time()
_cpu_last = 0.0


def _cpu_now() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _worker(report: pytest.TestReport) -> str:
    node = getattr(report, "node", None)  # xdist's controller sets the worker that ran it
    gateway = getattr(node, "gateway", None)
    return getattr(gateway, "id", None) or os.environ.get("PYTEST_XDIST_WORKER", "main")


def pytest_sessionstart(session: pytest.Session) -> None:
    global _cpu_last
    _cpu_last = _cpu_now()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global _cpu_last
    if getattr(report, "node", None) is None:  # this process ran the phase: its CPU since the last one ended
        now = _cpu_now()
        _cpu_lines.append({"nodeid": report.nodeid, "when": report.when, "cpu": round(now - _cpu_last, 3)})
        _cpu_last = now
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
    if not path:
        return
    if _cpu_lines:
        with open(f"{path}.cpu.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", "w") as out:
            out.writelines(json.dumps(line) + "\n" for line in _cpu_lines)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "w") as out:
        out.write(json.dumps({"session": {"start": _started, "stop": time.time(), "exitstatus": int(exitstatus)}}))
        out.write("\n")
        for line in _lines:
            out.write(json.dumps(line) + "\n")
