"""The sections of ``RUN/report.md``, one per stage: each renders its stage's summary from ``stages.json`` (the
stage registry, ``pipeline/stages.py``, says which renders which)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.core.numbers import MISSING, fmt, pct
from darling.core.training_log import GROUPS_CHANGED, WOULD_CHANGE
from darling.evals.compare_report import math_lines, novelty_lines, term_lines
from darling.evals.prompt_metrics import PROMPT_METRICS, mean_key
from darling.pipeline.studies import STUDIES


def datagen_section(s: dict[str, Any]) -> list[str]:
    return [
        f"{s['mode']}.",
        "",
        f"- rollouts: **{s['rollouts']}** responses to {s['problems']} problems from {len(s['models'])} models "
        f"({', '.join(s['models'])}); failed: {s.get('failed', 0)}",
        f"- with a final answer: {s['with_final_answer']}; correct (math-verify): {s['correct']}",
        "",
    ]


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


def imported_classifier_section(s: dict[str, Any]) -> list[str]:
    i = s["imported"]
    return [
        f"Imported `{i['source']}` in the `{i['format']}` format ({s['kind']}, {s['dtype']}, "
        f"{s['max_tokens_per_response']} tokens per response, threshold {s['threshold']}) to "
        "[`classifier/`](classifier/); not trained here, so no validation metrics (`darling eval classifier` "
        "measures it).",
        "",
    ]


def creative_section(s: dict[str, Any]) -> list[str]:
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


def classifier_section(s: dict[str, Any]) -> list[str]:
    if "imported" in s:
        return imported_classifier_section(s)
    d, v = s["data"], s["validation"]
    schedule = s.get("schedule") or {}
    launch = f", launched as `{s['launcher']}`" if s.get("launcher") else ""
    lines = [
        f"Preset `{s['preset']}` ({s['kind']}, `{s['backbone']}`, {s['dtype']}), {schedule.get('optimiser_steps')} "
        f"optimiser steps of {schedule.get('examples_per_optimiser_step')} examples over {schedule.get('world_size')} "
        f"process(es){launch}, {s['max_tokens_per_response']} tokens per response; trained, calibrated on its "
        "validation split and exported to [`classifier/`](classifier/).",
        "",
        f"- training data [`training-pairs/pairs.jsonl`](training-pairs/pairs.jsonl): {d['pairs']} pairs "
        f"({d['by_source']['judge']} from the judge, {d['by_source']['noveltybench']} NoveltyBench), "
        f"similar = 1: {d['balance']['1']}, similar = 0: {d['balance']['0']}",
    ]
    if d.get("by_design"):
        lines.append(f"- **by design:** {d['reason']}.")
    elif d["fallback"]:
        lines.append(f"- **fallback:** {d['reason']}.")
    lines += [
        "",
        "Validation split at the threshold it chose (optimistic: no held-out pairs at this scale):",
        "",
        "| validation | value |",
        "| --- | ---: |",
    ]
    keys = ("n", "accuracy", "balanced_accuracy", "f1", "roc_auc", "ece", "threshold", "positive_rate", "train_seconds")
    lines += [f"| {k} | {fmt(v.get(k), 1 if k == 'train_seconds' else 3)} |" for k in keys if k in v]
    return [*lines, ""]


def term_cell(step: dict[str, Any]) -> str:
    """The share of the step's groups the diversity term changed; for the GRPO baseline the share DARLING's would
    have changed, in parentheses."""
    if WOULD_CHANGE.key in step:
        return f"({pct(step[WOULD_CHANGE.key])}%)"
    share = step.get(GROUPS_CHANGED.key)
    return MISSING if share is None else f"{pct(share)}%"


def rl_run_section(s: dict[str, Any], folder: str) -> list[str]:
    quality = s.get("quality", "math")
    strict = f" (0 over {s['max_words']} words)" if s.get("strict_length") else ""
    launch = f" Launched as `{s['launcher']} ...`." if s.get("launcher") else ""
    lines = [
        f"**`{folder}/`** — reward: {s['reward']}, advantages r − mean"
        f"{'' if s.get('scale_rewards', 'none') == 'none' else ' / std (' + s['scale_rewards'] + ')'}. Policy "
        f"`{s['policy']}`, prompts `{s['problems']}`, quality `{quality}`{strict}, floor {s.get('floor', 0)}, "
        f"{s['num_generations']} completions per prompt, ≤ {s['max_completion_length']} tokens, "
        f"lr {s['learning_rate']}, temperature {s['temperature']}, seed {s.get('seed', 0)}.{launch}",
        "",
        "| step | reward | quality | diversity | distinct / group | distinct answers | groups changed by the term "
        "| groups without signal | classifier pairs (saved) | loss |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for st in s["steps"]:
        lines.append(
            f"| {st['step']} | {fmt(st.get('reward'))} | {fmt(st.get('darling/quality'))} | "
            f"{fmt(st.get('darling/diversity'))} | {fmt(st.get('darling/distinct_per_group'), 2)} | "
            f"{fmt(st.get('darling/distinct_answers'), 2)} | {term_cell(st)} | "
            f"{fmt(st.get('darling/groups_without_signal'), 0)} | "
            f"{fmt(st.get('darling/classifier_pairs'), 0)} ({fmt(st.get('darling/classifier_pairs_saved'), 0)}) "
            f"| {fmt(st.get('loss'), 4)} |"
        )
    change = s["max_weight_change"]
    lines += [
        "",
        f"- steps with a non-zero reward: {s['steps_with_nonzero_reward']} of {len(s['steps'])}",
        f"- largest weight change vs the policy it started from: {'n/a' if change is None else f'{change:.2e}'}",
        f"- checkpoints left: {', '.join(s['checkpoints_left']) or 'none (deleted once final was saved)'}",
    ]
    if s["steps_with_nonzero_reward"] == 0:
        lines.append(
            "- **no learning signal:** every reward was 0, so every advantage was 0 and the policy did not move."
        )
    lines += [
        "",
        f"Per-step log: [`{folder}/log_history.json`]({folder}/log_history.json); settings: "
        f"[`{folder}/darling-rl.json`]({folder}/darling-rl.json); policy: [`{folder}/final/`]({folder}/final/).",
        "",
    ]
    return lines


def rl_section(s: dict[str, Any]) -> list[str]:
    """Both RL runs. Distinct per group is measured by the classifier in both; only DARLING's reward uses it."""
    how = "side by side (one process each)" if s.get("side_by_side") else "one after the other"
    served = "served by `serve-classifier` replicas" if s.get("served_classifier") else "in each training process"
    lines = [f"TRL GRPOTrainer; the runs trained {how}, the classifier {served}.", ""]
    for key, folder in (("warmup", "rl-warmup"), ("darling", "rl"), ("grpo", "rl-grpo")):
        if key in s["runs"]:
            lines += rl_run_section(s["runs"][key], folder)
    return lines


def eval_math_section(s: dict[str, Any]) -> list[str]:
    ks = s["ks"]
    lines = [
        f"{', '.join(s['datasets'])}: n = {s['n']} samples per problem at temperature {s['temperature']}, "
        f"≤ {s['max_tokens']} tokens, graded by math-verify; unbiased pass@k in % (mean over datasets).",
        "",
        "| model | path | problems | " + " | ".join(f"pass@{k}" for k in ks) + " | report |",
        "| --- | --- | ---: |" + " ---: |" * len(ks) + " --- |",
    ]
    for name, m in s["models"].items():
        cells = " | ".join(pct(m["pass@k"].get(str(k))) for k in ks)
        lines.append(
            f"| {name} | `{s['model_paths'].get(name, '')}` | {m['problems']} | {cells} | "
            f"[report](eval-math/{name}/report.md) · [metrics](eval-math/{name}/metrics.json) |"
        )
    return [
        *lines,
        "",
        "Paired comparison: both models draw the same sampling seeds (each is evaluated in its own "
        "folder under the same model name), so identical weights would give identical samples.",
        "",
    ]


def eval_novelty_section(s: dict[str, Any]) -> list[str]:
    lines = [
        f"Held-out prompts {_prompts_link(s['prompts'])}, partitioned by the freshly exported classifier. "
        f"Quality: {s['quality']}.",
        "",
        *_novelty_table(s["models"], "eval-novelty"),
    ]
    if s.get("train_models"):
        lines += [
            f"The prompts the RL runs trained on ({_prompts_link(s['train_prompts'])}), the same sampling:",
            "",
            *_novelty_table(s["train_models"], "eval-novelty-train"),
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


def policy_note(records: dict[str, dict[str, Any]]) -> list[str]:
    runs = (records.get("rl", {}).get("summary") or {}).get("runs") or {}
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


def _prompts_link(prompts: str) -> str:
    path = Path(prompts)
    return f"[`{path.name}`](inputs/{path.name})" if path.parent.name == "inputs" else f"`{prompts}`"


def one_seed_sentence() -> str:
    """What one seed's held-out interval cannot say, with the multi-seed studies that can (pipeline/studies.py)."""
    studies = "; ".join(study.sentence() for study in STUDIES)
    return (
        "One seed: every interval here covers prompts, not runs, so it cannot say whether another seed would agree. "
        f"Measured over seeds: {studies}. Run `darling pipeline --seeds` for a pooled interval."
    )


def compare_section(s: dict[str, Any]) -> list[str]:
    """DARLING against GRPO and the base policy: the same policy, prompts, seeds and steps; only the reward differs."""

    lines = [
        "DARLING (`rl/`) and GRPO (`rl-grpo/`) trained with the same policy, prompts, seeds, sampling and steps; "
        "only the reward differs. All three policies answer the same prompts with the same sampling seeds; every "
        "figure is recomputed from the saved generations by `darling eval compare`.",
        "",
    ]
    lines += term_lines(s.get("term", {}))  # first: a comparison whose term did not act cannot show its effect
    sampling = f"k = {s['k']} responses each at temperature {s['temperature']}"
    strict = s.get("strict_length", False)
    if "train" in s:
        lines += [
            f"**On the prompts the RL runs trained on** ({_prompts_link(str(s['train']['prompt_set']))}, {sampling}): "
            "what DARLING's reward targets, and where one seed can show its mechanism.",
            "",
            *novelty_lines(s["train"], s["quality"], s["max_words"], strict),
        ]
    if "novelty" in s:
        lines += [
            f"**On held-out prompts** ({_prompts_link(str(s['prompt_set']))}, {sampling}): whether the effect "
            "carries to prompts neither run saw.",
            "",
            *novelty_lines(s["novelty"], s["quality"], s["max_words"], strict),
            one_seed_sentence(),
            "",
        ]
    if "math" in s:
        lines += ["**Math** (eval math's samples):", "", *math_lines(s["math"])]
    if "curves" in s:
        lines += [
            "Training curves (both runs, every optimiser step; distinct by the classifier in both):",
            "",
            "![training curves](compare/curves.png)",
            "",
        ]
    return [*lines, "Figures: [`compare/compare.json`](compare/compare.json).", ""]
