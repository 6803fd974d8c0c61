"""`darling pipeline`: the whole cpu chain at reduced sizes with the real components (CHAMP, the SmolLM2 judge and
policy, MiniLM, TRL), resumable stage records, manifest hashes, the identity check, and the paper preset's
commands.sh on a machine without GPUs."""

import hashlib
import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from helpers import assert_one_line_error, darling

from darling.core.errors import UserInputError
from darling.pipeline import build_config
from darling.pipeline.commands import STAGES

# Every stage shrunk: 2 CHAMP problems, 3 judged pairs, 3 classifier steps, 2 RL steps per run, tiny evaluations.
SMALL = [
    "--datagen-limit",
    2,
    "--pairs-per-problem",
    2,
    "--judge-limit",
    3,
    "--classifier-steps",
    3,
    "--human-pairs",
    60,
    "--rl-steps",
    2,
    "--eval-limit",
    2,
    "--eval-n",
    2,
    "--novelty-limit",
    3,
    "--novelty-k",
    4,
    "--classifier-tokens",
    32,
    "--eval-max-tokens",
    16,
    "--set",
    "novelty_max_tokens=16",
    "--set",
    "rl_max_completion_length=16",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_and_mtimes(run: Path) -> dict[str, int]:
    return {p.relative_to(run).as_posix(): p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}


# -- fast: configuration, dry runs, the paper preset without GPUs --------------------------------------------
def test_config_presets_overrides_and_identity(tmp_path):
    cpu = build_config("cpu", tmp_path, rl_steps=2, **{"rl_options.floor": "0.1", "eval_problems": "arithmetic,x"})
    assert (cpu.rl_steps, cpu.rl_options, cpu.eval_problems) == (2, {"floor": 0.1}, ["arithmetic", "x"])
    identity = cpu.identity()
    assert next(iter(identity)) == "preset" and identity["rl_options.floor"] == 0.1
    assert "output" not in identity and "threads" not in identity and "dry_run" not in identity
    paper = build_config("paper", tmp_path)
    assert (paper.judge_model, paper.classifier_preset, paper.rl_preset) == (
        "meta-llama/Llama-3.3-70B-Instruct",
        "paper",
        "paper-math",
    )
    assert paper.policy() == "Qwen/Qwen3-4B-Base" and cpu.policy() == "smollm2"
    for bad, message in [
        ({"nope": 1}, "unknown option 'nope'"),
        ({"rl_steps": "x"}, "cannot read 'x'"),
        ({"eval_n": 0}, "eval_n must be >= 1"),
        ({"judge_structured": "regex"}, "hf judge cannot follow a regex"),
    ]:
        with pytest.raises(UserInputError, match=message):
            build_config("cpu", tmp_path, **bad)
    with pytest.raises(UserInputError, match="unknown preset"):
        build_config("gpu", tmp_path)


def test_paper_preset_without_gpus_writes_commands_and_runs_nothing(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA GPUs: the paper preset would really run")
    run = tmp_path / "paper"
    result = darling("pipeline", "--preset", "paper", "--output", run, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "needs CUDA GPUs" in result.stdout and "ran nothing" in result.stdout
    script = (run / "commands.sh").read_text()
    for needle in [
        "darling datagen rollouts --problems agentica-org/DeepScaleR-Preview-Dataset",
        "--engine vllm --tensor-parallel-size 8",
        "darling datagen label",
        "--judge-model meta-llama/Llama-3.3-70B-Instruct",
        "--structured regex",
        "darling train-classifier --preset paper",
        "Qwen3-Embedding-4B",
        "--devices 8 --strategy ddp",
        "darling serve-classifier",
        "accelerate launch",
        "darling rl-train --preset paper-math",
        "--classifier-urls http://127.0.0.1:8000",
        "darling eval math",
        "--n 256",
        "darling eval novelty",
        "[GPU-only]",
    ]:
        assert needle in script, needle
    assert script.count("[GPU-only]") == 6  # every stage but pairs (math-verify on the CPU)
    assert subprocess.run(["bash", "-n", run / "commands.sh"]).returncode == 0  # valid shell
    generators = json.loads((run / "inputs" / "generators.json").read_text())["generators"]
    assert len(generators) == 8 and {"name", "model"} <= set(generators[0])
    # Nothing ran: no stage folder, no stage records; the manifest says so.
    assert not any((run / stage).exists() for stage in STAGES) and not (run / "stages.json").exists()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "needs-gpu" and manifest["cuda_available"] is False
    assert manifest["config"]["preset"] == "paper" and manifest["command_line"].startswith("darling pipeline")


def test_cpu_dry_run_then_a_changed_option_or_preset_is_refused(tmp_path):
    run = tmp_path / "dry"
    result = darling("pipeline", "--output", run, "--dry-run", "--rl-steps", 2, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "dry run" in result.stdout and "darling rl-train --preset naming" in result.stdout
    script = (run / "commands.sh").read_text()
    assert "--max-steps 2" in script and "--import champ" in script and "--structured choice" in script
    assert not any((run / stage).exists() for stage in STAGES)
    assert_one_line_error(
        darling("pipeline", "--output", run, "--rl-steps", 3, timeout=120), "rl_steps=2", "rl_steps=3", "new --output"
    )
    assert_one_line_error(
        darling("pipeline", "--preset", "paper", "--output", run, timeout=120), "preset='cpu'", "preset='paper'"
    )
    other = tmp_path / "not-a-run"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert_one_line_error(darling("pipeline", "--output", other, "--dry-run", timeout=120), "not a pipeline run")


def darling_commands(script: str, run: Path) -> list[list[str]]:
    """The argument lists of every `darling ...` command in a commands.sh (also after `accelerate ... -m`)."""
    import re

    commands = []
    for line in script.replace("$RUN", str(run)).splitlines():
        line = re.sub(r"\$\( .* \)", "", line).rstrip(" &")  # the --resume test, a trailing background &
        if line.startswith("#") or "darling" not in line:
            continue
        words = shlex.split(line, comments=True)
        start = words.index("-m") + 2 if "-m" in words else words.index("darling") + 1
        commands.append(words[start:])
    return commands


@pytest.mark.parametrize("preset", ["cpu", "paper"])
def test_every_command_in_commands_sh_is_the_step_the_runner_runs(tmp_path, preset):
    """Each `darling` line of commands.sh, parsed by the real command line, builds exactly the config (and the
    inputs) of the step the in-process runner calls the API with: one definition, two renderings."""
    from darling.cli.main import app
    from darling.cli.options import parse_argv
    from darling.pipeline import steps
    from darling.pipeline.commands import render_script, stage_commands

    config = build_config(preset, tmp_path / "run")
    commands = darling_commands(render_script(config, stage_commands(config)), config.run)
    urls = steps.SERVED_URLS if preset == "paper" else ()
    runner_steps = [
        steps.datagen_step(config),
        steps.pairs_step(config),
        steps.labels_step(config),
        steps.classifier_step(config),
        steps.rl_step(config, urls),
        *([steps.rl_step(config, grpo=True)] if preset == "cpu" else []),
        *steps.eval_math_steps(config).values(),
        *steps.eval_novelty_steps(config).values(),
    ]
    if preset == "paper":
        runner_steps.insert(4, steps.serve_step(config))
    assert len(commands) == len(runner_steps) == (12 if preset == "cpu" else 10)
    for words, step in zip(commands, runner_steps, strict=True):
        parsed, params = parse_argv(app, words)  # raises on an unknown option or a bad value
        assert parsed == step.config, (words, step.config)
        assert {k: params[k] for k in step.params} == step.params, words
    assert sum("--max-steps 12" in " ".join(w) for w in commands) == (preset == "cpu")  # settings do reach the lines


def test_gpu_preset_runs_each_commands_block_as_a_resumable_stage(tmp_path, monkeypatch):
    """The CUDA branch, with each stage's block swapped for a shell stand-in: blocks run in order in RUN with
    $RUN set, each is a recorded stage, a failing block stops the run and the rerun resumes at that stage."""
    from darling.pipeline import runner
    from darling.pipeline.commands import StageCommands
    from darling.pipeline.stages import StageFailed

    failing = {"rl"}

    def blocks(config):
        stages = []
        for name in STAGES:
            line = "exit 3" if name in failing else f'mkdir -p "$RUN/{name}" && pwd > "$RUN/{name}/cwd.txt"'
            stages.append(StageCommands(name, "stand-in", [f"# {name}", line], gpu_only=True))
        path = config.run / "commands.sh"
        path.write_text("\n".join(line for s in stages for line in s.lines) + "\n")
        return path, stages

    monkeypatch.setattr(runner, "_cuda_available", lambda: True)
    monkeypatch.setattr(runner, "write_commands", blocks)
    config = build_config("paper", tmp_path / "run")
    lines: list[str] = []
    with pytest.raises(StageFailed, match="rl: a command exited with 3"):
        runner.run_pipeline(config, log=lines.append)
    records = json.loads((config.run / "stages.json").read_text())["stages"]
    assert [records[n]["status"] for n in STAGES[:5]] == ["done"] * 4 + ["failed"] and "eval-math" not in records
    assert (config.run / "datagen" / "cwd.txt").read_text().strip() == str(config.run)
    assert "**failed**" in (config.run / "report.md").read_text()

    failing.clear()
    result = runner.run_pipeline(config, log=lines.append)
    assert result["status"] == "done" and sum("skipped" in line for line in lines) == 4
    records = json.loads((config.run / "stages.json").read_text())["stages"]
    assert all(r["status"] == "done" for r in records.values()) and records["rl"]["attempts"] == 2
    report = (config.run / "report.md").read_text()
    assert "```bash" in report and 'mkdir -p "$RUN/rl"' in report  # a GPU stage is reported by its commands
    assert json.loads((config.run / "manifest.json").read_text())["status"] == "done"


# -- slow: the whole chain ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain(tmp_path_factory, smollm2_dir, minilm_path):
    run = tmp_path_factory.mktemp("pipeline") / "run"
    start = time.monotonic()
    result = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return run, result, time.monotonic() - start


@pytest.mark.slow
def test_whole_cpu_chain_at_reduced_sizes(chain):
    run, result, _ = chain
    assert "note: the classifier trains on 60 of NoveltyBench's human-labelled pairs by design" in result.stdout
    for i, stage in enumerate(STAGES, 1):
        assert f"[{i}/{len(STAGES)}] {stage}: done in" in result.stdout, stage
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert list(records) == list(STAGES) and all(r["status"] == "done" for r in records.values())
    assert all(r["seconds"] >= 0 and r["attempts"] == 1 for r in records.values())

    report = (run / "report.md").read_text()
    for title in (
        "Data generation",
        "Same-answer pairs",
        "Judge labels",
        "Equivalence classifier",
        "DARLING RL",
        "The GRPO baseline",
        "pass@k",
        "Novelty",
        "DARLING against GRPO",
        "What this run shows",
        "compare/curves.png",
    ):
        assert title in report, title
    for stage in STAGES:
        assert f"| {stage} | done |" in report and f"[`{stage}/`]({stage}/)" in report
    assert "| base | `smollm2` |" in report and "| darling-rl |" in report and "| grpo-rl |" in report
    assert "quality = 1" in report  # eval novelty has no reward model, said so

    summaries = {name: r["summary"] for name, r in records.items()}
    assert summaries["datagen"]["rollouts"] == 2 * 72 and summaries["datagen"]["problems"] == 2
    assert 1 <= summaries["pairs"]["pairs"] <= 4
    counts = summaries["labels"]["counts"]
    assert sum(counts.values()) == 3 and counts["failed"] == 0  # choice: every verdict parses; still reported
    data = summaries["classifier"]["data"]
    assert data["by_design"] and not data["fallback"]  # human pairs by design, not as a rescue
    assert data["by_source"] == {"judge": 0, "noveltybench": 60} and "by design" in report
    assert {"accuracy", "roc_auc", "threshold"} <= set(summaries["classifier"]["validation"])
    for name in ("rl", "rl-grpo"):
        steps = summaries[name]["steps"]
        assert [s["step"] for s in steps] == [1, 2] and all(0 <= s["darling/quality"] <= 1 for s in steps)
        assert summaries[name]["problems"] == "naming-train" and summaries[name]["quality"] == "relevant-short-answer"
    assert summaries["rl-grpo"]["reward"].startswith("quality only")
    assert summaries["rl-grpo"]["trained"].startswith("trained beside rl/")  # its commands.sh line, run alongside
    assert "policy saved to" in (run / "rl-grpo" / "train.log").read_text(errors="replace")
    # the baseline's reward is its quality; the classifier only counted its classes
    assert all(s["reward"] == pytest.approx(s["darling/quality"]) for s in summaries["rl-grpo"]["steps"])
    assert set(summaries["eval-math"]["models"]) == {"base", "darling-rl", "grpo-rl"}
    for m in summaries["eval-novelty"]["models"].values():
        assert m["n_prompts"] == 3 and 1 <= m["mean_distinct"] <= 4 and m["mean_quality"] == 1
    assert_comparison_recomputes_from_the_generations(run, summaries["compare"])

    for path in [
        "classifier/darling.json",
        "classifier/training/validation/metrics.json",
        "rl/final/model.safetensors",
        "rl/log_history.json",
        "rl-grpo/final/model.safetensors",
        "rl-grpo/log_history.json",
        "eval-math/base/metrics.json",
        "eval-math/darling-rl/report.md",
        "eval-novelty/base/metrics.json",
        "eval-novelty/grpo-rl/metrics.json",
        "compare/compare.json",
        "compare/curves.png",
        "labels/labelled.parquet",
        "pairs/pairs.parquet",
        "commands.sh",
    ]:
        assert (run / path).stat().st_size > 0, path
    assert not list((run / "rl").glob("checkpoint-*")) and not list((run / "rl-grpo").glob("checkpoint-*"))

    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "done" and manifest["command_line"].startswith("darling pipeline --preset cpu")
    assert manifest["config"]["rl_steps"] == 2 and manifest["versions"]["darling"] and manifest["versions"]["torch"]
    assert {"python", "platform"} <= set(manifest)
    outputs = {o["path"]: o for o in manifest["outputs"]}
    on_disk = {p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(outputs) == on_disk  # every output file, nothing else
    for path, entry in outputs.items():  # recomputed independently
        assert entry["sha256"] == sha256(run / path) and entry["bytes"] == (run / path).stat().st_size, path
    inputs = {i["role"]: i for i in manifest["inputs"]}
    assert inputs["champ_dataset"]["sha256"] == sha256(Path(inputs["champ_dataset"]["path"]))


def assert_comparison_recomputes_from_the_generations(run: Path, summary: dict) -> None:
    """compare/ figures, recomputed here from each policy's stored generations (the Parquet shards eval novelty
    wrote) and its partition's class ids: per prompt, then the mean; the paired difference's mean is the
    difference of the means, and its interval contains it."""
    import re

    import polars as pl

    from darling.rl.quality import RelevantShortAnswer

    relevance = RelevantShortAnswer(4)
    assert json.loads((run / "compare" / "compare.json").read_text())["policies"] == summary["policies"]
    assert summary["prompts"] == 3 and summary["prompt_set"] == "naming-heldout"
    for name in ("base", "grpo-rl", "darling-rl"):
        folder = run / "eval-novelty" / name
        generations = pl.read_parquet(folder / "generations" / "part-*.parquet").filter(pl.col("status") == "ok")
        classes = pl.read_parquet(folder / "scores.parquet").select("prompt_id", "sample_index", "class_id")
        frame = generations.join(classes, on=["prompt_id", "sample_index"]).sort("prompt_id", "sample_index")
        assert frame.height == 3 * 4
        answers = [r.strip() for r in frame["response"].to_list()]
        quality = relevance(frame["prompt"].to_list(), answers)
        frame = frame.with_columns(pl.Series("answer", answers), pl.Series("q", quality))
        per_prompt = {"distinct": [], "distinct_answers": [], "quality": [], "short": []}
        for _, group in frame.group_by("prompt_id"):
            texts = group["answer"].to_list()
            normal = {" ".join(re.sub(r"[^\w\s]", " ", t.lower()).split()) for t in texts}
            per_prompt["distinct"].append(group["class_id"].n_unique())
            per_prompt["distinct_answers"].append(len(normal))
            per_prompt["quality"].append(sum(group["q"]) / len(texts))
            per_prompt["short"].append(sum(0 < len(t.split()) <= 4 for t in texts) / len(texts))
        for metric, values in per_prompt.items():
            assert summary["policies"][name][metric] == pytest.approx(sum(values) / 3), (name, metric)
    for pair, diffs in summary["differences"].items():
        a, b = pair.split(" - ")
        for metric, d in diffs.items():
            expected = summary["policies"][a][metric] - summary["policies"][b][metric]
            assert d["mean"] == pytest.approx(expected) and d["n"] == 3
            assert d["interval"][0] <= d["mean"] + 1e-9 and d["mean"] - 1e-9 <= d["interval"][1]
    curves = summary["curves"]
    for name, log in (("darling-rl", "rl"), ("grpo-rl", "rl-grpo")):
        history = [h for h in json.loads((run / log / "log_history.json").read_text()) if "darling/reward" in h]
        assert curves[name]["reward"] == [h["darling/reward"] for h in history] and curves[name]["step"] == [1, 2]


@pytest.mark.slow
def test_rerun_skips_every_stage_and_regenerates_nothing(chain):
    run, _, first_seconds = chain
    before = files_and_mtimes(run)
    records = (run / "stages.json").read_bytes()
    start = time.monotonic()
    result = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("skipped") == len(STAGES)
    assert "done in" not in result.stdout.replace("done earlier in", "")
    assert seconds < max(30.0, first_seconds / 3)
    assert (run / "stages.json").read_bytes() == records
    after = files_and_mtimes(run)
    changed = {p for p in before if after.get(p) != before[p]}
    assert changed <= {"report.md", "manifest.json"} and set(after) == set(before)


@pytest.mark.slow
def test_interrupted_stage_resumes_through_its_own_api(chain):
    run, _, _ = chain
    book = json.loads((run / "stages.json").read_text())
    book["stages"]["eval-novelty"]["status"] = "running"  # as if killed during the stage
    del book["stages"]["compare"]
    (run / "stages.json").write_text(json.dumps(book))
    (run / "eval-novelty" / "darling-rl" / "metrics.json").unlink()
    shards = {p: p.stat().st_mtime_ns for p in (run / "eval-novelty").rglob("part-*.parquet")}
    result = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("skipped") == len(STAGES) - 2  # eval-novelty, and compare after it
    assert "[8/9] eval-novelty: done in" in result.stdout and "[9/9] compare: done in" in result.stdout
    assert (run / "eval-novelty" / "darling-rl" / "metrics.json").exists()
    assert {p: p.stat().st_mtime_ns for p in shards} == shards  # the stored generations were reused, not redone
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert records["eval-novelty"]["status"] == "done" and records["eval-novelty"]["attempts"] == 2


@pytest.mark.slow
def test_another_option_into_the_finished_run_is_refused(chain):
    run, _, _ = chain
    before = files_and_mtimes(run)
    assert_one_line_error(
        darling(
            "pipeline",
            "--preset",
            "cpu",
            "--output",
            run,
            *SMALL[:-2],
            "--set",
            "rl_max_completion_length=24",
            timeout=120,
        ),
        "rl_max_completion_length=16",
        "rl_max_completion_length=24",
    )
    assert_one_line_error(darling("pipeline", "--preset", "paper", "--output", run, timeout=120), "preset=")
    assert files_and_mtimes(run) == before  # refused before anything was written


@pytest.mark.slow
def test_smollm2_rollouts_as_the_datagen_stage(tmp_path, smollm2_dir):
    """datagen=generate: SmolLM2 rollouts through the hf engine instead of the CHAMP import."""
    from darling.pipeline.commands import write_inputs
    from darling.pipeline.stages import Context, datagen, pairs

    with pytest.raises(UserInputError, match="no-cross-model-only"):
        build_config("cpu", tmp_path, datagen="generate", rollout_models="smollm2")
    config = build_config(
        "cpu",
        tmp_path / "run",
        datagen="generate",
        rollout_models="smollm2",
        datagen_problems="arithmetic",
        datagen_limit=2,
        rollout_n=2,
        rollout_max_tokens=12,
        cross_model_only="false",
    )
    write_inputs(config)  # as run_pipeline does first: the generators file the step names
    ctx = Context(config, progress=False, log=lambda _: None)
    summary = datagen(ctx)
    assert (summary["rollouts"], summary["problems"], summary["models"]) == (4, 2, ["smollm2"])
    assert summary["new_this_run"] == 4 and datagen(ctx)["new_this_run"] == 0  # a second call resumes: nothing new
    assert pairs(ctx)["pairs"] <= 2  # same-answer pairs of one model's samples (maybe none at 12 tokens)
