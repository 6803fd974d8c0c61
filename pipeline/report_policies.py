"""The policy sections of ``RUN/report.md``: DARLING RL and its GRPO baseline, eval math, eval novelty and the
DARLING-vs-GRPO comparison (each renders one stage's summary from ``stages.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.evals.compare_report import math_lines, novelty_lines, term_lines


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def term_cell(step: dict[str, Any]) -> str:
    """The share of the step's groups the diversity term changed; for the GRPO baseline the share DARLING's would
    have changed, in parentheses."""
    if "darling/groups_would_change" in step:
        return f"({_pct(step['darling/groups_would_change'])}%)"
    share = step.get("darling/groups_changed")
    return "–" if share is None else f"{_pct(share)}%"


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
        cells = " | ".join(_pct(m["pass@k"].get(str(k))) for k in ks)
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
        f"Prompts {_prompts_link(s['prompts'])}, partitioned by the freshly exported classifier. "
        f"Quality: {s['quality']}.",
        "",
        "| model | prompts | k | mean distinct | mean utility | threshold | report |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, m in s["models"].items():
        lines.append(
            f"| {name} | {m['n_prompts']} | {m['k']} | {fmt(m['mean_distinct'])} | {fmt(m['mean_utility'])} | "
            f"{fmt(m['threshold'])} | [report](eval-novelty/{name}/report.md) |"
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


def compare_section(s: dict[str, Any]) -> list[str]:
    """DARLING against GRPO and the base policy: the same policy, prompts, seeds and steps; only the reward differs."""

    lines = [
        "DARLING (`rl/`) and GRPO (`rl-grpo/`) trained with the same policy, prompts, seeds, sampling and steps; "
        "only the reward differs. All three policies answer the same prompts with the same sampling seeds; every "
        "figure is recomputed from the saved generations by `darling eval compare`.",
        "",
    ]
    if "novelty" in s:
        lines += [
            f"**Novelty** on {_prompts_link(str(s['prompt_set']))}, k = {s['k']} responses each at temperature "
            f"{s['temperature']}:",
            "",
            *novelty_lines(s["novelty"], s["quality"], s["max_words"], s.get("strict_length", False)),
        ]
    lines += term_lines(s.get("term", {}))
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
