"""The classifier's data: rollouts (``datagen/``), pairs (``pairs/``) and their labels (``labels/``). On the
math track: CHAMP's or generated responses, same-answer pairs, the LLM judge's labels. On a task with a checker
(``rollouts_from = policy``, ``checker``): the start policy's own answers to the RL prompts, pairs by the checker's
keys, labelled by the checker, and the LLM judge (``labels-judge/``) scored against it. The chat track
(``rollouts_from = none``) runs none of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.core.checkers import get_checker
from darling.core.errors import UserInputError
from darling.core.numbers import fmt
from darling.datagen.champ import champ_path
from darling.datagen.checker_labels import CHECKER_ENGINE
from darling.datagen.config import JudgeConfig, PairConfig, RolloutConfig
from darling.pipeline.folders import LABELS_FOLDER, PAIRS_FOLDER, ROLLOUTS_FOLDER
from darling.pipeline.rl_steps import rl_settings, start_policy
from darling.pipeline.script import Block, engine_where, json_text
from darling.pipeline.stage import Plan, Records, Stage, memoised, read_json
from darling.pipeline.steps import Step, input_path, run_relative, shown, stage_config, threads

GENERATORS_FILE = "generators.json"  # RUN/inputs/: [datagen] generators, as datagen rollouts --generators reads it
START = "start"  # rollouts_from = policy: the start policy's name in the rollouts
# [datagen] keys that rollouts_from = policy takes from the RL runs (their prompts and template, the start policy)
POLICY_ROLLOUT_KEYS = ("problems", "model", "generators", "system_prompt", "user_template")
LABELS_JUDGE = "labels-judge"  # RUN/labels-judge/: with a checker, the LLM judge's labels of the same pairs, scored


def _with_rollouts(plan: Plan) -> bool:
    return plan.config.rollouts_from != "none"  # the chat track: no rollouts, pairs or labels


# -- datagen: rollouts ---------------------------------------------------------------------------------------------
@memoised
def datagen_step(plan: Plan) -> Step:
    c = plan.config
    wired: dict[str, Any] = {"output": DATAGEN.folder(c.run), "seed": c.seed}
    if c.rollouts_from == "champ":
        config = stage_config(c, "datagen", RolloutConfig, wired, generates=False)
        return Step(
            "datagen", ("datagen", "rollouts"), config, {"import_": "champ"}, explicit=shown(c, wired, "datagen")
        )
    if c.rollouts_from == "policy":
        return _policy_rollouts(plan, wired)
    generators = input_path(c, GENERATORS_FILE) if c.datagen.get("generators") else None
    wired.update(generators=generators, **threads(c, RolloutConfig))
    config = stage_config(c, "datagen", RolloutConfig, wired)
    return Step("datagen", ("datagen", "rollouts"), config, explicit=shown(c, wired, "datagen"))


def _policy_rollouts(plan: Plan, wired: dict[str, Any]) -> Step:
    """The start policy's answers to the RL prompts, prompted as rl-train prompts them (no system prompt, its user
    template), sampled by default as it samples (its temperature and completion length; [datagen] may say otherwise);
    with ``rollout_temperatures``, one generator per temperature (``policy_generators``)."""
    c = plan.config
    rl = rl_settings(plan)
    sampled = (
        {"generators": input_path(c, GENERATORS_FILE)}
        if c.rollout_temperatures
        else {"model": [f"{START}={start_policy(plan)}"]}
    )
    wired.update(
        problems=str(rl.problems),
        **sampled,
        system_prompt="",
        user_template=rl.user_template,
        **threads(c, RolloutConfig, alone=True),
    )
    as_rl = {"limit": rl.limit, "temperature": rl.temperature, "max_tokens": rl.max_completion_length}
    config = stage_config(c, "datagen", RolloutConfig, wired, defaults=as_rl, also_wired=POLICY_ROLLOUT_KEYS)
    explicit = (*shown(c, wired, "datagen"), *as_rl)  # the RL runs' sampling, said on the line even as defaults
    return Step("datagen", ("datagen", "rollouts"), config, explicit=explicit)


def datagen_block(plan: Plan) -> Block:
    c = plan.config
    step = datagen_step(plan)
    if c.rollouts_from == "champ":
        where = "CPU, seconds: CHAMP's real responses (GPT-3.5, GPT-4, GPT-4 Turbo, PaLM 2)"
    elif c.rollouts_from == "policy":
        at = f" at temperatures {', '.join(f'{t:g}' for t in c.rollout_temperatures)}" if c.rollout_temperatures else ""
        where = engine_where(
            step.config, f"the start policy's answers to {step.config.problems}{at}, n = {step.config.n}"
        )
    else:
        where = engine_where(step.config, f"{len(c.datagen.get('generators', []))} generators")
    lines = [step.line(c.run)]
    if c.rollouts_from == "generate":
        listed = run_relative(input_path(c, GENERATORS_FILE), c.run)
        lines.insert(0, f"# generators (names, models, each one's own parallelism and memory): {listed}")
    return Block(DATAGEN.name, where, lines, [step])


def datagen_inputs(plan: Plan) -> dict[Path, str]:
    c = plan.config
    if c.rollouts_from == "generate" and c.datagen.get("generators"):
        return {input_path(c, GENERATORS_FILE): json_text({"generators": c.datagen["generators"]})}
    if c.rollouts_from == "policy" and c.rollout_temperatures:
        return {input_path(c, GENERATORS_FILE): json_text({"generators": policy_generators(plan)})}
    return {}


def policy_generators(plan: Plan) -> list[dict[str, Any]]:
    """``rollout_temperatures``: the start policy at each temperature, a generator each (``start-t0.7``, ...),
    prompted as rl-train prompts it."""
    rl = rl_settings(plan)
    return [
        {
            "name": f"{START}-t{t:g}",
            "model": start_policy(plan),
            "temperature": t,
            "system_prompt": "",
            "user_template": rl.user_template,
        }
        for t in plan.config.rollout_temperatures
    ]


def datagen_summary(plan: Plan) -> dict[str, Any]:
    import polars as pl

    c = plan.config
    config = datagen_step(plan).config
    if c.rollouts_from == "champ":
        mode = f"CHAMP import: the real responses of 4 models to the first {config.limit or 270} problems"
    elif c.rollouts_from == "policy":
        temperatures = c.rollout_temperatures or [config.temperature]
        mode = (
            f"the start policy's own answers ({config.engine} engine) to the RL prompts {config.problems}, "
            f"n = {config.n} at temperature {', '.join(f'{t:g}' for t in temperatures)}"
        )
    else:
        names = ", ".join(s.name for s in config.generator_specs())
        mode = f"generated ({config.engine} engine): {names} on {config.problems}, n = {config.n}"
    from darling.datagen.rollouts import read_rollouts  # loads polars and httpx (the engines)

    rows = read_rollouts(config.output)
    ok = rows.filter(pl.col("status") == "ok")
    summary = {
        "mode": mode,
        "rollouts": rows.height,
        "failed": rows.height - ok.height,
        "problems": rows["problem_id"].n_unique(),
        "models": sorted(rows["model"].unique().to_list()),
        "with_final_answer": int(ok["extracted_answer"].is_not_null().sum()),
        "correct": int(ok["correct"].fill_null(False).sum()),
    }
    if c.checker is not None:  # what the checker reads: the answers that can be paired at all
        checker = get_checker(c.checker)
        keys = [checker.key(p, r) for p, r in zip(ok["problem"].to_list(), ok["response"].to_list(), strict=True)]
        summary["checker"] = {"name": checker.name, "with_key": sum(k is not None for k in keys)}
    return summary


def datagen_section(s: dict[str, Any]) -> list[str]:
    rows = f"- rollouts: **{s['rollouts']}** responses to {s['problems']} problems from {len(s['models'])} models "
    rows += f"({', '.join(s['models'])}); failed: {s.get('failed', 0)}"
    if "checker" in s:
        keyed = s["checker"]["with_key"]
        found = f"- with a key the {s['checker']['name']} checker reads: {keyed} of {s['rollouts'] - s['failed']}"
    else:
        found = f"- with a final answer: {s['with_final_answer']}; correct (math-verify): {s['correct']}"
    return [f"{s['mode']}.", "", rows, found, ""]


def datagen_check(plan: Plan) -> None:
    c = plan.config
    if c.rollouts_from == "generate" and not (c.datagen.get("generators") or c.datagen.get("model")):
        raise UserInputError("rollouts_from=generate needs [datagen] generators (a list of {name, model})")
    taken = [key for key in POLICY_ROLLOUT_KEYS if key in c.datagen] if c.rollouts_from == "policy" else []
    if taken:
        raise UserInputError(
            f"[datagen] {taken[0]}: rollouts_from = policy takes it from the RL runs (their prompts, template and "
            "start policy); leave it out"
        )


def generated_problems(plan: Plan) -> list[str]:
    """The problem set generated rollouts answer (CHAMP's import and the policy's own rollouts: not a file read)."""
    c = plan.config
    return [str(c.datagen.get("problems"))] if c.rollouts_from == "generate" else []


def champ_file_read(plan: Plan, records: Records) -> list[dict[str, Any]]:
    """CHAMP's dataset file, when the rollouts are imported from it."""
    if plan.config.rollouts_from != "champ":
        return []
    try:
        return [{"role": "champ_dataset", "path": str(champ_path())}]
    except Exception:  # the package is absent: nothing was imported from it either
        return [{"role": "champ_dataset", "path": None, "note": "champ-dataset package not installed"}]


DATAGEN = Stage(
    ROLLOUTS_FOLDER,
    "Data generation: rollouts",
    datagen_block,
    datagen_summary,
    datagen_section,
    runs=_with_rollouts,
    inputs=datagen_inputs,
    check=datagen_check,
    problems=generated_problems,
    tables=("datagen",),
    files_read=champ_file_read,
)


# -- pairs ---------------------------------------------------------------------------------------------------------
@memoised
def pairs_step(plan: Plan) -> Step:
    c = plan.config
    wired = {"rollouts": DATAGEN.folder(c.run), "output": PAIRS.folder(c.run), "seed": c.seed}
    wired["workers"] = c.threads or 0
    if c.checker is not None:  # pairs by the checker's keys, both labels balanced
        wired["checker"] = c.checker
    config = stage_config(c, "pairs", PairConfig, wired)
    return Step("pairs", ("datagen", "pairs"), config, explicit=shown(c, wired, "pairs"))


def pairs_block(plan: Plan) -> Block:
    step = pairs_step(plan)
    checker = plan.config.checker
    where = f"CPU, seconds: the {checker} checker's keys" if checker else "CPU (math-verify), seconds to minutes"
    return Block(PAIRS.name, where, [step.line(plan.run)], [step])


def pairs_summary(plan: Plan) -> dict[str, Any]:
    config = pairs_step(plan).config
    s = read_json(Path(config.output) / "summary.json")
    return {**s, "cross_model_only": config.cross_model_only, "max_pairs_per_problem": config.max_pairs_per_problem}


def pairs_section(s: dict[str, Any]) -> list[str]:
    if s.get("checker"):
        return key_pairs_section(s)
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


def key_pairs_section(s: dict[str, Any]) -> list[str]:
    labels, several = s["by_label"], s.get("several_keys")
    one_key = f", {several} of them naming several keys (one_key_only)" if several else ""
    return [
        f"Pairs by the {s['checker']} checker's keys: two answers to one prompt that both carry a key, identical "
        f"texts dropped, at most {s['max_pairs_per_problem']} of each label per prompt, then both labels equally many.",
        "",
        f"- pairs: **{s['pairs']}** from {s['problems_with_pairs']} prompts: {labels.get('1', 0)} with the same key, "
        f"{labels.get('0', 0)} with different keys ({s['dropped_to_balance']} left out to balance them)",
        f"- answers: {s['responses_used']} used, {s['without_key']} without a key (never paired{one_key}), "
        f"{s['duplicates_dropped']} duplicates dropped",
        "",
    ]


PAIRS = Stage(
    PAIRS_FOLDER,
    "Same-answer pairs",
    pairs_block,
    pairs_summary,
    pairs_section,
    links=(("summary.json", "pairs/summary.json"),),
    placement="cpu",
    runs=_with_rollouts,
    tables=("pairs",),
)


# -- labels --------------------------------------------------------------------------------------------------------
@memoised
def labels_steps(plan: Plan) -> list[Step]:
    """The labels the classifier trains on (``labels/``): the judge's, or with a checker the checker's; with both,
    the judge then labels the same pairs into ``labels-judge/``, scored against the checker (its labels unused)."""
    c = plan.config
    common = {"pairs": PAIRS.folder(c.run), "seed": c.seed}
    judged = bool(c.labels.get("judge_model"))
    if c.checker is None:
        return [_judge_step(plan, LABELS.name, common)]
    wired = {**common, "output": LABELS.folder(c.run), "checker": c.checker}
    rule = Step(
        LABELS.name, ("datagen", "label"), stage_config(c, "labels", JudgeConfig, wired, table=False, generates=False)
    )
    rule.explicit = tuple(wired)
    return [rule, *([_judge_step(plan, LABELS_JUDGE, {**common, "checker": c.checker})] if judged else [])]


def labels_step(plan: Plan) -> Step:
    """The step writing ``labels/``, what ``datagen training-pairs`` reads."""
    return labels_steps(plan)[0]


def _judge_step(plan: Plan, folder: str, wired: dict[str, Any]) -> Step:
    c = plan.config
    wired = {**wired, "output": c.run / folder, **threads(c, JudgeConfig, alone=True)}
    config = stage_config(c, "labels", JudgeConfig, wired)
    return Step(folder, ("datagen", "label"), config, explicit=shown(c, wired, "labels"))


def labels_block(plan: Plan) -> Block:
    steps = labels_steps(plan)
    judge = next((s.config for s in steps if s.config.judge_model), None)
    by = f"judge {judge.judge_model}, both orders" if judge else ""
    if plan.config.checker is not None:
        by = f"the {plan.config.checker} checker" + (f"; then {by}, scored against it" if judge else "")
    where = engine_where(judge, by) if judge else f"CPU, seconds: {by}"
    return Block(LABELS.name, where, [step.line(plan.run) for step in steps], steps)


def labels_summary(plan: Plan) -> dict[str, Any]:
    steps = labels_steps(plan)
    first = read_json(Path(steps[0].config.output) / "summary.json")
    if len(steps) == 1:
        return first
    return {**first, "judge_scored": read_json(Path(steps[1].config.output) / "summary.json")}


def labels_section(s: dict[str, Any]) -> list[str]:
    lines = judge_lines(s)
    if "judge_scored" in s:
        judge = s["judge_scored"]
        lines += [f"The judge on the same pairs ([`{LABELS_JUDGE}/`]({LABELS_JUDGE}/)), its labels unused:", ""]
        lines += [*judge_lines(judge), *agreement_lines(judge["agreement"])]
    return lines


def labels_lead(s: dict[str, Any]) -> list[str]:
    """The judge against the checker, in one line (a chain with both)."""
    if "judge_scored" not in s:
        return []
    a = s["judge_scored"]["agreement"]
    per = {name: agreement_cell(r) for name, r in a["per_label"].items()}
    return [
        f"- **The judge against the checker**: `{s['judge_scored']['judge']}` agreed with the {a['checker']} checker "
        f"on {per['equivalent']} of the pairs the checker calls equivalent and {per['different']} of those it calls "
        f"different (a pair it left unlabelled is a miss); the classifier trained on the checker's labels.",
        "",
    ]


def agreement_cell(r: dict[str, Any]) -> str:
    interval = f" [{r['interval'][0]:.2f}, {r['interval'][1]:.2f}]" if r["interval"] else ""
    return f"{fmt(r['agreement'])}{interval} (of {r['pairs']})"


def judge_lines(s: dict[str, Any]) -> list[str]:
    c, b = s["counts"], s["label_balance"]
    if s["engine"] == CHECKER_ENGINE:
        head = f"Labelled by rule, `{s['judge']}`: the same key is equivalent, two different keys are not."
    else:
        orders = "both orders; a pair is labelled only when both orders agree" if s["both_orders"] else "one order"
        prompt = Path(s["prompt"]).name if s["prompt"] != "default" else "datagen's default"
        head = (
            f"Judge `{s['judge']}` ({s['engine']} engine, structured `{s['structured']}`, prompt {prompt}), "
            f"{orders} ({s['judge_calls']} judge calls)."
        )
    return [
        head,
        "",
        "| verdict | pairs |",
        "| --- | ---: |",
        *[f"| {k} | {v} |" for k, v in c.items()],
        f"| → similar = 1 (equivalent) | {b.get('1', 0)} |",
        f"| → similar = 0 (different) | {b.get('0', 0)} |",
        "",
    ]


def agreement_lines(a: dict[str, Any]) -> list[str]:
    """The judge against the checker, per checker label (a pair the judge left unlabelled is a miss)."""

    def row(name: str, r: dict[str, Any]) -> str:
        share = agreement_cell(r).rsplit(" (of", 1)[0]
        return (
            f"| {name} | {r['pairs']} | {r['judged_equivalent']} | {r['judged_different']} | {r['unlabelled']} | "
            f"{share} |"
        )

    per = a["per_label"]
    total = sum(r["pairs"] for r in per.values())
    shown_all = agreement_cell({**a["overall"], "pairs": total}).rsplit(" (of", 1)[0]
    return [
        f"**The judge against the {a['checker']} checker** (bootstrap 95% intervals over pairs; {a['misses']}):",
        "",
        "| the checker says | pairs | judge: equivalent | judge: different | judge: no label | agreement |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        row("equivalent", per["equivalent"]),
        row("different", per["different"]),
        f"| all | {total} | | | | {shown_all} |",
        "",
    ]


LABELS = Stage(
    LABELS_FOLDER,
    "Judge labels",
    labels_block,
    labels_summary,
    labels_section,
    runs=_with_rollouts,
    lead=labels_lead,
    tables=("labels",),
)
