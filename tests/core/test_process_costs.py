"""tests/support/timing/process_costs.py: every Python process started with its trace folder on PYTHONPATH writes
one line at exit, and the table sums them by command (the suite's process costs, docs/measurements.md)."""

import subprocess
import sys
from pathlib import Path

from helpers import CLI_ENV
from timing.process_costs import HERE, table


def test_each_process_writes_a_line_and_the_table_sums_them_by_command(tmp_path):
    trace = tmp_path / "trace.jsonl"
    env = {**CLI_ENV, "PYTHONPATH": str(HERE / "process_trace"), "DARLING_PROCESS_TRACE": str(trace)}
    darling = [sys.executable, "-m", "darling", "eval", "study", "--help"]
    for command in (darling, darling, [sys.executable, "-c", "sum(range(10**7))"]):
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    lines = table(trace)
    assert lines[0].startswith("3 processes, ")
    rows = {row.split(" | ")[0].strip("| "): row.split(" | ") for row in lines[4:]}
    assert set(rows) == {"darling eval study", "python -c"}
    assert rows["darling eval study"][1] == "2" and float(rows["python -c"][2]) > 0.05
    assert Path(trace).read_text().count("\n") == 3
