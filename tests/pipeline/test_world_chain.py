"""`darling pipeline --preset cpu-world`: the world's chain over seeds, its first stages run once (RUN/shared) and read
by every seed. Its dry run, and the chain at test size with two seeds through to RUN/report.md and its figure."""

import json
import os
import re
from pathlib import Path

import pytest
from helpers import darling, limit

SHARED = ("world", "datagen", "pairs", "labels", "classifier")
SHARED_FOLDERS = ("world", "datagen", "pairs", "labels", "training-pairs", "classifier")
# the chain at test size: a policy pretrained for 300 steps (it names the categories' members 6 times in 10), a few
# pairs and classifier steps, four RL steps of each arm with TRL's evaluation every two, four prompts of each set
SMALL = [
    f"--set={item}"
    for item in (
        "world.answers=20000",
        "pretrain.max_steps=300",
        "pretrain.batch_size=128",
        "pretrain.learning_rate=0.03",
        "datagen.n=4",
        "pairs.max_pairs_per_problem=2",
        "datagen.limit=8",
        "classifier.max_steps=4",
        "rl.max_steps=4",
        "rl.limit=8",  # a step samples 8 prompts
        "rl.eval_steps=2",
        "rl.eval_limit=4",
        "eval_novelty.limit=4",
    )
]


def test_the_dry_run_writes_the_shared_stages_once_and_each_seeds_chain(tmp_path):
    run = tmp_path / "run"
    result = darling("pipeline", "--preset", "cpu-world", "--dry-run", "-o", run, check=True, timeout=limit(30))
    shared = (run / "shared" / "commands.sh").read_text()
    assert 'darling world corpus --output "$RUN/world/corpus" --wording plain' in shared
    assert 'darling world pretrain --corpus "$RUN/world/corpus" --output "$RUN/world/policy"' in shared
    assert '--generators "$RUN/inputs/generators.json"' in shared and "darling train-classifier" in shared
    assert "rl-train" not in shared and "eval novelty" not in shared  # the seeds' stages
    generators = json.loads((run / "shared" / "inputs" / "generators.json").read_text())["generators"]
    assert [(g["name"], g["temperature"]) for g in generators] == [("start-t0.7", 0.7), ("start-t1", 1.0)]
    assert {g["model"] for g in generators} == {str(run.resolve() / "shared" / "world" / "policy" / "final")}
    for seed in (1, 2, 3):
        script = (run / f"seed-{seed}" / "commands.sh").read_text()
        commands = [line for line in script.splitlines() if "darling " in line and not line.startswith("#")]
        assert not any("world corpus" in c or "train-classifier" in c or "datagen" in c for c in commands)
        assert "# classifier: ran once for every seed" in script
        rl = [c for c in commands if "darling rl-train" in c]
        assert len(rl) == 4 and all(f"--seed {seed}" in c and "--eval-problems world-heldout" in c for c in rl)
        assert all('--policy "$RUN/world/policy/final"' in c for c in rl)
    assert result.stdout.count("dry run: wrote") == 4 and not (run / "report.md").exists()


@pytest.mark.slow
def test_the_world_chain_runs_its_shared_stages_once_for_two_seeds_and_reports_them(tmp_path):
    run = tmp_path / "run"
    args = ["pipeline", "--preset", "cpu-world", "--seeds", "1,2", "-o", run, *SMALL]
    result = darling(*args, timeout=limit(400))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    shared = json.loads((run / "shared" / "stages.json").read_text())["stages"]
    assert list(shared) == list(SHARED) and {r["status"] for r in shared.values()} == {"done"}
    assert shared["world"]["summary"]["held_out_loss"] > shared["world"]["summary"]["corpus_entropy"]
    for seed in (1, 2):
        folder = run / f"seed-{seed}"
        for name in SHARED_FOLDERS:  # each seed reads the shared stages' output where it was made
            assert (folder / name).is_symlink() and os.readlink(folder / name) == f"../shared/{name}"
        records = json.loads((folder / "stages.json").read_text())["stages"]
        assert all(records[n]["shared"] == "../shared" and records[n]["status"] == "done" for n in SHARED)
        assert [n for n in records if n not in SHARED] == ["rl", "eval-novelty", "compare"]
        for arm in ("rl", "rl-grpo", "rl-darling-ngram", "rl-checker-ceiling"):
            history = json.loads((folder / arm / "log_history.json").read_text())
            assert [h["step"] for h in history if "eval_darling/distinct_keys" in h] == [0, 2, 4], arm
            assert all("darling/distinct_keys" in h for h in history if "darling/reward" in h), arm
            if arm == "rl":  # DARLING's term, from the chain's classifier's partition of the policy's answers, acted
                assert any(h["darling/groups_changed"] > 0 for h in history if "darling/groups_changed" in h)
        partitions = json.loads((folder / "eval-partitions" / "partitions.json").read_text())
        assert set(partitions["sets"]["base"]["auc"]) == {"chain", "4-gram rule", "content-word rule"}
    report = (run / "report.md").read_text()
    assert (run / "curves.png").stat().st_size > 10_000 and "![each arm over RL steps](curves.png)" in report
    assert "| darling-rl − grpo-rl |" in report and "| darling-rl − darling-ngram-rl |" in report
    assert "| held out | chain |" in report
    assert re.search(r"^\| world \| [\d.]+ \| shared \| shared \|$", report, flags=re.MULTILINE)  # once, in RUN/shared
    curves = json.loads((run / "curves.json").read_text())
    assert set(curves) == {"darling-rl", "grpo-rl", "darling-ngram-rl", "checker-ceiling-rl"}
    assert set(curves["grpo-rl"]) == {"1", "2"} and curves["grpo-rl"]["1"]["held_out"]["step"] == [0.0, 2.0, 4.0]
    assert "pipeline done:" in result.stdout and f"-> {run.resolve() / 'report.md'}" in result.stdout
    # a rerun finds every stage done (the shared ones in RUN/shared, once) and pools the same figures again
    again = darling(*args, timeout=limit(120), check=True)
    assert "[1/5] world: done earlier" in again.stdout and "[1/8] world: shared: ran once" in again.stdout
    assert "rl: done earlier" in again.stdout and "Loading weights" not in again.stdout
    assert json.loads((run / "curves.json").read_text()) == curves
    section = lambda text: text.split("## Pooled over seeds")[1].split("## Stage times")[0]  # noqa: E731
    assert section((run / "report.md").read_text()) == section(report)


def test_shared_stages_must_open_the_chain(tmp_path):
    from helpers import assert_one_line_error

    result = darling(
        "pipeline", "--preset", "cpu-world", "--set", 'shared_stages=["datagen"]', "-o", tmp_path / "r", "--dry-run"
    )
    assert_one_line_error(result, "shared_stages must be the chain's first stages")
    assert not Path(tmp_path / "r").exists()
