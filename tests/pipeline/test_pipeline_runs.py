"""`darling pipeline` run for real: the whole cpu chain at reduced sizes with the real components (CHAMP, the SmolLM2
judge and policy, MiniLM, TRL), each stage run as its commands, rerun and resumed (paper-tiny and chat-tiny, the GPU
chains' commands with tiny models, have their own modules)."""

import hashlib
import json
import re
import time
from pathlib import Path

import pytest
from helpers import CPU_CHAIN_TIMEOUT, assert_one_line_error, chain_stages, darling

CPU_STAGES = chain_stages("cpu")  # the math track's chain, from the registry

# Every stage shrunk: 2 CHAMP problems, 3 judged pairs, 3 classifier steps, 2 RL steps per run, tiny evaluations. The
# judge and the policy are the tiny random Qwen3 over 259 byte ids (tiny:bytes-lm): this chain tests the cpu preset's
# commands, their folders, records, report and resumption; what the real SmolLM2 does as a judge, a policy and a
# generator is tested where a test asserts it (tests/datagen, tests/rl, tests/evals).
TINY_LM = "tiny:bytes-lm"
SMALL = [
    f"--set={item}"
    for item in (
        "datagen.limit=2",
        "pairs.max_pairs_per_problem=2",
        f"labels.judge_model={TINY_LM}",
        "labels.limit=3",
        "classifier.max_steps=3",
        "classifier.max_tokens_per_response=32",
        "classifier.val_fraction=0.5",  # 30 validation pairs: an AUC interval the floor test below can sit above
        "training_pairs.human_pairs=60",
        f"rl.policy={TINY_LM}",
        "rl.trainable_layers=1",  # of its 2 (the preset trains the top 10 of SmolLM2's 30)
        "rl.max_steps=2",
        "rl.limit=4",  # also the training prompts eval-novelty-train evaluates
        "rl.per_device_train_batch_size=16",  # 2 prompts a step, not the preset's 4: 2 steps show the chain
        "rl.max_completion_length=16",
        "rl.save_steps=100",  # no checkpoint: a 2-step run writes final/ only
        "rl_warmup.max_steps=2",
        "eval_math.limit=2",
        "eval_math.n=2",
        "eval_math.max_tokens=16",
        "eval_novelty.limit=3",
        "eval_novelty.k=4",
        "eval_novelty.max_tokens=16",
    )
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_and_mtimes(run: Path) -> dict[str, int]:
    return {p.relative_to(run).as_posix(): p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def chain(tmp_path_factory, minilm_path):
    """The chain, first stopped by its classifier's floor (raised to what 30 validation pairs cannot show: the whole
    AUC interval below 0.99), then rerun without it: the run resumes at the classifier and completes."""
    run = tmp_path_factory.mktemp("pipeline") / "run"
    start = time.monotonic()
    stopped = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL, "--set=classifier.auc_floor=0.99")
    stopped_records = json.loads((run / "stages.json").read_text())["stages"]
    result = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL, timeout=CPU_CHAIN_TIMEOUT)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return run, result, time.monotonic() - start, (stopped, stopped_records)


@pytest.mark.slow
def test_a_classifier_below_its_floor_stops_the_chain_before_rl_and_the_rerun_resumes(chain):
    """Through the command line: exit 2 and one line naming the figure, the floor and the setting; nothing after the
    classifier ran; the floor is no part of the run's identity, so the rerun without it resumed at the classifier
    (the stages before it skipped) and ran the chain to its end."""
    run, result, _, (stopped, records) = chain
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr
    line = stopped.stderr.strip().splitlines()[-1]
    assert line.startswith("error: classifier: ") and len(stopped.stderr.strip().splitlines()) == 1
    for fragment in ("did not learn its task: validation AUC", "auc_floor = 0.99", "--set classifier.auc_floor"):
        assert fragment in line
    assert records["classifier"]["status"] == "failed" and "rl" not in records and "rl-warmup" in records
    assert result.stdout.count("skipped") == CPU_STAGES.index("classifier")  # every stage before it
    finished = json.loads((run / "stages.json").read_text())["stages"]
    assert finished["classifier"]["attempts"] == 2 and finished["compare"]["status"] == "done"
    floor = finished["classifier"]["summary"]["floor"]
    assert floor["floor"] == 0.7 and floor["passed"] and floor["pairs"] >= 20
    report = (run / "report.md").read_text()
    assert "- **The classifier**: validation AUC" in report and "(the floor: train-classifier's default)" in report


@pytest.mark.slow
def test_whole_cpu_chain_at_reduced_sizes(chain):
    run, result, _, (stopped, _) = chain
    assert "note: the classifier trains on 60 of NoveltyBench's human-labelled pairs by design" in result.stdout
    for i, stage in enumerate(CPU_STAGES, 1):  # the stages before the classifier ran in the stopped first run
        output = stopped.stdout if i <= CPU_STAGES.index("classifier") else result.stdout
        assert f"[{i}/{len(CPU_STAGES)}] {stage}: done in" in output, stage
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert list(records) == CPU_STAGES
    assert all(r["status"] == "done" for r in records.values())
    script = (run / "commands.sh").read_text()
    for name, record in records.items():  # what ran is what commands.sh says
        assert record["commands"] and all(line in script for line in record["commands"]), name
        assert (run / "logs" / f"{name}.log").exists()
    assert (run / "logs" / "rl-grpo.log").exists()  # the two RL runs side by side, each with its own log

    report = (run / "report.md").read_text()
    assert "distinct items" not in report  # naming prompts have no item count: no empty column, no definition
    assert "mean distinct answers (exact)" in report  # the eval-novelty table's columns are the metrics it has
    for title in (
        "Data generation",
        "Same-answer pairs",
        "Judge labels",
        "Equivalence classifier",
        "RL: DARLING",
        "pass@k",
        "Novelty",
        "DARLING against GRPO",
        "What this shows",
        "compare/curves.png",
        "Did DARLING's diversity term act?",  # beside the outcome: the share of groups the term changed
        "**`rl-warmup/`** — reward: quality only (the GRPO warm-up every RL run starts from)",
    ):
        assert title in report, title
    for stage in CPU_STAGES:
        assert f"| {stage} | done |" in report and f"[`{stage}/`]({stage}/)" in report
    assert "quality = 1" in report  # eval novelty has no reward model, said so

    summaries = {name: r["summary"] for name, r in records.items()}
    assert summaries["datagen"]["rollouts"] == 2 * 72 and summaries["datagen"]["problems"] == 2
    assert 1 <= summaries["pairs"]["pairs"] <= 4
    counts = summaries["labels"]["counts"]
    assert sum(counts.values()) == 3 and counts["failed"] == 0  # choice: every verdict parses; still reported
    data = summaries["classifier"]["data"]
    assert data["by_design"] and not data["fallback"] and data["by_source"] == {"judge": 0, "noveltybench": 60}
    assert {"accuracy", "roc_auc", "threshold"} <= set(summaries["classifier"]["validation"])
    assert set(summaries["classifier"]["checks"]) == {"noveltybench-heldout", "minimal-pairs", "item-pairs-heldout"}
    assert "**NoveltyBench's 100 held-out human pairs** (100 pairs, 50 equivalent)" in report
    runs = summaries["rl"]["runs"]
    for name in ("darling", "grpo"):
        steps = runs[name]["steps"]
        assert [s["step"] for s in steps] == [1, 2] and all(0 <= s["darling/quality"] <= 1 for s in steps)
        assert runs[name]["problems"] == "naming-train" and runs[name]["quality"] == "relevant-short-answer"
        assert runs[name]["checkpoints_left"] == []  # pruned by rl-train once final was saved
    assert runs["grpo"]["reward"].startswith("quality only") and summaries["rl"]["side_by_side"]
    warmup = str(run / "rl-warmup" / "final")
    warmup_run = summaries["rl-warmup"]["run"]  # the warm-up is its own first stage
    assert runs["darling"]["policy"] == runs["grpo"]["policy"] == warmup and warmup_run["policy"] == TINY_LM
    assert [s["step"] for s in warmup_run["steps"]] == [1, 2] and runs["darling"]["strict_length"]
    term = summaries["compare"]["term"]["darling-rl"]
    assert term["applied"] and term["steps"] == 2 and not summaries["compare"]["term"]["grpo-rl"]["applied"]
    assert f"changed **{term['share']:.0%}**" in report or "changed **none**" in report
    assert all(s["reward"] == pytest.approx(s["darling/quality"]) for s in runs["grpo"]["steps"])
    assert set(summaries["eval-math"]["models"]) == {"base", "darling-rl", "grpo-rl"}
    for m in summaries["eval-novelty"]["models"].values():
        assert m["n_prompts"] == 3 and 1 <= m["mean_distinct"] <= 4 and m["mean_quality"] == 1
    # the prompts the runs trained on, evaluated and compared too; the report leads with them
    assert {name: m["n_prompts"] for name, m in summaries["eval-novelty"]["train_models"].items()} == {
        "base": 4, "darling-rl": 4, "grpo-rl": 4,
    }  # fmt: skip
    assert (
        summaries["compare"]["train"]["prompts"] == 4 and summaries["compare"]["train"]["prompt_set"] == "naming-train"
    )
    trained, held_out = report.index("On the prompts the RL runs trained on"), report.index("On held-out prompts")
    assert report.index("Did DARLING's diversity term act?") < trained < held_out
    assert "covers prompts, not runs" in report[held_out:]
    assert_comparison_recomputes_from_the_generations(run, summaries["compare"])

    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "done" and manifest["command_line"].startswith("darling pipeline --preset cpu")
    assert manifest["config"]["rl"]["max_steps"] == 2 and manifest["versions"]["darling"]
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
    import polars as pl

    from darling.core.quality import RelevantShortAnswer

    relevance = RelevantShortAnswer(4, strict=summary["strict_length"])  # the quality the runs trained on
    novelty = summary["novelty"]
    assert json.loads((run / "compare" / "compare.json").read_text())["novelty"] == novelty
    assert novelty["prompts"] == 3 and summary["prompt_set"] == "naming-heldout"
    for name in ("base", "grpo-rl", "darling-rl"):
        folder = run / "eval-novelty" / name
        generations = pl.read_parquet(folder / "generations" / "part-*.parquet").filter(pl.col("status") == "ok")
        classes = pl.read_parquet(folder / "scores.parquet").select("prompt_id", "sample_index", "class_id")
        frame = generations.join(classes, on=["prompt_id", "sample_index"]).sort("prompt_id", "sample_index")
        assert frame.height == 3 * 4
        answers = [r.strip() for r in frame["response"].to_list()]
        frame = frame.with_columns(
            pl.Series("answer", answers), pl.Series("q", relevance(frame["prompt"].to_list(), answers))
        )
        per_prompt: dict[str, list[float]] = {"distinct": [], "distinct_answers": [], "quality": [], "short": []}
        for _, group in frame.group_by("prompt_id"):
            texts = group["answer"].to_list()
            normal = {" ".join(re.sub(r"[^\w\s]", " ", t.lower()).split()) for t in texts}
            per_prompt["distinct"].append(group["class_id"].n_unique())
            per_prompt["distinct_answers"].append(len(normal))
            per_prompt["quality"].append(sum(group["q"]) / len(texts))
            per_prompt["short"].append(sum(0 < len(t.split()) <= 4 for t in texts) / len(texts))
        for metric, values in per_prompt.items():
            assert novelty["policies"][name][metric] == pytest.approx(sum(values) / 3), (name, metric)
    for pair, diffs in novelty["differences"].items():
        a, b = pair.split(" - ")
        for metric, d in diffs.items():
            if metric == "distinct_items":  # the item count: no naming prompt has one
                assert novelty["policies"][a][metric] is None and (d["mean"], d["n"]) == (None, 0)
                continue
            expected = novelty["policies"][a][metric] - novelty["policies"][b][metric]
            assert d["mean"] == pytest.approx(expected) and d["n"] == 3
            assert d["interval"][0] <= d["mean"] + 1e-9 and d["mean"] - 1e-9 <= d["interval"][1]
    assert set(summary["math"]["policies"]) == {"base", "grpo-rl", "darling-rl"}
    for name, log in (("darling-rl", "rl"), ("grpo-rl", "rl-grpo")):
        history = [h for h in json.loads((run / log / "log_history.json").read_text()) if "darling/reward" in h]
        curve = summary["curves"][name]
        assert curve["reward"] == [h["darling/reward"] for h in history] and curve["step"] == [1, 2]


@pytest.mark.slow
def test_rerun_skips_every_stage_and_regenerates_nothing(chain):
    run, _, first_seconds, _ = chain
    before = files_and_mtimes(run)
    records = (run / "stages.json").read_bytes()
    start = time.monotonic()
    result = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("skipped") == len(CPU_STAGES)
    assert "done in" not in result.stdout.replace("done earlier in", "")
    assert seconds < max(30.0, first_seconds / 3)
    assert (run / "stages.json").read_bytes() == records
    after = files_and_mtimes(run)
    changed = {p for p in before if after.get(p) != before[p]}
    assert changed <= {"report.md", "manifest.json"} and set(after) == set(before)


@pytest.mark.slow
def test_interrupted_stage_resumes_through_its_own_commands(chain):
    """A stage left `running` (the pipeline was killed during it) runs its block again: its commands resume from what
    they stored (eval novelty's generations are reused, not redone) and the stages after it run."""
    run, _, _, _ = chain
    book = json.loads((run / "stages.json").read_text())
    book["stages"]["eval-novelty"]["status"] = "running"  # as if killed during the stage
    del book["stages"]["compare"]
    (run / "stages.json").write_text(json.dumps(book))
    (run / "eval-novelty" / "darling-rl" / "metrics.json").unlink()
    shards = {p: p.stat().st_mtime_ns for p in (run / "eval-novelty").rglob("part-*.parquet")}
    result = darling("pipeline", "--preset", "cpu", "--output", run, *SMALL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("skipped") == len(CPU_STAGES) - 2  # eval-novelty, and compare after it
    n = len(CPU_STAGES)
    assert f"[{n - 1}/{n}] eval-novelty: done in" in result.stdout and f"[{n}/{n}] compare: done in" in result.stdout
    assert (run / "eval-novelty" / "darling-rl" / "metrics.json").exists()
    assert {p: p.stat().st_mtime_ns for p in shards} == shards  # the stored generations were reused, not redone
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert records["eval-novelty"]["status"] == "done" and records["eval-novelty"]["attempts"] == 2


@pytest.mark.slow
def test_another_setting_into_the_finished_run_is_refused(chain):
    run, _, _, _ = chain
    before = files_and_mtimes(run)
    changed = [*SMALL[:-1], "--set=eval_novelty.max_tokens=24"]
    assert_one_line_error(
        darling("pipeline", "--preset", "cpu", "--output", run, *changed, timeout=120),
        "eval_novelty.max_tokens=16",
        "eval_novelty.max_tokens=24",
    )
    assert_one_line_error(darling("pipeline", "--preset", "paper", "--output", run, timeout=120), "preset=")
    assert files_and_mtimes(run) == before  # refused before anything was written
