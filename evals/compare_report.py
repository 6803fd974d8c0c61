"""The comparison's tables in markdown (``darling eval compare``'s ``report.md``, and the pipeline report's last
section): per policy, the paired differences with their intervals, and one sentence that says what each interval
shows, and no more."""

from __future__ import annotations

from typing import Any

from darling.core.numbers import MISSING, fmt, pct
from darling.evals.prompt_metrics import COMPARE_COLUMNS, PROMPT_METRICS

QUALITY_TEXT = {
    "relevant-short-answer": "format x the answer's MiniLM cosine to the prompt, 0 when it echoes the prompt: "
    "a proxy for a relevant answer, not a check of one",
    "short-answer": "format only: a made-up word scores 1",
    "eval": "eval novelty's own quality (a reward model's 1-10 bucket; 1 for every response without one)",
}


def interval(d: dict[str, Any], digits: int = 2) -> str:
    if d.get("mean") is None:
        return MISSING
    lo, hi = d["interval"]
    return f"{d['mean']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def verdict(name: str, d: dict[str, Any], unit: str, a: str = "DARLING", b: str = "GRPO") -> str:
    """One sentence that says what the interval shows, and no more."""
    if d.get("mean") is None:
        return f"no {name} figure (nothing completed by every policy)"
    lo, hi = d["interval"]
    amount = f"{abs(d['mean']):.2f}" + (f" {unit}" if unit else "")
    if lo > 0:
        return f"{name}: {a} above {b} by {amount} ({interval(d)}, above 0)"
    if hi < 0:
        return f"{name}: {a} below {b} by {amount} ({interval(d)}, below 0)"
    return f"{name}: no difference shows at this budget ({interval(d)}: the interval includes 0)"


def shown_columns(s: dict[str, Any]) -> dict[str, str]:
    """The comparison's columns, less a metric no policy has a value for (the item count on other prompts)."""
    policies = s["policies"].values()
    return {
        m: label for m, label in COMPARE_COLUMNS.items() if not policies or any(p.get(m) is not None for p in policies)
    }


def novelty_lines(s: dict[str, Any], quality: str, max_words: int, strict: bool = False) -> list[str]:
    """The novelty comparison: definitions, per-policy means, paired differences, the verdict on the first pair."""
    columns = shown_columns(s)
    by_classifier = " (by the eval classifier: in the pipeline, the one DARLING's reward uses)"
    defined = [
        f"- **{m.label}**: {m.definition}" + ("" if m.independent else by_classifier)
        for m in PROMPT_METRICS
        if m.name != "quality" and m.name in columns
    ]
    lines = [
        *defined,
        f"- **quality**: `{quality}` ({QUALITY_TEXT.get(quality, 'see darling.core.quality')}), mean per prompt; "
        f"**share ≤ max words**: answers of 1 to {max_words} words"
        + (" (the quality scores a longer answer 0: `--strict-length`)" if strict else ""),
        "",
        "| policy | " + " | ".join(columns.values()) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for name, figures in s["policies"].items():
        lines.append(f"| {name} | " + " | ".join(fmt(figures.get(m), 2) for m in columns) + " |")
    lines += [
        "",
        f"Paired differences over the {s['prompts']} prompts, mean with a bootstrap 95% interval "
        f"({s['bootstrap']} resamples of prompts):",
        "",
        "| difference | " + " | ".join(columns.values()) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for pair, diffs in s["differences"].items():
        lines.append(f"| {pair} | " + " | ".join(interval(diffs.get(m, {})) for m in columns) + " |")
    first = next(iter(s["differences"].items()), None)
    if first:
        a, _, b = first[0].partition(" - ")
        readings = [
            verdict(m.verdict[0], first[1][m.name], m.verdict[1], a, b)
            for m in PROMPT_METRICS
            if m.verdict and m.name in columns and m.name in first[1]
        ]
        lines += [
            "",
            f"**What this shows ({first[0]}):** {'; '.join(readings)}. {s['prompts']} prompts: the intervals are wide.",
        ]
    return [*lines, ""]


ACTED_BELOW = 0.10  # a DARLING run whose term changed fewer of its groups cannot show DARLING's effect


def term_lines(term: dict[str, dict[str, Any]]) -> list[str]:
    """Whether DARLING's diversity term acted in the runs compared (``eval compare``'s ``term``), and, where it
    changed fewer than ``ACTED_BELOW`` of its groups, the sentence that says the comparison cannot show its effect."""
    if not term:
        return []
    lines = [
        "**Did DARLING's diversity term act?** (from the training logs: the share of groups whose advantages the "
        "term changed against quality alone, as the trainer computes advantages)",
        "",
    ]
    for name, t in term.items():
        scale = (
            f"mean |change| {t['advantage_change']:.3f} against a mean |advantage| of {t['quality_advantage']:.3f} "
            "from quality alone"
        )
        if t["applied"]:
            lines.append(
                f"- `{name}`: changed **{t['share']:.0%}** of its groups, at {t['steps_acted']} of {t['steps']} "
                f"steps (first at step {t['first_step_acted']}); {scale}."
                if t["first_step_acted"] is not None
                else f"- `{name}`: changed **none** of its groups in {t['steps']} steps."
            )
        else:
            lines.append(
                f"- `{name}` (no diversity term): DARLING's would have changed {t['share']:.0%} of its groups."
            )
        if "entropy_bonus" in t:
            lines.append(
                f"- `{name}`: TRL's entropy bonus (coefficient x mean token entropy) took {t['entropy_bonus']:.4f} "
                f"off the loss per step, at {t['entropy_steps']} of {t['steps']} steps."
            )
    for name, t in term.items():
        if t["applied"] and t["share"] < ACTED_BELOW:
            why = (
                f"in {t['all_distinct']:.0%} of its groups every response was in a class of its own, so its reward "
                "was quality alone, GRPO's"
                if t["all_distinct"] >= (1 - t["share"]) / 2
                else "its reward moved almost no advantage away from quality alone's"
            )
            lines += [
                "",
                f"**This comparison cannot show DARLING's effect:** `{name}`'s diversity term changed the advantages "
                f"of only {t['share']:.0%} of its groups (fewer than {ACTED_BELOW:.0%}): {why}. A difference or "
                "its absence below is GRPO against (nearly) itself.",
            ]
    return [*lines, ""]


def math_lines(s: dict[str, Any]) -> list[str]:
    ks = sorted({key for p in s["policies"].values() for key in p}, key=lambda k: int(k.split("@")[1]))
    lines = [
        f"pass@k (unbiased, n = {s['n']}) over the {s['problems']} problems every policy scored, in %:",
        "",
        "| policy | " + " | ".join(ks) + " |",
        "| --- |" + " ---: |" * len(ks),
    ]
    for name, values in s["policies"].items():
        lines.append(f"| {name} | " + " | ".join(pct(values.get(k)) for k in ks) + " |")
    lines += ["", "| difference (points) | " + " | ".join(ks) + " |", "| --- |" + " ---: |" * len(ks)]
    for pair, diffs in s["differences"].items():
        lines.append(f"| {pair} | " + " | ".join(_points(diffs[k]) for k in ks) + " |")
    return [*lines, ""]


def _points(d: dict[str, Any]) -> str:
    if d.get("mean") is None:
        return MISSING
    scaled = {"mean": 100 * d["mean"], "interval": [100 * x for x in d["interval"]]}
    return interval(scaled, 1)


def render_comparison(result: dict[str, Any]) -> str:
    """``compare/report.md``."""
    lines = [f"# Policies compared: {', '.join(result['policies'])}", ""]
    if "novelty" in result:
        lines += ["## Diversity and quality (eval novelty)", ""]
        lines += novelty_lines(
            result["novelty"], result["quality"], result["max_words"], result.get("strict_length", False)
        )
    lines += term_lines(result.get("term", {}))
    if "math" in result:
        lines += ["## Math (eval math)", "", *math_lines(result["math"])]
    if "curves" in result:
        lines += ["## Training curves", "", "![training curves](curves.png)", ""]
    return "\n".join(lines)
