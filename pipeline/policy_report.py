"""The policy sections of ``RUN/report.md``: DARLING RL and its GRPO baseline, eval math, eval novelty and the
DARLING-vs-GRPO comparison (each renders one stage's summary from ``stages.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def rl_section(s: dict[str, Any]) -> list[str]:
    folder = "rl-grpo" if s.get("reward", "").startswith("quality only") else "rl"
    quality = s.get("quality", "math")
    lines = [
        f"TRL GRPOTrainer, reward: {s.get('reward', 'quality x diversity')}, advantages r − mean. Policy "
        f"`{s['policy']}`, prompts `{s['problems']}`, quality `{quality}`, {s['num_generations']} completions per "
        f"prompt, ≤ {s['max_completion_length']} tokens, lr {s['learning_rate']}, temperature {s['temperature']}, "
        f"seed {s.get('seed', 0)}. Distinct per group is measured by the classifier in both runs; only DARLING's "
        "reward uses it.",
        "",
        "| step | reward | quality | diversity | distinct / group | distinct answers | classifier pairs (saved) "
        "| loss |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for st in s["steps"]:
        lines.append(
            f"| {st['step']} | {fmt(st.get('reward'))} | {fmt(st.get('darling/quality'))} | "
            f"{fmt(st.get('darling/diversity'))} | {fmt(st.get('darling/distinct_per_group'), 2)} | "
            f"{fmt(st.get('darling/distinct_answers'), 2)} | "
            f"{fmt(st.get('darling/classifier_pairs'), 0)} ({fmt(st.get('darling/classifier_pairs_saved'), 0)}) "
            f"| {fmt(st.get('loss'), 4)} |"
        )
    change = s["max_weight_change"]
    lines += [
        "",
        f"- steps with a non-zero reward: {s['steps_with_nonzero_reward']} of {len(s['steps'])}",
        *([f"- {s['trained']} (its wall time is in the rl stage's)"] if "beside" in s.get("trained", "") else []),
        f"- largest weight change vs the base policy: {'n/a' if change is None else f'{change:.2e}'}",
    ]
    if s["steps_with_nonzero_reward"] == 0:
        lines.append(
            "- **no learning signal:** every reward was 0, so every advantage was 0 and the policy did not move."
        )
    if s["checkpoints_pruned"]:
        lines.append(
            f"- checkpoints {', '.join(s['checkpoints_pruned'])} were deleted once `{folder}/final` was saved "
            "(keep them with `--keep-checkpoints`)"
        )
    lines += [
        "",
        f"Per-step log: [`{folder}/log_history.json`]({folder}/log_history.json); settings: "
        f"[`{folder}/darling-rl.json`]({folder}/darling-rl.json); policy: [`{folder}/final/`]({folder}/final/).",
        "",
    ]
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
    change = (records.get("rl", {}).get("summary") or {}).get("max_weight_change")
    if change is None:
        return []
    if change == 0:
        return [
            "**RL left the weights unchanged (section 5): both rows evaluate the same model, so their "
            "difference is sampling noise only.**",
            "",
        ]
    return [f"The RL policy differs from the base by at most {change:.2e} per weight (section 5).", ""]


def _prompts_link(prompts: str) -> str:
    path = Path(prompts)
    return f"[`{path.name}`](inputs/{path.name})" if path.parent.name == "inputs" else f"`{prompts}`"


def _interval(d: dict[str, Any], digits: int = 2) -> str:
    if d.get("mean") is None:
        return "–"
    lo, hi = d["interval"]
    return f"{d['mean']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def _verdict(name: str, d: dict[str, Any], unit: str) -> str:
    """One sentence that says what the interval shows, and no more."""
    if d.get("mean") is None:
        return f"no {name} figure (no prompt completed by every policy)"
    lo, hi = d["interval"]
    if lo > 0:
        return f"{name}: DARLING above GRPO by {d['mean']:.2f} {unit} ({_interval(d)}, above 0)"
    if hi < 0:
        return f"{name}: DARLING below GRPO by {-d['mean']:.2f} {unit} ({_interval(d)}, below 0)"
    return f"{name}: no difference shows at this budget ({_interval(d)}: the interval includes 0)"


COMPARE_METRICS = {
    "distinct": "distinct (eval partition)",
    "distinct_answers": "distinct answers (exact)",
    "quality": "quality",
    "short": "share ≤ max words",
}


def compare_section(s: dict[str, Any]) -> list[str]:
    lines = [
        f"DARLING (`rl/`) and GRPO (`rl-grpo/`) trained with the same policy, prompts, seeds, sampling and steps; "
        f"only the reward differs. Evaluated with the base policy on `{s['prompt_set']}` ({s['prompts']} prompts of "
        f"categories neither run trained on), k = {s['k']} responses each at temperature {s['temperature']}, all "
        "three with the same sampling seeds. Every figure below is recomputed from the saved generations "
        "(`eval-novelty/*/scores.parquet`).",
        "",
        "- **distinct (eval partition)**: classes of eval novelty's partition (NoveltyBench's greedy partition: "
        "two answers of at most 5 words are compared by word overlap, longer ones by the pipeline's classifier)",
        "- **distinct answers (exact)**: different answers after lower-casing and dropping punctuation (no classifier)",
        f"- **quality**: `{s['quality']}` ({QUALITY_TEXT.get(s['quality'], 'see darling.rl.quality')}), the "
        "training quality, mean per prompt; **share ≤ max words**: answers of 1 to "
        f"{s['max_words']} words",
        "",
        "| policy | " + " | ".join(COMPARE_METRICS.values()) + " |",
        "| --- |" + " ---: |" * len(COMPARE_METRICS),
    ]
    for name, figures in s["policies"].items():
        lines.append(f"| {name} | " + " | ".join(fmt(figures.get(m), 2) for m in COMPARE_METRICS) + " |")
    lines += [
        "",
        f"Paired differences, mean over prompts with a bootstrap 95% interval ({s['bootstrap']} resamples of prompts):",
        "",
        "| difference | " + " | ".join(COMPARE_METRICS.values()) + " |",
        "| --- |" + " ---: |" * len(COMPARE_METRICS),
    ]
    for pair, diffs in s["differences"].items():
        lines.append(f"| {pair} | " + " | ".join(_interval(diffs[m]) for m in COMPARE_METRICS) + " |")
    key: dict[str, Any] = next(iter(s["differences"].values()), {})
    if key:
        lines += [
            "",
            f"**What this run shows:** {_verdict('distinct', key['distinct'], 'classes per prompt')}; "
            f"{_verdict('distinct answers', key['distinct_answers'], 'answers per prompt')}; "
            f"{_verdict('quality', key['quality'], '')}. {s['prompts']} prompts: the intervals are wide.",
        ]
    lines += [
        "",
        "Training curves (both runs, every optimiser step; distinct by the classifier in both):",
        "",
        "![training curves](compare/curves.png)",
        "",
        "Figures: [`compare/compare.json`](compare/compare.json).",
        "",
    ]
    return lines


QUALITY_TEXT = {
    "relevant-short-answer": "format x the answer's MiniLM cosine to the prompt, 0 when it echoes the prompt: "
    "a proxy for a relevant answer, not a check of one",
    "short-answer": "format only: a made-up word scores 1",
}
