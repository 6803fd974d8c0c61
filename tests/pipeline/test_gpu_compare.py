"""`darling pipeline --preset gpu-compare --seeds ...`: the one-GPU study. Its commands are the cpu chain's (so the
chain tests cover them), at the budget measured on one H100; here its dry run, and the same preset's chain at tiny
size on the CPU with two seeds side by side, through to the pooled study on the held-out prompts."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import GPU_COMPARE_TIMEOUT, TINY_CHAIN, darling

from darling.pipeline.stages import STAGE_NAMES

BIN = Path(sys.executable).parent  # where `darling` is installed: study.sh calls it by name
VERBS = re.compile(r"darling ((?:eval |datagen )?[a-z-]+)")
# study folder suffix -> the pair it pools, with `--arms passk`
PAIRS = {
    "": "darling-rl - grpo-rl",
    "-passk-vs-grpo": "passk-rl - grpo-rl",
    "-darling-vs-passk": "darling-rl - passk-rl",
}


def commands_of(script: str) -> list[str]:
    """The darling commands a commands.sh runs, in order (``eval novelty``, ``rl-train``, ...)."""
    return VERBS.findall("\n".join(line for line in script.splitlines() if not line.startswith("#")))


def test_gpu_compare_dry_run_writes_each_seeds_chain_of_the_cpu_commands(tmp_path):
    seeds = "1,2,3,4,5,6"
    result = darling("pipeline", "--preset", "gpu-compare", "--seeds", seeds, "--dry-run", "-o", tmp_path / "study")
    assert result.returncode == 0, result.stderr
    cpu = darling("pipeline", "--preset", "cpu-compare", "--dry-run", "-o", tmp_path / "cpu")
    cpu_commands = commands_of((tmp_path / "cpu" / "commands.sh").read_text())
    for seed in range(1, 7):
        script = (tmp_path / "study" / f"seed-{seed}" / "commands.sh").read_text()
        assert commands_of(script) == cpu_commands, seed  # the commands the CPU presets run, so CPU CI runs them
        rl = [line for line in script.splitlines() if '--output "$RUN/rl"' in line]
        assert len(rl) == 1 and "--no-use-cpu" in rl[0] and "--max-steps 64" in rl[0]
        assert "--per-device-train-batch-size 64" in rl[0] and f"--seed {seed}" in rl[0]
        assert "--prompts naming-train --model" in script and '--output "$RUN/compare-train"' in script
    assert cpu.returncode == 0 and not (tmp_path / "study" / "study").exists()  # a dry run pools nothing
    study = (tmp_path / "study" / "study.sh").read_text()  # the study is a step on record, even in a dry run
    assert commands_of(study) == ["eval study"] * 2 and study.count("--compare ") == 12
    assert '--output "$RUN/study-train" --pair' in study and '--compare "6=$RUN/seed-6/compare-train"' in study


def test_with_another_arm_each_pair_is_pooled_over_the_seeds(tmp_path):
    """`--arms passk`: study.sh pools each pair of arms on both prompt sets (the chain test below runs one pair)."""
    result = darling(
        "pipeline",
        "--preset",
        "gpu-compare",
        "--seeds",
        "1,2",
        "--arms",
        "passk",
        "--dry-run",
        "-o",
        tmp_path / "study",
    )
    assert result.returncode == 0, result.stderr
    study = (tmp_path / "study" / "study.sh").read_text()
    assert commands_of(study) == ["eval study"] * 6
    for folder, pair in PAIRS.items():
        for prompts in ("study", "study-train"):
            line = next(x for x in study.splitlines() if f'--output "$RUN/{prompts}{folder}" ' in x)
            assert f"--pair '{pair}'" in line, line


@pytest.mark.slow
def test_gpu_compare_chain_at_tiny_size_runs_seeds_side_by_side_and_pools_them(tmp_path):
    """Two seeds' chains side by side, then study.sh pools them. Held-out prompts only: the training prompts' stages
    (eval-novelty-train, compare-train) are the cpu chain's, run in tests/pipeline/test_pipeline_runs.py, and
    their study line is the same `eval study` on other folders (the dry runs above check it is written)."""
    run = tmp_path / "study"
    # DARLING and GRPO only: the pairs of another arm are the same eval study steps (the dry run above lists them)
    result = darling(
        "pipeline",
        "--preset",
        "gpu-compare",
        "--seeds",
        "1,2",
        "-o",
        run,
        *TINY_CHAIN,
        "--set=evaluate_training_prompts=false",
        timeout=GPU_COMPARE_TIMEOUT,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    stages = {s: json.loads((run / f"seed-{s}" / "stages.json").read_text())["stages"] for s in (1, 2)}
    for seed, records in stages.items():
        assert {n: r["status"] for n, r in records.items()} == {n: "done" for n in STAGE_NAMES if n in records}
        assert "compare" in records and "eval-novelty" in records, seed
    # side by side: each seed's first stage started before the other's last one finished
    assert stages[2]["classifier"]["started"] <= stages[1]["compare"]["finished"]
    assert stages[1]["classifier"]["started"] <= stages[2]["compare"]["finished"]
    pooled = json.loads((run / "study" / "study.json").read_text())
    assert sorted(map(str, pooled["seeds"])) == ["1", "2"] and pooled["pair"] == PAIRS[""]
    assert "novelty/distinct_answers" in pooled["metrics"]
    assert not (run / "study-train").exists()
    assert (run / "logs" / "study.log").read_text().startswith("== study, attempt 1")  # the run ran study.sh itself
    written = (run / "study" / "study.json").read_bytes()
    rerun = subprocess.run(["bash", run / "study.sh"], env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert rerun.returncode == 0 and (run / "study" / "study.json").read_bytes() == written
    report = (run / "seed-1" / "report.md").read_text()
    assert "covers prompts, not runs" in report[report.index("On held-out prompts") :]
    assert "[seed 1] " in result.stdout and "[seed 2] " in result.stdout
