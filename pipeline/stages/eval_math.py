"""Math before and after RL (``eval-math/``): pass@k of every policy in one ``eval math`` command, each
prompted as RL trained it and all drawing the same sampling seeds (``--paired-seeds``: a paired comparison)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.core.numbers import pct
from darling.evals.config import MathEvalConfig
from darling.pipeline.folders import EVAL_MATH_FOLDER, RL_FOLDER
from darling.pipeline.rl_steps import policies, rl_step
from darling.pipeline.script import Block, engine_where, json_text
from darling.pipeline.stage import Plan, Records, Stage, memoised, read_json
from darling.pipeline.steps import Step, input_path, run_relative, shown, stage_config, threads

GENERATORS_FILE = "eval-math.json"  # RUN/inputs/: every policy as an eval-math generator


@memoised
def eval_math_step(plan: Plan) -> Step:
    c = plan.config
    wired = {
        "output": EVAL_MATH.folder(c.run),
        "generators": input_path(c, GENERATORS_FILE),
        "seed": c.seed,
        "paired_seeds": True,  # identical weights would give identical samples
        **threads(c, MathEvalConfig, alone=True),  # one process where there were one per policy
    }
    config = stage_config(c, "eval_math", MathEvalConfig, wired)
    return Step("eval-math", ("eval", "math"), config, explicit=shown(c, wired, "eval_math"))


def eval_math_block(plan: Plan) -> Block:
    c = plan.config
    models = ", ".join(f"{name} = {run_relative(model, c.run)}" for name, model in policies(plan).items())
    step = eval_math_step(plan)
    lines = [f"# {models}; all draw the same seeds (paired), prompted as RL trained them", step.guarded(c.run)]
    return Block(EVAL_MATH.name, engine_where(step.config, "pass@k"), lines, [step])


def eval_generator(plan: Plan, name: str, model: str) -> dict:
    """One eval-math generator, prompted as the policy was trained (the rl template, no system prompt)."""
    template = rl_step(plan).config.user_template
    return {"name": name, "model": model, "system_prompt": None, "user_template": template}


def eval_math_inputs(plan: Plan) -> dict[Path, str]:
    generators = [eval_generator(plan, name, model) for name, model in policies(plan).items()]
    return {input_path(plan.config, GENERATORS_FILE): json_text({"generators": generators})}


def eval_math_summary(plan: Plan) -> dict[str, Any]:
    step = eval_math_step(plan)
    metrics = read_json(Path(step.config.output) / "metrics.json")
    models = {
        name: {"n": m["n"], "problems": m["mean"]["problems"], "pass@k": m["mean"]["pass@k"]}
        for name, m in metrics["models"].items()
    }
    config = step.config
    return {
        "datasets": metrics["datasets"],
        "ks": sorted(metrics["ks"]),
        "models": models,
        "model_paths": policies(plan),
        "n": config.n,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "engine": config.engine,
        "paired_seeds": True,
    }


def eval_math_section(s: dict[str, Any]) -> list[str]:
    ks = s["ks"]
    lines = [
        f"{', '.join(s['datasets'])}: n = {s['n']} samples per problem at temperature {s['temperature']}, "
        f"≤ {s['max_tokens']} tokens, graded by math-verify; unbiased pass@k in % (mean over datasets).",
        "",
        "| model | path | problems | " + " | ".join(f"pass@{k}" for k in ks) + " |",
        "| --- | --- | ---: |" + " ---: |" * len(ks),
    ]
    folder = EVAL_MATH.name
    for name, m in s["models"].items():
        cells = " | ".join(pct(m["pass@k"].get(str(k))) for k in ks)
        lines.append(f"| {name} | `{s['model_paths'].get(name, '')}` | {m['problems']} | {cells} |")
    return [
        *lines,
        "",
        f"[report]({folder}/report.md) · [metrics]({folder}/metrics.json). Paired comparison: every model draws the "
        "same sampling seeds, so identical weights would give identical samples.",
        "",
    ]


def policy_note(records: Records) -> list[str]:
    """How far RL moved the DARLING policy (from RL's record): a zero change means the rows above are one model."""
    runs = (records.get(RL_FOLDER, {}).get("summary") or {}).get("runs") or {}
    change = (runs.get("darling") or {}).get("max_weight_change")
    if change is None:
        return []
    if change == 0:
        return [
            "**RL left the weights unchanged (section 5): both rows evaluate the same model, so their "
            "difference is sampling noise only.**",
            "",
        ]
    return [
        f"The DARLING policy differs from the policy it started from by at most {change:.2e} per weight (section 5).",
        "",
    ]


EVAL_MATH = Stage(
    EVAL_MATH_FOLDER,
    "Math before/after RL: pass@k",
    eval_math_block,
    eval_math_summary,
    eval_math_section,
    runs=lambda plan: plan.config.evaluate_math,
    note=policy_note,
    inputs=eval_math_inputs,
    problems=lambda plan: list(eval_math_step(plan).config.problems),
    tables=("eval_math",),
)
