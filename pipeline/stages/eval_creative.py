"""Creative writing (``eval-creative/``), when asked: every policy writes EQ-Bench creative writing v3
pieces and one judge scores them at temperature 0, in one ``eval creative`` whose report compares them."""

from __future__ import annotations

from typing import Any

from darling.core.errors import UserInputError
from darling.core.numbers import fmt
from darling.evals.creative_config import CreativeConfig
from darling.pipeline.folders import BASE_POLICY, DARLING_POLICY, EVAL_CREATIVE_FOLDER, GRPO_POLICY
from darling.pipeline.rl_steps import policies
from darling.pipeline.script import Block, engine_where
from darling.pipeline.stage import Plan, Stage, memoised, read_json
from darling.pipeline.steps import Step, shown, stage_config, threads


@memoised
def eval_creative_step(plan: Plan) -> Step:
    """Every policy written and judged in one ``eval creative`` (its report compares them)."""
    c = plan.config
    wired: dict[str, Any] = {
        "output": EVAL_CREATIVE.folder(c.run),
        "model": [f"{name}={model}" for name, model in policies(plan).items()],
        "seed": c.seed,
        "versus": f"{DARLING_POLICY}:{GRPO_POLICY if c.grpo_baseline else BASE_POLICY}",
        **threads(c, CreativeConfig),
    }
    config = stage_config(c, "eval_creative", CreativeConfig, wired)
    return Step("eval-creative", ("eval", "creative"), config, explicit=shown(c, wired, "eval_creative"))


def eval_creative_block(plan: Plan) -> Block:
    step = eval_creative_step(plan)
    where = engine_where(step.config, "every policy writes; the judge scores at temperature 0")
    return Block(EVAL_CREATIVE.name, where, [step.line(plan.run)], [step])


def eval_creative_summary(plan: Plan) -> dict[str, Any]:
    step = eval_creative_step(plan)
    m = read_json(EVAL_CREATIVE.folder(plan.run) / "metrics.json")
    models = {
        name: {"score": w["score"], "interval": w["interval_95"], "judged": w["judged"]}
        for name, w in m["models"].items()
    }
    prompts = max((w["prompts_scored"] for w in m["models"].values()), default=0)
    return {
        "models": models,
        "judge_model": step.config.judge_model,
        "prompts": prompts,
        "iterations": step.config.iterations,
        "versus": m.get("versus"),
    }


def eval_creative_section(s: dict[str, Any]) -> list[str]:
    lines = [
        f"EQ-Bench creative writing v3 rubric, judge `{s['judge_model']}`: {s['prompts']} prompts x {s['iterations']} "
        "iteration(s); score = mean criterion score x 5 (0-100), bootstrap 95% interval over prompts. Details in "
        "[`eval-creative/report.md`](eval-creative/report.md).",
        "",
        "| policy | score | 95% interval | pieces judged |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, m in s["models"].items():
        low, high = m.get("interval") or (None, None)
        lines.append(f"| {name} | {fmt(m.get('score'), 2)} | [{fmt(low, 2)}, {fmt(high, 2)}] | {m.get('judged')} |")
    return [*lines, ""]


def eval_creative_check(plan: Plan) -> None:
    if not plan.config.eval_creative.get("bench_dir"):
        raise UserInputError(
            "evaluate_creative needs [eval_creative] bench_dir (your creative-writing-bench checkout): "
            "--set eval_creative.bench_dir=PATH"
        )


EVAL_CREATIVE = Stage(
    EVAL_CREATIVE_FOLDER,
    "Creative writing (EQ-Bench v3 rubric)",
    eval_creative_block,
    eval_creative_summary,
    eval_creative_section,
    runs=lambda plan: plan.config.evaluate_creative,
    check=eval_creative_check,
    tables=("eval_creative",),
)
