"""GPU memory in a pipeline run (issue 61), on CPU with the memory figures injected: each command's peak, as a GPU
process records it at exit, reaches its stage's record and the report; and a one-GPU study runs only as many
side-by-side commands as the card holds (``gpu_memory_per_process`` against ``--gpu-memory``, or the card found)."""

import json
import re
from dataclasses import replace

from helpers import darling_in_process

from darling.core.gpu_memory import GIB, LOG_ENV, STAGE_ENV, output_of, process_record
from darling.pipeline.gpu_memory import fit_side_by_side, peaks_line, stage_peaks
from darling.pipeline.runner import StageBook, run_stage
from darling.pipeline.script import Block
from darling.pipeline.stage import Plan


def test_the_card_caps_seeds_side_by_side_first_then_commands():
    assert fit_side_by_side(141, 14, jobs=3, seed_jobs=3) == (3, 3)  # an H200: 9 of 14 GiB fit in 90%
    assert fit_side_by_side(80, 14, jobs=3, seed_jobs=3) == (3, 1)  # an H100: 5 fit, one seed's 3 at a time
    assert fit_side_by_side(80, 14, jobs=3, seed_jobs=6) == (3, 1)
    assert fit_side_by_side(24, 14, jobs=3, seed_jobs=2) == (1, 1)  # one fits: never below one
    assert fit_side_by_side(80, 3, jobs=3, seed_jobs=6) == (3, 6)  # 18 of 3 GiB fit: as the preset asks


def test_a_study_dry_run_for_a_smaller_card_writes_fewer_commands_at_once(tmp_path):
    """gpu-items for a 40 GiB card: 2 RL processes of ~14 GiB fit, so one seed at a time, two commands at once."""
    run = tmp_path / "items"
    flags = ["--preset", "gpu-items", "--seeds", "1,2", "--dry-run", "-o", run]
    result = darling_in_process("pipeline", *flags, "--gpu-memory", "40")
    assert result.returncode == 0, result.stderr
    assert "a 40 GiB card holds 2 GPU commands of ~14 GiB each: 1 seed(s) x 2 command(s)" in result.stdout
    rl = (run / "seed-1" / "commands.sh").read_text().split("# == ")[6]
    assert rl.startswith("6/8 rl") and rl.count("rl-train") == 4 and "wait_jobs 1  # a slot frees" in rl
    as_asked = darling_in_process("pipeline", *flags[:-1], tmp_path / "asked", "--gpu-memory", "141")
    assert "GPU commands of ~" not in as_asked.stdout  # 3 x 3 of 14 GiB fit an H200's 141: nothing cut
    rl = (tmp_path / "asked" / "seed-1" / "commands.sh").read_text().split("# == ")[6]
    assert re.search(r"wait_jobs 2  # a slot frees", rl)


def test_each_commands_peak_reaches_its_stage_record_and_the_report(tmp_path, monkeypatch):
    """A block whose commands record their peaks as GPU processes do (one line each, the figures injected: no CUDA
    here), run by the runner: the stage's record and the report name each command's peak."""
    from darling.pipeline.config import build_config
    from darling.pipeline.report import render_report
    from darling.pipeline.stages import STAGE

    config = build_config("cpu-items", tmp_path / "run")
    plan = Plan(config)
    config.run.mkdir(parents=True)
    lines = []
    monkeypatch.setenv(STAGE_ENV, "rl")  # as the block's environment sets it for the processes it starts
    for folder, gib in (("rl", 13.5), ("rl-grpo", 12.25)):
        record = process_record(
            ["rl-train", "--output", str(config.run / folder)],
            {0: (int(gib * GIB), int((gib + 1) * GIB))},
            "H",
            80 * GIB,
        )
        lines.append(f"echo '{json.dumps(record)}' >> \"${LOG_ENV}\"")
    lines.append(f'[ "${STAGE_ENV}" = rl ]')  # the block knows its stage
    book = StageBook(config.run)
    monkeypatch.setitem(STAGE, "rl", replace(STAGE["rl"], summary=lambda plan: {}))  # no training ran: no summary
    run_stage(plan, Block("rl", "test", lines), book, "[1/1]", lambda line: None)
    peaks = json.loads((config.run / "stages.json").read_text())["stages"]["rl"]["gpu_memory"]
    assert peaks == {
        "rl": {"peak_allocated_gib": 13.5, "peak_reserved_gib": 14.5, "processes": 1, "device": "H", "card_gib": 80.0},
        "rl-grpo": {
            "peak_allocated_gib": 12.25, "peak_reserved_gib": 13.25, "processes": 1, "device": "H", "card_gib": 80.0
        },
    }  # fmt: skip
    report = render_report(plan, {"rl": {**book.records["rl"], "summary": None}})
    assert "on H (80 GiB): `rl` 13.5 (14.5), `rl-grpo` 12.2 (13.2)." in report


def test_a_processs_record_names_its_output_and_a_cpu_run_has_no_figures(tmp_path):
    assert output_of(["rl-train", "--preset", "items", "-o", "runs/x"]) == "runs/x"
    assert output_of(["eval", "novelty", "--output=runs/y"]) == "runs/y" and output_of(["pipeline"]) is None
    assert stage_peaks(tmp_path / "absent.jsonl", "rl", tmp_path) == {} and peaks_line({}) is None
