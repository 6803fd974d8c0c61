"""Novelty (``eval-novelty/<policy>/``): each policy's responses to the held-out prompts, partitioned by the
fresh classifier (NoveltyBench-style distinct and utility); with ``evaluate_training_prompts`` also on the prompts
the RL runs trained on (``eval-novelty-train/<policy>/``), with the same sampling. One ``eval novelty`` command per
prompt set evaluates every policy (the prompts, classifier and reward model loaded once)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from darling.core.numbers import fmt
from darling.evals.config import NoveltyConfig
from darling.evals.partitions_config import PartitionsConfig
from darling.evals.partitions_report import CEILING, RESULT_FILE, cell, table_lines
from darling.evals.prompt_metrics import PROMPT_METRIC_NAMES, PROMPT_METRICS, mean_key
from darling.pipeline.folders import BASE_POLICY, CLASSIFIER_FOLDER, EVAL_NOVELTY_FOLDER, NOVELTY_TRAIN
from darling.pipeline.rl_steps import REWARD_SERVERS_FILE, policies, reward_serve_step, reward_urls, training_prompts
from darling.pipeline.script import Block, engine_where, side_by_side, start_in_background, stop_background
from darling.pipeline.stage import Plan, Stage, memoised, prompts_link, read_json
from darling.pipeline.steps import Step, shown, stage_config, table_values, threads

PARTITIONS = "eval-partitions"  # RUN/eval-partitions/: with a checker, how each partition splits and joins answers


def novelty_sets(plan: Plan) -> dict[str, dict[str, Any]]:
    """Folder -> the prompts it evaluates (none: [eval_novelty]'s own, the held-out set)."""
    held_out: dict[str, dict[str, Any]] = {EVAL_NOVELTY.name: {}}
    return {**held_out, **({NOVELTY_TRAIN: training_prompts(plan)} if plan.config.evaluate_training_prompts else {})}


@memoised
def eval_novelty_steps(plan: Plan) -> list[Step]:
    """The held-out prompts ([eval_novelty]) and, with ``evaluate_training_prompts``, the RL prompts
    (``eval-novelty-train/``) with the same sampling: each an ``eval novelty`` command over its share of the policies
    (``policy_chunks``), the largest first."""

    def steps() -> list[Step]:
        weights, chunks = set_weights(plan), policy_chunks(plan)
        units = [(folder, prompts, names) for folder, prompts in novelty_sets(plan).items() for names in chunks[folder]]
        units.sort(key=lambda unit: -weights[unit[0]] * len(unit[2]))  # stable: the held-out set first among equals
        return [_step(plan, folder, prompts, names, len(chunks[folder])) for folder, prompts, names in units]

    return steps()


def set_weights(plan: Plan) -> dict[str, int]:
    """Per prompt set, its prompts per policy: its ``limit`` where every set has one, else the same for each."""
    held_out = table_values(plan.config, "eval_novelty").get("limit")  # a set's own limit, else [eval_novelty]'s
    limits = {folder: prompts.get("limit", held_out) for folder, prompts in novelty_sets(plan).items()}
    if any(limit is None for limit in limits.values()):
        return dict.fromkeys(limits, 1)
    return {folder: int(limit) for folder, limit in limits.items() if limit is not None}


def policy_chunks(plan: Plan) -> dict[str, list[list[str]]]:
    """Per prompt set, its policies in chunks, one ``eval novelty`` command each (a command loads the classifier
    once for its chunk). As few commands as keep the ``jobs`` slots evenly busy: a chunk holds at most the share of
    one slot (every set's prompts x policies / jobs)."""
    names = list(policies(plan))
    weights = set_weights(plan)
    share = sum(weights.values()) * len(names) / plan.config.jobs
    chunks = {}
    for folder, weight in weights.items():
        count = min(len(names), math.ceil(len(names) * weight / share - 1e-9))  # commands this set needs
        size = math.ceil(len(names) / count)
        chunks[folder] = [names[i : i + size] for i in range(0, len(names), size)]
    return chunks


def _wired(plan: Plan, folder: str, prompts: dict[str, Any], names: list[str]) -> dict[str, Any]:
    c = plan.config
    models = policies(plan)
    return {
        "output": c.run / folder,  # each policy in its own folder below: --model NAME=PATH writes OUTPUT/NAME/
        **prompts,
        "model": [f"{name}={models[name]}" for name in names],  # novelty seeds: the same for each policy
        "classifier": str(c.run / CLASSIFIER_FOLDER),
        "seed": c.seed,
        **threads(c, NoveltyConfig),
        **({"reward_model_urls": reward_urls(plan)} if c.serve_reward_model else {}),
    }


def _step(plan: Plan, folder: str, prompts: dict[str, Any], names: list[str], chunks: int) -> Step:
    wired = _wired(plan, folder, prompts, names)
    # eval-novelty-train/: the RL prompts replace the table's held-out ones, its sampling kept (by design)
    config = stage_config(plan.config, "eval_novelty", NoveltyConfig, wired, also_wired=tuple(prompts))
    name = folder if chunks == 1 else f"{folder}-{'+'.join(names)}"  # its log: logs/NAME.log
    return Step(name, ("eval", "novelty"), config, explicit=shown(plan.config, wired, "eval_novelty"))


def held_out_settings(plan: Plan) -> NoveltyConfig:
    """The held-out evaluation's settings (its prompts, k, temperature), as every policy's step has them."""
    return next(s.config for s in eval_novelty_steps(plan) if Path(s.config.output).name == EVAL_NOVELTY.name)


def partitions_step(plan: Plan) -> Step:
    """With a checker: ``eval partitions`` of every policy's answers (``<policy>`` held out, ``<policy>-train`` on
    the RL prompts): how the chain's classifier and the n-gram rule split and join what the checker calls the same."""
    c = plan.config
    found = {
        (Path(step.config.output).name, output.name): output
        for step in eval_novelty_steps(plan)
        for _, output in step.config.model_folders()
    }
    answers = [  # held out first, then the RL prompts; each set's policies in the evaluations' order
        f"{name}{'-train' if folder == NOVELTY_TRAIN else ''}={found[folder, name]}"
        for folder in novelty_sets(plan)
        for name in policies(plan)
    ]
    config = PartitionsConfig(
        output=c.run / PARTITIONS,
        answers=answers,
        classifier=[f"chain={c.run / CLASSIFIER_FOLDER}"],
        checker=str(c.checker),
        seed=c.seed,
    )
    return Step(PARTITIONS, ("eval", "partitions"), config, explicit=("output", "answers", "classifier", "checker"))


def eval_novelty_block(plan: Plan) -> Block:
    c = plan.config
    steps = eval_novelty_steps(plan)
    where = engine_where(steps[0].config, "generation; the fresh classifier in process")
    lines = side_by_side(steps, c.run, c.jobs)
    if c.checker is not None:  # after every evaluation: it reads their answers
        steps = [*steps, partitions_step(plan)]
        lines = [*lines, steps[-1].line(c.run)]
    if c.serve_reward_model:  # utility from the reward model's replicas, started again for this stage
        server = reward_serve_step(plan, EVAL_NOVELTY.name)
        ready = REWARD_SERVERS_FILE
        lines = [*start_in_background(c, server, EVAL_NOVELTY.name, ready), *lines, stop_background(server)]
        steps = [server, *steps]
    return Block(EVAL_NOVELTY.name, where, lines, steps)


def eval_novelty_summary(plan: Plan) -> dict[str, Any]:
    """Per policy its means on the held-out prompts (``models``) and, with ``evaluate_training_prompts``, on the RL
    prompts (``train_models``, ``train_prompts``)."""
    c = plan.config
    summary: dict[str, Any] = {"models": {}}
    for step in eval_novelty_steps(plan):
        train = Path(step.config.output).name == NOVELTY_TRAIN
        for model, output in step.config.model_folders():
            m = read_json(output / "metrics.json")
            summary.setdefault("train_models" if train else "models", {})[output.name] = {
                "model": model,
                **{k: m[k] for k in ("n_prompts", "k", *map(mean_key, PROMPT_METRIC_NAMES), "threshold", "partition")},
            }
            summary.update(quality=m["quality"], patience=m["utility"]["patience"])
        summary["train_prompts" if train else "prompts"] = str(step.config.prompts)
    if plan.config.checker is not None:
        summary["partitions"] = read_json(c.run / PARTITIONS / RESULT_FILE)
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
    if "partitions" in s:
        lines += partitions_lines(s["partitions"])
    return lines


def partitions_lead(s: dict[str, Any]) -> list[str]:
    """The start policy's held-out answers: how the chain's classifier and the n-gram and content-word rules
    partition them."""
    table = (s.get("partitions") or {}).get("sets", {}).get(BASE_POLICY)
    if table is None:
        return []
    rows = table["partitions"]

    def reads(name: str) -> str:
        row = rows[name]
        one = row.get("one_key")
        of_one = (
            f" (of one-key answers: splits {cell(one['splits_same_key'])}, joins {cell(one['joins_different_keys'])})"
            if one
            else ""
        )
        return (
            f"splits {cell(row['splits_same_key'])} of same-key pairs, joins {cell(row['joins_different_keys'])}"
            + of_one
        )

    others = "; ".join(f"{name}: {reads(name)}" for name in rows if name != CEILING)
    return [
        f"- **What the reward's partition reads** (the start policy's answers to {table['prompts']} held-out prompts, "
        f"against the {s['partitions']['checker']} checker, whose own partition splits and joins none): {others}.",
        "",
    ]


def partitions_lines(result: dict[str, Any]) -> list[str]:
    """How the chain's classifier (``chain``) and the n-gram and content-word rules partition each policy's answers,
    beside the checker's exact partition ([`eval-partitions/`](eval-partitions/report.md))."""
    lines = [
        f"**What the reward's partitions read** ([`{PARTITIONS}/`]({PARTITIONS}/report.md)): each policy's answers "
        f"partitioned as DARLING's reward would (the chain's classifier `chain`, union-find at its threshold), as "
        f"`darling-ngram`'s would, and by the content-word rule (two answers the same when they share a word that is "
        f"neither a stop word nor the prompt's), against the {result['checker']} checker. Splits: of the answer pairs "
        "with the same key, the share put in different classes (rewording a reward would pay for); joins: of the pairs "
        "with different keys, the share put in one class. Bootstrap 95% intervals over prompts.",
        "",
    ]
    for name, table in result["sets"].items():
        keyed = fmt(table["keyed_share"])
        lines += [f"`{name}` ({table['prompts']} prompts; share of answers with a key: {keyed}):", ""]
        lines += [*table_lines(table), ""]
    return lines


def _novelty_table(models: dict[str, Any], folder: str) -> list[str]:
    # a metric no model has (the item count on naming prompts, or an older run's missing one) is left out
    metrics = [m for m in PROMPT_METRICS if any(v.get(mean_key(m.name)) is not None for v in models.values())]
    lines = [
        "| model | prompts | k | " + " | ".join(f"mean {m.label}" for m in metrics) + " | threshold | report |",
        "| --- | ---: | ---: |" + " ---: |" * len(metrics) + " ---: | --- |",
    ]
    for name, m in models.items():
        means = " | ".join(fmt(m.get(mean_key(metric.name))) for metric in metrics)  # one model's missing: –
        lines.append(
            f"| {name} | {m['n_prompts']} | {m['k']} | {means} | {fmt(m['threshold'])} | "
            f"[report]({folder}/{name}/report.md) |"
        )
    return [*lines, ""]


EVAL_NOVELTY = Stage(
    EVAL_NOVELTY_FOLDER,
    "Novelty (NoveltyBench-style distinct / utility)",
    eval_novelty_block,
    eval_novelty_summary,
    eval_novelty_section,
    lead=partitions_lead,
    tables=("eval_novelty",),
)
