"""Stage 7, novelty (``eval-novelty/<policy>/``): each policy's responses to the held-out prompts, partitioned by the
fresh classifier (NoveltyBench-style distinct and utility); with ``evaluate_training_prompts`` also on the prompts
the RL runs trained on (``eval-novelty-train/<policy>/``), with the same sampling. One ``eval novelty`` command per
prompt set evaluates every policy (the prompts, classifier and reward model loaded once)."""

from __future__ import annotations

from typing import Any

from darling.core.numbers import fmt
from darling.evals.config import NoveltyConfig
from darling.evals.prompt_metrics import PROMPT_METRIC_NAMES, PROMPT_METRICS, mean_key
from darling.pipeline.script import Block, engine_where, side_by_side, start_in_background, stop_background
from darling.pipeline.stage import Plan, Stage, prompts_link, read_json
from darling.pipeline.stages.classifier import CLASSIFIER
from darling.pipeline.stages.rl import REWARD_SERVERS_FILE, policies, reward_serve_step, reward_urls, training_prompts
from darling.pipeline.steps import Step, shown, stage_config, threads

NOVELTY_TRAIN = "eval-novelty-train"  # RUN/eval-novelty-train/: the same evaluation on the RL prompts


def novelty_sets(plan: Plan) -> dict[str, dict[str, Any]]:
    """Folder -> the prompts it evaluates (none: [eval_novelty]'s own, the held-out set)."""
    held_out: dict[str, dict[str, Any]] = {EVAL_NOVELTY.name: {}}
    return {**held_out, **({NOVELTY_TRAIN: training_prompts(plan)} if plan.config.evaluate_training_prompts else {})}


def eval_novelty_steps(plan: Plan) -> list[Step]:
    """One step per prompt set: the held-out prompts ([eval_novelty]) and, with ``evaluate_training_prompts``, the RL
    prompts (``eval-novelty-train/``) with the same sampling; each evaluates every policy."""
    return plan.once(
        ("eval-novelty",), lambda: [_step(plan, folder, prompts) for folder, prompts in novelty_sets(plan).items()]
    )


def _step(plan: Plan, folder: str, prompts: dict[str, Any]) -> Step:
    c = plan.config
    wired = {
        "output": c.run / folder,  # each policy in its own folder below: --model NAME=PATH writes OUTPUT/NAME/
        **prompts,
        "model": [f"{name}={model}" for name, model in policies(plan).items()],  # novelty seeds: the same for each
        "classifier": str(CLASSIFIER.folder(c.run)),
        "seed": c.seed,
        **threads(c, NoveltyConfig),
        **({"reward_model_urls": reward_urls(plan)} if c.serve_reward_model else {}),
    }
    config = stage_config(c, "eval_novelty", NoveltyConfig, **wired)
    return Step(folder, ("eval", "novelty"), config, explicit=shown(c, wired, "eval_novelty"))


def held_out_settings(plan: Plan) -> NoveltyConfig:
    """The held-out evaluation's settings (its prompts, k, temperature), as every policy's step has them."""
    return eval_novelty_steps(plan)[0].config


def eval_novelty_block(plan: Plan) -> Block:
    c = plan.config
    steps = eval_novelty_steps(plan)
    where = engine_where(steps[0].config, "generation; the fresh classifier in process")
    lines = side_by_side(steps, c.run, c.jobs)
    if c.serve_reward_model:  # utility from the reward model's replicas, started again for this stage
        server = reward_serve_step(plan, EVAL_NOVELTY.name)
        ready = REWARD_SERVERS_FILE
        lines = [*start_in_background(c, server, EVAL_NOVELTY.name, ready), *lines, stop_background(server)]
        steps = [server, *steps]
    return Block(EVAL_NOVELTY.name, where, lines, steps)


def eval_novelty_summary(plan: Plan) -> dict[str, Any]:
    """Per policy its means on the held-out prompts (``models``) and, with ``evaluate_training_prompts``, on the RL
    prompts (``train_models``, ``train_prompts``)."""
    summary: dict[str, Any] = {"models": {}}
    for step in eval_novelty_steps(plan):
        train = step.name == NOVELTY_TRAIN
        for model, output in step.config.model_folders():
            m = read_json(output / "metrics.json")
            summary.setdefault("train_models" if train else "models", {})[output.name] = {
                "model": model,
                **{k: m[k] for k in ("n_prompts", "k", *map(mean_key, PROMPT_METRIC_NAMES), "threshold", "partition")},
            }
            summary.update(quality=m["quality"], patience=m["utility"]["patience"])
        summary["train_prompts" if train else "prompts"] = str(step.config.prompts)
    return summary


def eval_novelty_section(s: dict[str, Any]) -> list[str]:
    lines = [
        f"Held-out prompts {prompts_link(s['prompts'])}, partitioned by the freshly exported classifier. "
        f"Quality: {s['quality']}.",
        "",
        *_novelty_table(s["models"], EVAL_NOVELTY.name),
    ]
    if s.get("train_models"):
        lines += [
            f"The prompts the RL runs trained on ({prompts_link(s['train_prompts'])}), the same sampling:",
            "",
            *_novelty_table(s["train_models"], NOVELTY_TRAIN),
        ]
    return lines


def _novelty_table(models: dict[str, Any], folder: str) -> list[str]:
    lines = [
        "| model | prompts | k | " + " | ".join(f"mean {m.label}" for m in PROMPT_METRICS) + " | threshold | report |",
        "| --- | ---: | ---: |" + " ---: |" * len(PROMPT_METRICS) + " ---: | --- |",
    ]
    for name, m in models.items():
        means = " | ".join(fmt(m.get(mean_key(metric.name))) for metric in PROMPT_METRICS)  # an older run: –
        lines.append(
            f"| {name} | {m['n_prompts']} | {m['k']} | {means} | {fmt(m['threshold'])} | "
            f"[report]({folder}/{name}/report.md) |"
        )
    return [*lines, ""]


EVAL_NOVELTY = Stage(
    "eval-novelty",
    "Novelty (NoveltyBench-style distinct / utility)",
    eval_novelty_block,
    eval_novelty_summary,
    eval_novelty_section,
)
