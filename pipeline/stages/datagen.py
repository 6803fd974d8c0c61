"""Stages 1-3, the math track's data: rollouts (``datagen/``), same-answer pairs (``pairs/``) and the judge's labels
(``labels/``). The chat track (``rollouts_from = none``) runs none of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.datagen.config import JudgeConfig, PairConfig, RolloutConfig
from darling.pipeline.script import Block, engine_where, json_text
from darling.pipeline.stage import Plan, Stage, read_json
from darling.pipeline.steps import Step, input_path, run_relative, shown, stage_config, threads
from darling.pipeline.tables import Section

GENERATORS_FILE = "generators.json"  # RUN/inputs/: [datagen] generators, as datagen rollouts --generators reads it


def _with_rollouts(plan: Plan) -> bool:
    return plan.config.rollouts_from != "none"  # the chat track: no rollouts, pairs or labels


# -- datagen: rollouts ---------------------------------------------------------------------------------------------
def datagen_step(plan: Plan) -> Step:
    return plan.once(("datagen",), lambda: _datagen_step(plan))


def _datagen_step(plan: Plan) -> Step:
    c = plan.config
    wired: dict[str, Any] = {"output": DATAGEN.folder(c.run), "seed": c.seed}
    if c.rollouts_from == "champ":
        config = stage_config(c, "datagen", RolloutConfig, **wired)
        return Step(
            "datagen", ("datagen", "rollouts"), config, {"import_": "champ"}, explicit=shown(c, wired, "datagen")
        )
    generators = input_path(c, GENERATORS_FILE) if c.datagen.get("generators") else None
    wired.update(generators=generators, **threads(c, RolloutConfig))
    config = stage_config(c, "datagen", RolloutConfig, **wired)
    return Step("datagen", ("datagen", "rollouts"), config, explicit=shown(c, wired, "datagen"))


def datagen_block(plan: Plan) -> Block:
    c = plan.config
    step = datagen_step(plan)
    if c.rollouts_from == "champ":
        where = "CPU, seconds: CHAMP's real responses (GPT-3.5, GPT-4, GPT-4 Turbo, PaLM 2)"
    else:
        where = engine_where(step.config, f"{len(c.datagen.get('generators', []))} generators")
    lines = [step.line(c.run)]
    if c.rollouts_from == "generate":
        listed = run_relative(input_path(c, GENERATORS_FILE), c.run)
        lines.insert(0, f"# generators (names, models, each one's own parallelism and memory): {listed}")
    return Block(DATAGEN.name, where, lines, [step])


def datagen_inputs(plan: Plan) -> dict[Path, str]:
    c = plan.config
    if c.rollouts_from == "generate" and c.datagen.get("generators"):
        return {input_path(c, GENERATORS_FILE): json_text({"generators": c.datagen["generators"]})}
    return {}


def datagen_summary(plan: Plan) -> dict[str, Any]:
    import polars as pl

    c = plan.config
    config = datagen_step(plan).config
    if c.rollouts_from == "champ":
        mode = f"CHAMP import: the real responses of 4 models to the first {config.limit or 270} problems"
    else:
        names = ", ".join(s.name for s in config.generator_specs())
        mode = f"generated ({config.engine} engine): {names} on {config.problems}, n = {config.n}"
    from darling.datagen.rollouts import read_rollouts  # loads polars and httpx (the engines)

    rows = read_rollouts(config.output)
    ok = rows.filter(pl.col("status") == "ok")
    return {
        "mode": mode,
        "rollouts": rows.height,
        "failed": rows.height - ok.height,
        "problems": rows["problem_id"].n_unique(),
        "models": sorted(rows["model"].unique().to_list()),
        "with_final_answer": int(ok["extracted_answer"].is_not_null().sum()),
        "correct": int(ok["correct"].fill_null(False).sum()),
    }


def datagen_section(s: dict[str, Any]) -> list[str]:
    return [
        f"{s['mode']}.",
        "",
        f"- rollouts: **{s['rollouts']}** responses to {s['problems']} problems from {len(s['models'])} models "
        f"({', '.join(s['models'])}); failed: {s.get('failed', 0)}",
        f"- with a final answer: {s['with_final_answer']}; correct (math-verify): {s['correct']}",
        "",
    ]


DATAGEN = Stage(
    "datagen",
    "Data generation: rollouts",
    datagen_block,
    datagen_summary,
    datagen_section,
    runs=_with_rollouts,
    inputs=datagen_inputs,
    tables={
        "datagen": Section(
            RolloutConfig, ("output", "seed", "threads", "specs", "model"), ("generators",), "datagen rollouts"
        )
    },
)


# -- pairs ---------------------------------------------------------------------------------------------------------
def pairs_step(plan: Plan) -> Step:
    return plan.once(("pairs",), lambda: _pairs_step(plan))


def _pairs_step(plan: Plan) -> Step:
    c = plan.config
    wired = {"rollouts": DATAGEN.folder(c.run), "output": PAIRS.folder(c.run), "seed": c.seed}
    wired["workers"] = c.threads or 0
    config = stage_config(c, "pairs", PairConfig, **wired)
    return Step("pairs", ("datagen", "pairs"), config, explicit=shown(c, wired, "pairs"))


def pairs_block(plan: Plan) -> Block:
    step = pairs_step(plan)
    return Block(PAIRS.name, "CPU (math-verify), seconds to minutes", [step.line(plan.run)], [step])


def pairs_summary(plan: Plan) -> dict[str, Any]:
    config = pairs_step(plan).config
    s = read_json(Path(config.output) / "summary.json")
    return {**s, "cross_model_only": config.cross_model_only, "max_pairs_per_problem": config.max_pairs_per_problem}


def pairs_section(s: dict[str, Any]) -> list[str]:
    lines = [
        f"Same-answer pairs (math-verify), identical texts dropped, at most {s['max_pairs_per_problem']} per "
        f"problem{', two different models each' if s['cross_model_only'] else ''}.",
        "",
        f"- pairs: **{s['pairs']}** from {s['problems_with_pairs']} problems ({s['responses_used']} responses, "
        f"{s['duplicates_dropped']} duplicates dropped)",
        "",
    ]
    if s["per_model_pair"]:
        rows = [f"| {k} | {v} |" for k, v in s["per_model_pair"].items()]
        lines += ["| models | pairs |", "| --- | ---: |", *rows, ""]
    return lines


PAIRS = Stage(
    "pairs",
    "Same-answer pairs",
    pairs_block,
    pairs_summary,
    pairs_section,
    links=(("summary.json", "pairs/summary.json"),),
    placement="cpu",
    runs=_with_rollouts,
    tables={"pairs": Section(PairConfig, ("rollouts", "output", "seed", "workers"), command="datagen pairs")},
)


# -- labels --------------------------------------------------------------------------------------------------------
def labels_step(plan: Plan) -> Step:
    return plan.once(("labels",), lambda: _labels_step(plan))


def _labels_step(plan: Plan) -> Step:
    c = plan.config
    wired = {
        "pairs": PAIRS.folder(c.run),
        "output": LABELS.folder(c.run),
        "seed": c.seed,
        **threads(c, JudgeConfig, alone=True),
    }
    config = stage_config(c, "labels", JudgeConfig, **wired)
    return Step("labels", ("datagen", "label"), config, explicit=shown(c, wired, "labels"))


def labels_block(plan: Plan) -> Block:
    step = labels_step(plan)
    where = engine_where(step.config, f"judge {step.config.judge_model}, both orders")
    return Block(LABELS.name, where, [step.line(plan.run)], [step])


def labels_summary(plan: Plan) -> dict[str, Any]:
    return read_json(Path(labels_step(plan).config.output) / "summary.json")


def labels_section(s: dict[str, Any]) -> list[str]:
    c, b = s["counts"], s["label_balance"]
    orders = "both orders; a pair is labelled only when both orders agree" if s["both_orders"] else "one order"
    prompt = Path(s["prompt"]).name if s["prompt"] != "default" else "datagen's default"
    return [
        f"Judge `{s['judge']}` ({s['engine']} engine, structured `{s['structured']}`, prompt {prompt}), "
        f"{orders} ({s['judge_calls']} judge calls).",
        "",
        "| verdict | pairs |",
        "| --- | ---: |",
        *[f"| {k} | {v} |" for k, v in c.items()],
        f"| → similar = 1 (same strategy) | {b.get('1', 0)} |",
        f"| → similar = 0 (different) | {b.get('0', 0)} |",
        "",
        "Records (raw judge outputs, verdicts, prompt SHA-256): [`labels/records/`](labels/records/); "
        "labels: [`labels/labelled.parquet`](labels/labelled.parquet).",
        "",
    ]


LABELS = Stage(
    "labels",
    "Judge labels",
    labels_block,
    labels_summary,
    labels_section,
    runs=_with_rollouts,
    tables={"labels": Section(JudgeConfig, ("pairs", "output", "seed", "threads"), command="datagen label")},
)
