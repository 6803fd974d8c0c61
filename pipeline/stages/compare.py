"""DARLING against GRPO and the base policy, and each other arm against GRPO and DARLING (``compare/``;
with ``evaluate_training_prompts`` also ``compare-train/``): ``eval compare`` recomputes every figure from the
evaluations' saved generations and the training logs. Over seeds, ``eval study`` pools these folders, one study per
pair (``study_folders``)."""

from __future__ import annotations

from typing import Any

from darling.evals.compare_report import interval, math_lines, novelty_lines, term_lines
from darling.evals.config import EVAL_QUALITY, CompareConfig, StudyConfig
from darling.evals.prompt_metrics import PROMPT_METRICS
from darling.pipeline.config import PipelineConfig
from darling.pipeline.folders import (
    BASE_POLICY,
    COMPARE_FOLDER,
    DARLING_POLICY,
    EVAL_MATH_FOLDER,
    EVAL_NOVELTY_FOLDER,
    GRPO_POLICY,
    NOVELTY_TRAIN,
    arm_policy,
)
from darling.pipeline.measured_figures import MEASURED_FIGURES
from darling.pipeline.rl_steps import rl_step, run_folders, training_prompts
from darling.pipeline.script import Block
from darling.pipeline.stage import Plan, Stage, memoised, prompts_link, read_json
from darling.pipeline.stages.eval_novelty import held_out_settings  # the one room above another: it compares them
from darling.pipeline.steps import Step, shown, stage_config

COMPARE_TRAIN = "compare-train"  # RUN/compare-train/: the comparison on the RL prompts
ARMS_TABLE = "arms.md"  # RUN/arms.md (--seeds with other arms): every pair's pooled figures in one table
# RUN/arms.md's columns: every per-prompt metric of the comparison (``PROMPT_METRICS``), the classifier-free counts
# first; a column no study has (the item count off the item prompts) is left out.
ARM_TABLE_METRICS = tuple(f"novelty/{m.name}" for m in sorted(PROMPT_METRICS, key=lambda m: not m.independent))


def compared_pairs(c: PipelineConfig) -> list[tuple[str, str]]:
    """The differences ``compare/`` tables, as (A, B) for A - B: DARLING against GRPO (with grpo_baseline) and the
    base policy, GRPO against the base policy, then each other arm against GRPO and DARLING against it."""
    names = [DARLING_POLICY, *([GRPO_POLICY] if c.grpo_baseline else []), BASE_POLICY]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return pairs + [pair for m in c.arms for pair in ((arm_policy(m), GRPO_POLICY), (DARLING_POLICY, arm_policy(m)))]


def study_folders(c: PipelineConfig) -> dict[str, tuple[str, str]]:
    """``pipeline --seeds``: each study's folder under RUN -> (the comparison folder of every seed it pools, the
    pair it pools). ``study/`` pools DARLING minus GRPO; each other arm adds ``study-<arm>-vs-grpo/`` and
    ``study-darling-vs-<arm>/`` (``study-train...`` on the training prompts)."""
    compared = {"study": COMPARE.name, **({"study-train": COMPARE_TRAIN} if c.evaluate_training_prompts else {})}
    pairs = {"": (DARLING_POLICY, GRPO_POLICY)}
    for m in c.arms:
        pairs.update(
            {f"-{m}-vs-grpo": (arm_policy(m), GRPO_POLICY), f"-darling-vs-{m}": (DARLING_POLICY, arm_policy(m))}
        )
    return {
        f"{study}{suffix}": (folder, f"{a} - {b}")
        for study, folder in compared.items()
        for suffix, (a, b) in pairs.items()
    }


STUDY_SCRIPT = "study.sh"  # RUN/study.sh: the study's commands, after every seed's RUN/seed-S/commands.sh


def study_steps(c: PipelineConfig) -> list[Step]:
    """``pipeline --seeds``' last step, once every seed's chain is done: ``eval study`` per study folder, pooling that
    pair over the seeds' comparisons (``study_folders``). The runner runs these configs and writes their lines to
    ``RUN/study.sh``, so a study's commands are on record like a seed's."""
    steps = []
    for folder, (compared, pair) in study_folders(c).items():
        compare = [f"{seed}={c.run / f'seed-{seed}' / compared}" for seed in c.seeds]
        config = StudyConfig(compare=compare, output=c.run / folder, pair=pair, seed=c.seed)
        steps.append(Step(folder, ("eval", "study"), config, explicit=("compare", "output", "pair", "seed")))
    return steps


@memoised
def compare_steps(plan: Plan) -> list[Step]:
    """``compare/`` (held-out prompts, with math) and, with ``evaluate_training_prompts``, ``compare-train/``."""
    train = [True] if plan.config.evaluate_training_prompts else []
    return [_compare_step(plan, t) for t in [False, *train]]


def _compare_step(plan: Plan, train: bool) -> Step:
    """DARLING against GRPO (with grpo_baseline) and the base policy, from the evaluations' generations and the
    training logs; ``train``: on the RL prompts' evaluations (no math). Its quality is the RL runs' own where that
    is an open-ended one (naming prompts), else eval novelty's."""
    c = plan.config
    rl = rl_step(plan).config
    runs = run_folders(plan)
    names = [*runs, BASE_POLICY]
    quality = rl.quality if rl.quality != "math" and not rl.reward_model else EVAL_QUALITY
    folder, novelty = (COMPARE_TRAIN, NOVELTY_TRAIN) if train else (COMPARE.name, EVAL_NOVELTY_FOLDER)
    with_math = c.evaluate_math and not train
    wired = {
        "output": c.run / folder,
        "novelty": [f"{n}={c.run / novelty / n}" for n in names],
        "math": [f"{n}={c.run / EVAL_MATH_FOLDER}" for n in names] if with_math else [],  # each policy by its name
        "training": [f"{n}={c.run / runs[n]}" for n in names if n in runs],
        "pairs": [f"{a}:{b}" for a, b in compared_pairs(c)],
        "seed": c.seed,
    }
    defaults = {"quality": quality, "max_words": rl.max_words, "strict_length": rl.strict_length}
    config = stage_config(c, "compare", CompareConfig, wired, defaults=defaults)
    return Step(folder, ("eval", "compare"), config, explicit=shown(c, wired, "compare"))


def compare_block(plan: Plan) -> Block:
    steps = compare_steps(plan)
    where = "CPU, seconds: from the saved generations and training logs"
    return Block(COMPARE.name, where, [step.line(plan.run) for step in steps], steps)


def compare_summary(plan: Plan) -> dict[str, Any]:
    """``compare/compare.json`` (held-out prompts) and, under ``train``, ``compare-train/``'s (the RL prompts)."""
    c = plan.config
    s = read_json(COMPARE.folder(c.run) / "compare.json")
    novelty = held_out_settings(plan)
    summary = {**s, "prompt_set": novelty.prompts, "k": novelty.k, "temperature": novelty.temperature}
    if c.evaluate_training_prompts:
        train = read_json(c.run / COMPARE_TRAIN / "compare.json")
        summary["train"] = {**train["novelty"], "prompt_set": training_prompts(plan)["prompts"]}
    return summary


def one_seed_sentence() -> str:
    """What one seed's held-out interval cannot say, with the multi-seed studies that can (``MEASURED_FIGURES``)."""
    studies = "; ".join(study.sentence() for study in MEASURED_FIGURES)
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
            f"**On the prompts the RL runs trained on** ({prompts_link(str(s['train']['prompt_set']))}, {sampling}): "
            "what DARLING's reward targets, and where one seed can show its mechanism.",
            "",
            *novelty_lines(s["train"], s["quality"], s["max_words"], strict),
        ]
    if "novelty" in s:
        lines += [
            f"**On held-out prompts** ({prompts_link(str(s['prompt_set']))}, {sampling}): whether the effect "
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


def compare_lead(s: dict[str, Any]) -> list[str]:
    """Each trained policy against GRPO on the held-out prompts: the classifier-free counts and quality, and whether
    its term acted (one seed: the intervals cover prompts, not runs)."""
    novelty = s.get("novelty")
    if not novelty:
        return []
    differences = novelty["differences"].values()
    # the classifier-free counts with a value here (the item count only on item prompts: no empty column)
    metrics = [
        m
        for m in PROMPT_METRICS
        if m.independent and m.verdict and any((d.get(m.name) or {}).get("mean") is not None for d in differences)
    ]
    term = s.get("term", {})
    lines = [
        f"- **Held out** ({novelty['prompts']} prompts of {prompts_link(str(s['prompt_set']))}, one seed: intervals "
        "over prompts, not runs), each arm minus GRPO:",
        "",
        "| arm - GRPO | " + " | ".join(m.label for m in metrics) + " | term acted |",
        "| --- |" + " ---: |" * (len(metrics) + 1),
    ]
    for pair, diffs in novelty["differences"].items():
        arm, _, other = pair.partition(" - ")
        if other != GRPO_POLICY or not all(m.name in diffs for m in metrics):
            continue
        acted = term.get(arm, {}).get("share")
        cells = " | ".join(interval(diffs[m.name]) for m in metrics)
        lines.append(f"| {pair} | {cells} | {'–' if acted is None else f'{acted:.0%}'} |")
    return [*lines, ""]


def compare_design_notes(plan: Plan) -> list[str]:
    """What DARLING is compared with, and on which prompts."""
    if not plan.config.grpo_baseline:
        return []
    return [f"DARLING and GRPO are compared with the base policy on {held_out_settings(plan).prompts}"]


COMPARE = Stage(
    COMPARE_FOLDER,
    "DARLING against GRPO and the base policy",
    compare_block,
    compare_summary,
    compare_section,
    placement="cpu",
    lead=compare_lead,
    tables=("compare",),
    design_notes=compare_design_notes,
)
