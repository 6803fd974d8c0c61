"""The stage registry (``pipeline/stages/``): each stage defined once, and the chain's blocks, records, report
sections and SLURM jobs derived from it."""

import pytest

from darling.pipeline import build_config
from darling.pipeline.config import PipelineConfig
from darling.pipeline.launch_slurm import stage_job
from darling.pipeline.report import render_report
from darling.pipeline.schema import TABLES
from darling.pipeline.stage import Plan
from darling.pipeline.stages import STAGE_NAMES, STAGES, active_stages, blocks


def test_every_stage_has_one_name_and_its_table():
    assert len(set(STAGE_NAMES)) == len(STAGES)
    assert all(stage.table in stage.tables for stage in STAGES), [s.name for s in STAGES if s.table not in s.tables]


def test_each_table_is_read_by_one_room_and_declared_once_on_the_config():
    """A table is declared once, as a PipelineConfig field with its Section (``TABLES``), and named by one room
    (``Stage.tables``): a table no room reads, or one two rooms claim, fails here."""
    from dataclasses import fields

    from darling.pipeline.config import PipelineConfig

    claimed = [name for stage in STAGES for name in stage.tables]
    assert len(claimed) == len(set(claimed)) and set(claimed) == set(TABLES), set(claimed) ^ set(TABLES)
    table_fields = {f.name for f in fields(PipelineConfig) if f.type in ("dict[str, Any]", dict)} - {"slurm"}
    assert table_fields == set(TABLES), table_fields ^ set(TABLES)  # slurm: the launcher's table, no stage's


@pytest.mark.parametrize(
    ("preset", "skipped"),
    [
        ("cpu", {"world", "eval-creative"}),
        ("chat-tiny", {"world", "rl-warmup", "datagen", "pairs", "labels", "eval-math"}),
        ("cpu-world", {"rl-warmup", "eval-math", "eval-creative"}),
    ],
)
def test_blocks_records_and_report_sections_follow_the_registry(tmp_path, preset, skipped):
    config = build_config(preset, tmp_path / "run")
    names = [s.name for s in active_stages(Plan(config))]
    assert names == [n for n in STAGE_NAMES if n not in skipped]
    assert [block.name for block in blocks(Plan(config))] == names
    records = {name: {"status": "done", "seconds": 1.0} for name in names}  # done, no summary: headers only
    report = render_report(Plan(config), records)
    assert [line.split(". ", 1)[0] for line in report.splitlines() if line.startswith("## ")] == [
        f"## {i}" for i in range(1, len(names) + 1)
    ]
    for stage in active_stages(Plan(config)):
        assert f"## {names.index(stage.name) + 1}. {stage.title}" in report


def test_slurm_jobs_take_their_placement_from_the_registry(tmp_path):
    config = build_config("paper", tmp_path / "run", nodes="2", gpus_per_node="8", launcher="slurm")
    jobs = {block.name: stage_job(i, block, config) for i, block in enumerate(blocks(Plan(config)), 1)}
    placed = {stage.name: stage.placement for stage in active_stages(Plan(config))}
    assert {n for n, job in jobs.items() if job.nodes == 2} == {n for n, p in placed.items() if p == "nodes"}
    assert {n for n, job in jobs.items() if job.gpus_per_node == 0} == {n for n, p in placed.items() if p == "cpu"}
    assert {"classifier", "rl"} <= {n for n, p in placed.items() if p == "nodes"}  # the training stages span nodes


def test_a_runs_plan_builds_each_commands_config_once(tmp_path, monkeypatch):
    """Every block, the input files and the notes read one Plan: each command's config is made (and checked) once,
    however many stages read it (the policies' names, the RL prompts, the eval-math template all come from rl)."""
    import collections

    from darling.core.config import CommandConfig
    from darling.pipeline.stages import input_files, plan_notes

    made: collections.Counter[str] = collections.Counter()
    check = CommandConfig.validate
    monkeypatch.setattr(CommandConfig, "validate", lambda self: made.update([type(self).__name__]) or check(self))
    plan = Plan(build_config("cpu", tmp_path / "run"))
    made.clear()  # the pipeline's own config
    steps = [step for block in blocks(plan) for step in block.steps]
    input_files(plan), plan_notes(plan), blocks(plan)
    assert made == collections.Counter(type(step.config).__name__ for step in steps)
    assert made["RLTrainConfig"] == 3  # the warm-up, DARLING and GRPO


def test_a_step_is_kept_by_its_builder_and_arguments_not_by_a_name(tmp_path):
    """Steps are memoised by the plan, keyed by the builder and its bound arguments: one call however it is spelled,
    another argument another step, and another plan its own."""
    from darling.pipeline.rl_steps import arm_step, rl_step

    plan = Plan(build_config("cpu-arms", tmp_path / "run"))
    assert rl_step(plan) is rl_step(plan, grpo=False) is rl_step(plan, False)
    assert rl_step(plan, grpo=True) is not rl_step(plan)
    assert rl_step(plan, grpo=True).config.method == "grpo"
    assert arm_step(plan, "darling-ngram") is not arm_step(plan, "passk")
    assert rl_step(Plan(build_config("cpu-arms", tmp_path / "run"))) is not rl_step(plan)


def test_the_manifest_lists_the_problem_sets_each_room_reads(tmp_path):
    """Each room names the problem sets its commands read (``Stage.problems``); the report lists them without
    reaching into a room: paper-tiny's generated rollouts and its pass@k sets, each once, packaged ones as such."""
    from darling.pipeline.report import used_inputs
    from darling.pipeline.stages.datagen import DATAGEN
    from darling.pipeline.stages.eval_math import EVAL_MATH

    plan = Plan(build_config("paper-tiny", tmp_path / "run"))
    assert DATAGEN.problems(plan) == ["arithmetic"]  # generated rollouts on the built-in set
    assert "aime24" in EVAL_MATH.problems(plan)
    listed = [e for e in used_inputs(plan, {}) if e["role"] == "problems"]
    assert [e["name"] for e in listed] == [*DATAGEN.problems(plan), *EVAL_MATH.problems(plan)]
    assert [e["note"] for e in listed if e["name"] == "aime24"] == ["packaged with darling"]


def test_the_rl_step_table_is_read_from_the_training_log_table():
    """The report's per-step columns are the training-log metrics that name a column, in the table's order; a
    GRPO run shows the share DARLING's term would have changed, in parentheses, where DARLING's shows its own."""
    from darling.core.training_log import GROUPS_CHANGED, PAIRS_SAVED, STEP_COLUMNS, WOULD_CHANGE
    from darling.pipeline.rl_steps import run_section

    darling = {"step": 1, GROUPS_CHANGED.key: 0.25, "darling/classifier_pairs": 56, PAIRS_SAVED.key: 3, "loss": 0.5}
    grpo = {"step": 1, GROUPS_CHANGED.key: 0.0, WOULD_CHANGE.key: 0.5}
    summary = {
        **dict.fromkeys(("reward", "policy", "problems", "num_generations", "max_completion_length"), "x"),
        **dict.fromkeys(("learning_rate", "temperature", "max_weight_change"), None),
        "steps_with_nonzero_reward": 1,
        "checkpoints_left": [],
    }
    rows = [run_section({**summary, "steps": [step]}, "rl") for step in (darling, grpo)]
    header = next(line for line in rows[0] if line.startswith("| step |"))
    assert header == "| step | " + " | ".join(m.column for m in STEP_COLUMNS) + " |"
    cells = [next(line for line in r if line.startswith("| 1 |")).split(" | ") for r in rows]
    at = {m.key: i + 1 for i, m in enumerate(STEP_COLUMNS)}
    assert cells[0][at[GROUPS_CHANGED.key]] == "25.0%" and cells[1][at[GROUPS_CHANGED.key]] == "(50.0%)"
    assert cells[0][at["darling/classifier_pairs"]] == "56 (3)" and cells[1][at["darling/classifier_pairs"]] == "– (–)"
    assert cells[0][at["loss"]].startswith("0.5000")


def test_a_step_wiring_a_key_its_table_does_not_declare_is_refused(tmp_path):
    """One call builds every step's settings (``stage_config``): a key a room wires that its table's Section does not
    declare (and so does not refuse in the table) would silently replace a user's value; it is refused when the step
    is built, so every preset's dry run checks every step's wiring."""
    from darling.evals.config import NoveltyConfig
    from darling.pipeline.steps import stage_config

    config = build_config("cpu", tmp_path / "run")
    wired = {"output": tmp_path / "x", "model": ["a=b"], "classifier": "c", "seed": 0}
    assert stage_config(config, "eval_novelty", NoveltyConfig, wired).k == 8
    with pytest.raises(ValueError, match=r"\[eval_novelty\]: wired \['temperature'\], not declared in its Section"):
        stage_config(config, "eval_novelty", NoveltyConfig, {**wired, "temperature": 0.2})
    assert stage_config(
        config, "eval_novelty", NoveltyConfig, {**wired, "temperature": 0.2}, also_wired=("temperature",)
    )


@pytest.mark.parametrize("jobs, train_chunks", [(1, 1), (2, 2), (3, 2), (6, 3)])
def test_eval_novelty_splits_the_policies_so_the_jobs_slots_stay_busy(tmp_path, jobs, train_chunks):
    """One eval novelty command per chunk of a prompt set's policies (the classifier loaded once per command): every
    (set, policy) once, and no chunk over one slot's share of the work (cpu: 24 held-out and 48 training prompts)."""
    from darling.pipeline.stages.eval_novelty import eval_novelty_steps, policy_chunks

    plan = Plan(build_config("cpu", tmp_path / "run", jobs=jobs))
    chunks = policy_chunks(plan)
    policies = ["base", "darling-rl", "grpo-rl"]
    assert {folder: [n for chunk in c for n in chunk] for folder, c in chunks.items()} == {
        "eval-novelty": policies, "eval-novelty-train": policies
    }  # fmt: skip
    assert len(chunks["eval-novelty-train"]) == train_chunks and len(chunks["eval-novelty"]) == 1 + (jobs >= 6)
    work = [step.config.limit * len(step.config.model) for step in eval_novelty_steps(plan)]
    assert work == sorted(work, reverse=True)  # the largest first
    assert max(work) <= max(48, (3 * 24 + 3 * 48) / jobs + 24)  # no command far over a slot's share
    outputs = {(p.parent.name, p.name) for step in eval_novelty_steps(plan) for _, p in step.config.model_folders()}
    assert outputs == {(folder, name) for folder in chunks for name in policies}


def test_the_rl_section_names_the_engine_that_trained():
    """Under --engine verl the report said "TRL GRPOTrainer" (issue 50): it names the engine the summary records."""
    from darling.pipeline.stages.rl import rl_section

    for engine, trainer in (("trl", "TRL GRPOTrainer;"), ("verl", "verl main_ppo;")):
        summary = {"runs": {}, "side_by_side": False, "served_classifier": False, "engine": engine}
        assert rl_section(summary)[0].startswith(trainer)


@pytest.mark.parametrize("preset", PipelineConfig.preset_names())
def test_every_presets_blocks_wire_only_the_keys_their_tables_declare(tmp_path, preset):
    """Every preset's plan built: each step's wired keys checked against its table's Section (``check_wired``) here,
    not first when a run reaches that stage."""
    config = build_config(preset, tmp_path / "run")
    assert [block.name for block in blocks(Plan(config))] == [s.name for s in active_stages(Plan(config))]
