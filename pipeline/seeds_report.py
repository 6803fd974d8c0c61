"""``RUN/report.md`` of a ``--seeds`` study: what the seeds show together, from the files their chains and the
study wrote. It leads with one figure (``RUN/curves.png``: each arm's distinct answers and quality over RL steps,
training and held-out prompts, the mean over seeds and every seed), then each arm against GRPO and DARLING against
the other arms pooled over seeds (``eval study``'s hierarchical intervals), the policies' levels, the classifier
against the word rules on the start policy's answers (``eval partitions``), and the stage times (the shared stages
once, then each seed's, then the study's).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from statistics import fmean
from typing import Any

from darling.core.numbers import MISSING
from darling.core.shards import atomic_write_bytes
from darling.evals.study_curves import WINDOW, final_means, mean_curve, write_study_curves
from darling.pipeline.config import PipelineConfig
from darling.pipeline.folders import BASE_POLICY, DARLING_POLICY, GRPO_POLICY, arm_policy
from darling.pipeline.rl_steps import run_folders
from darling.pipeline.stage import Plan, read_json
from darling.pipeline.stages.eval_novelty import PARTITIONS
from darling.rl.methods import CHECKER, CLASSIFIER, METHODS, NGRAM

REPORT_FILE = "report.md"
METRICS = ("novelty/distinct_items", "novelty/distinct", "novelty/quality")  # the first a study has leads
START_SETS = {"held out": "base", "training": "base-train"}  # eval partitions' sets of the start policy's answers


def seed_folder(config: PipelineConfig, seed: int) -> Path:
    return config.run / f"seed-{seed}"


def stage_records(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "stages.json"
    return json.loads(path.read_text())["stages"] if path.exists() else {}


def curves_of(config: PipelineConfig) -> dict[str, dict[str, Any]]:
    from darling.evals.study_curves import study_curves  # loads numpy when plotted

    one = replace(config, seeds=[], output=seed_folder(config, config.seeds[0]))
    folders = run_folders(Plan(one))
    logs = {
        policy: {str(seed): seed_folder(config, seed) / folder / "log_history.json" for seed in config.seeds}
        for policy, folder in folders.items()
    }
    return study_curves(logs)


def pooled_cell(study: dict[str, Any] | None, metric: str) -> str:
    figures = (study or {}).get("metrics", {}).get(metric)
    if not figures:
        return MISSING
    pooled = figures["pooled"]
    lo, hi = pooled["interval"]
    return f"{pooled['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def pooled_mean(study: dict[str, Any] | None, metric: str) -> float | None:
    figures = (study or {}).get("metrics", {}).get(metric)
    return figures["pooled"]["mean"] if figures else None


def lead_metric(studies: dict[str, dict[str, Any]]) -> str:
    have = {m for study in studies.values() for m in study["metrics"]}
    return next(m for m in METRICS if m in have)


def pairs_table(config: PipelineConfig, studies: dict[str, dict[str, Any]], metric: str) -> list[str]:
    """Each arm minus GRPO, then DARLING minus each other arm: held-out and training prompts, pooled over seeds."""
    rows = [("", DARLING_POLICY, GRPO_POLICY)]
    rows += [(f"-{m}-vs-grpo", arm_policy(m), GRPO_POLICY) for m in config.arms]
    rows += [(f"-darling-vs-{m}", DARLING_POLICY, arm_policy(m)) for m in config.arms]
    lines = [
        f"| pair | held out: {metric} | held out: quality | training: {metric} | training: quality |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for suffix, a, b in rows:
        held, train = studies.get(f"study{suffix}"), studies.get(f"study-train{suffix}")
        cells = [pooled_cell(held, metric), pooled_cell(held, "novelty/quality")]
        cells += [pooled_cell(train, metric), pooled_cell(train, "novelty/quality")]
        lines.append(f"| {a} − {b} | " + " | ".join(cells) + " |")
    return lines


def ceiling_share(studies: dict[str, dict[str, Any]], metric: str, train: bool) -> str | None:
    """DARLING's gain over GRPO as a share of the exact partition's (checker-ceiling), from the pooled means."""
    prefix = "study-train" if train else "study"
    darling = pooled_mean(studies.get(prefix), metric)
    ceiling = pooled_mean(studies.get(f"{prefix}-checker-ceiling-vs-grpo"), metric)
    if darling is None or not ceiling:
        return None
    return f"{darling / ceiling:.0%} ({darling:+.2f} of {ceiling:+.2f})"


def policy_levels(config: PipelineConfig, metric: str) -> list[str]:
    """Each policy's mean over prompts, averaged over seeds (eval compare's figures), on both prompt sets."""
    name = metric.split("/", 1)[1]
    levels: dict[str, dict[str, list[float]]] = {}
    for seed in config.seeds:
        summary = stage_records(seed_folder(config, seed)).get("compare", {}).get("summary") or {}
        for part, novelty in (("held out", summary.get("novelty")), ("training", summary.get("train"))):
            for policy, figures in ((novelty or {}).get("policies") or {}).items():
                for key in (name, "quality"):
                    if figures.get(key) is not None:
                        levels.setdefault(policy, {}).setdefault(f"{part}: {key}", []).append(figures[key])
    columns = [f"{part}: {key}" for part in ("training", "held out") for key in (name, "quality")]
    lines = ["| policy | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for policy in [BASE_POLICY, GRPO_POLICY, DARLING_POLICY, *(arm_policy(m) for m in config.arms)]:
        values = levels.get(policy, {})
        cells = [f"{fmean(values[c]):.2f}" if values.get(c) else MISSING for c in columns]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return lines


def classifier_lines(config: PipelineConfig) -> list[str]:
    """The classifier's validation figure, then per scorer its AUC over keyed pairs and its partition's splits and
    joins on the start policy's answers (the same answers in every seed but for the draws): each seed, and the mean."""
    shared = stage_records(config.run / "shared") or stage_records(seed_folder(config, config.seeds[0]))
    floor = ((shared.get("classifier") or {}).get("summary") or {}).get("floor") or {}
    lines = []
    if floor:
        lines += [
            f"Validation (the split that chose its threshold): AUC {floor['auc']:.3f} on {floor['pairs']} pairs, the "
            f"content-word rule {floor['content_rule_auc']:.3f}.",
            "",
        ]
    results = {
        seed: read_json(path)
        for seed in config.seeds
        if (path := seed_folder(config, seed) / PARTITIONS / "partitions.json").exists()
    }
    if not results:
        return lines
    lines += [
        "On the start policy's own answers, scored against the checker (the classifier trained on other answers of "
        "the training categories; the held-out categories' answers are new to it): AUC over pairs of answers naming a "
        "key, with no threshold; then the partition each makes at its threshold. Mean over seeds (each seed draws "
        "its own answers), and each seed.",
        "",
        "| answers | scorer | AUC, mean | AUC per seed | splits same-key pairs (mean) | joins different keys (mean) |",
        "| --- | --- | ---: | --- | ---: | ---: |",
    ]
    first = next(iter(results.values()))
    for part, name in START_SETS.items():
        if name not in first["sets"]:
            continue
        for scorer in first["sets"][name].get("auc", {}):
            aucs = [r["sets"][name]["auc"][scorer]["auc"] for r in results.values()]
            rows = [r["sets"][name]["partitions"][scorer] for r in results.values()]
            splits = [row["splits_same_key"]["share"] for row in rows if row["splits_same_key"]["share"] is not None]
            joins = [
                row["joins_different_keys"]["share"] for row in rows if row["joins_different_keys"]["share"] is not None
            ]
            per_seed = ", ".join(f"{a:.3f}" if a is not None else MISSING for a in aucs)
            known = [a for a in aucs if a is not None]
            lines.append(
                f"| {part} | {scorer} | {fmean(known):.3f} | {per_seed} | {fmean(splits):.3f} | {fmean(joins):.3f} |"
                if known and splits and joins
                else f"| {part} | {scorer} | {MISSING} | {per_seed} | {MISSING} | {MISSING} |"
            )
    return [*lines, ""]


def over_steps_lines(curves: dict[str, dict[str, Any]], points: int = 4) -> list[str]:
    """Each arm's distinct minus GRPO's along its RL steps, on the mean curves (training prompts: the running mean
    of the steps' groups; held out: TRL's evaluations), at ``points`` steps spread over the run."""
    if GRPO_POLICY not in curves:
        return []
    lines = []
    for part, smooth, title in (("train", WINDOW, "training prompts"), ("held_out", 1, "held-out prompts")):
        means = {
            arm: dict(zip(*mean_curve([c[part] for c in seeds.values()], "distinct", smooth), strict=True))
            for arm, seeds in curves.items()
        }
        steps = sorted(means[GRPO_POLICY])
        if not steps:
            continue
        picked = sorted({steps[round(i * (len(steps) - 1) / points)] for i in range(1, points + 1)})
        lines += [
            f"| {title}: arm − GRPO at step | " + " | ".join(f"{step:g}" for step in picked) + " |",
            "|---|" + "---:|" * len(picked),
        ]
        for arm, curve in means.items():
            if arm != GRPO_POLICY:
                cells = [f"{curve[s] - means[GRPO_POLICY][s]:+.2f}" if s in curve else MISSING for s in picked]
                lines.append(f"| {arm} | " + " | ".join(cells) + " |")
        grpo = " | ".join(f"{means[GRPO_POLICY][s]:.2f}" for s in picked)
        lines += [f"| GRPO's own level (step {steps[0]:g}: {means[GRPO_POLICY][steps[0]]:.2f}) | {grpo} |", ""]
    return lines


def times_lines(config: PipelineConfig, study_seconds: float) -> tuple[list[str], float]:
    """Stage times: the shared stages (once), each seed's own, the study; each column's sum, and the whole sum."""
    shared = stage_records(config.run / "shared")
    seeds = {seed: stage_records(seed_folder(config, seed)) for seed in config.seeds}
    columns = [*([shared] if shared else []), *seeds.values()]
    names = list(dict.fromkeys(n for records in columns for n in records))
    header = ["stage", *(["shared"] if shared else []), *(f"seed {s}" for s in config.seeds)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name in names:
        records = [r.get(name, {}) for r in columns]
        cells = ["shared" if r.get("shared") else _seconds(r.get("seconds")) for r in records]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    sums = [sum(r.get("seconds") or 0 for r in records.values()) for records in columns]
    total = sum(sums) + study_seconds
    lines.append("| study | " + " | ".join([""] * (len(header) - 2)) + f" | {study_seconds:.1f} |")
    lines.append("| **sum** | " + " | ".join(f"{x:.1f}" for x in sums) + " |")
    lines += ["", f"**{total:.1f} s of stages in all** (the shared stages once, every seed's own, the study)."]
    return lines, total


def _seconds(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else MISSING


def render_seeds_report(
    config: PipelineConfig,
    studies: dict[str, dict[str, Any]],
    figure: Path | None,
    study_seconds: float,
    curves: dict[str, dict[str, Any]] | None = None,
) -> tuple[str, float]:
    metric = lead_metric(studies)
    times, total = times_lines(config, study_seconds)
    seeds = ", ".join(map(str, config.seeds))
    shared = ", ".join(config.shared_stages)
    lines = [f"# DARLING pipeline: preset `{config.preset}`, seeds {seeds}", ""]
    if config.about:
        lines += [config.about, ""]
    lines += [
        f"{len(config.seeds)} seeds; "
        + (
            f"the stages {shared} ran once, with seed {config.seed} ([`shared/`](shared/report.md)), and every seed "
            "read them: a seed covers the later stages' draws (RL and evaluation)."
            if shared
            else "each seed ran the whole chain."
        )
        + f" {total:.0f} s of stages in all.",
        "",
    ]
    if figure is not None:
        lines += [
            f"![each arm over RL steps]({figure.name})",
            "",
            "Each arm's distinct answers and quality over its RL steps: on the training prompts (each step's own "
            "groups, a running mean) and on held-out prompts (TRL's evaluation); the thick line is the mean over "
            "seeds, the faint ones are the seeds. Points: [`curves.json`](curves.json).",
            "",
        ]
    lines += [
        "## Pooled over seeds",
        "",
        f"Each cell: the mean of the seeds' mean paired differences over prompts, with `eval study`'s hierarchical "
        f"bootstrap 95% interval (seeds, then prompts). `{metric}`: "
        + ("the keys a checker reads (distinct members, no classifier)." if metric.endswith("items") else "")
        + " Every pair's study: [`arms.md`](arms.md).",
        "",
        *pairs_table(config, studies, metric),
        "",
    ]
    for train, part in ((False, "held out"), (True, "training prompts")):
        share = ceiling_share(studies, metric, train)
        if share:
            lines.append(f"- DARLING's gain over GRPO as a share of the exact partition's ({part}): {share}")
    steps = over_steps_lines(curves) if curves else []
    if steps:
        lines += [
            "",
            "## Over RL steps",
            "",
            "Each arm's distinct answers minus GRPO's along the runs (the figure's mean curves: on the training "
            f"prompts the running mean of {WINDOW} steps' groups, held out TRL's evaluations); mean over seeds, no "
            "interval (the pooled intervals above are the runs' ends).",
            "",
            *steps,
        ]
    lines += ["", "## The policies, mean over seeds", "", *policy_levels(config, metric), ""]
    lines += ["## The classifier against the word rules", "", *classifier_lines(config)]
    lines += [
        "## Stage times (s)",
        "",
        *times,
        "",
        "Each seed's chain: " + ", ".join(f"[`seed-{s}/report.md`](seed-{s}/report.md)" for s in config.seeds) + ".",
        "",
    ]
    return "\n".join(lines), total


PARTITION_NAMES = {CLASSIFIER: "the classifier's partition", NGRAM: "the 4-gram rule's", CHECKER: "the exact partition"}


def arm_labels(config: PipelineConfig) -> dict[str, str]:
    """Each policy's name in the figure's legend: its method and what partitions its groups."""
    labels = {DARLING_POLICY: f"DARLING ({PARTITION_NAMES[CLASSIFIER]})", GRPO_POLICY: "GRPO (quality only)"}
    for method in config.arms:
        partition = METHODS[method].partition
        labels[arm_policy(method)] = f"{method} ({PARTITION_NAMES[partition]})" if partition else method
    return labels


def write_seeds_report(
    config: PipelineConfig, studies: dict[str, dict[str, Any]], study_seconds: float
) -> dict[str, Any]:
    """``RUN/report.md`` (and ``RUN/curves.png`` where the runs logged curves); returns its path and the stages' sum."""
    curves = curves_of(config)
    has_points = any(c["train"]["step"] for seeds in curves.values() for c in seeds.values())
    title = f"preset {config.preset}, seeds {', '.join(map(str, config.seeds))}"
    figure = write_study_curves(curves, config.run, arm_labels(config), title) if has_points else None
    text, total = render_seeds_report(config, studies, figure, study_seconds, curves if has_points else None)
    path = config.run / REPORT_FILE
    atomic_write_bytes(path, text.encode())
    ends = {part: final_means(curves, part, "distinct") for part in ("train", "held_out")} if has_points else {}
    return {"report": path, "seconds": total, "final_distinct": ends}
