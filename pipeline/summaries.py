"""What each stage did, read from the files its commands wrote (the numbers ``report.md`` shows): the runner calls
the stage's summary (``pipeline/stages.py`` names it) once its block has run, so a summary never depends on the
process that ran it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from darling.core.local_models import resolve_model
from darling.core.training_log import REWARD, STEP_METRICS
from darling.datagen.rollouts import read_rollouts
from darling.evals.prompt_metrics import PROMPT_METRIC_NAMES, mean_key
from darling.pipeline.config import PipelineConfig
from darling.pipeline.stage_commands import (
    COMPARE,
    COMPARE_TRAIN,
    EVAL_NAME,
    NOVELTY_TRAIN,
    Step,
    classifier_step,
    datagen_step,
    eval_creative_step,
    eval_math_steps,
    eval_models,
    eval_novelty_steps,
    labels_step,
    pairs_step,
    rl_step,
    training_pairs_step,
    training_prompts,
    warmup_step,
)

STEP_KEYS = ("reward", *STEP_METRICS, "loss", "grad_norm")  # TRL's own reward, loss and gradient norm beside ours


def _json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def plan_notes(config: PipelineConfig) -> list[str]:
    """What the chain does by design that a reader could mistake for a rescue, said before it starts."""
    notes = []
    data = training_pairs_step(config).config
    if config.classifier_from == "import":
        source = config.import_classifier["source"]
        notes.append(f"the classifier is {source}, imported, not trained: no training pairs are used")
    elif config.rollouts_from == "none":
        notes.append(
            f"the classifier trains on {data.human_pairs} of NoveltyBench's human-labelled pairs: the chat track has "
            "no rollouts or judge"
        )
    elif data.source == "human":
        judge = labels_step(config).config.judge_model
        notes.append(
            f"the classifier trains on {data.human_pairs} of NoveltyBench's human-labelled pairs by design: "
            f"{judge} cannot tell solution strategies apart (as a judge it calls nearly every pair 'same strategy'); "
            "the judge stage still runs and its verdicts are reported, not trained on"
        )
    if config.grpo_baseline:
        prompts = eval_novelty_steps(config)[0].config.prompts
        notes.append(
            "rl/ (DARLING) and rl-grpo/ (GRPO: quality only) train with the same settings and seeds, and are compared "
            f"with the base policy on {prompts}"
        )
    return notes


def datagen(c: PipelineConfig) -> dict[str, Any]:
    import polars as pl

    config = datagen_step(c).config
    if c.rollouts_from == "champ":
        mode = f"CHAMP import: the real responses of 4 models to the first {config.limit or 270} problems"
    else:
        names = ", ".join(s.name for s in config.generator_specs())
        mode = f"generated ({config.engine} engine): {names} on {config.problems}, n = {config.n}"
    rows = read_rollouts(config.output)
    ok = rows.filter(pl.col("status") == "ok")
    return {
        "mode": mode,
        "rollouts": rows.height,
        "failed": rows.height - ok.height,
        "problems": rows["problem_id"].n_unique(),
        "models": sorted(rows["model"].unique().to_list()),
        "with_final_answer": int(ok["extracted_answer"].is_not_null().sum()),
        "correct": int(ok["correct"].fill_null(False).sum()),
    }


def pairs(c: PipelineConfig) -> dict[str, Any]:
    config = pairs_step(c).config
    s = _json(Path(config.output) / "summary.json")
    return {**s, "cross_model_only": config.cross_model_only, "max_pairs_per_problem": config.max_pairs_per_problem}


def labels(c: PipelineConfig) -> dict[str, Any]:
    return _json(Path(labels_step(c).config.output) / "summary.json")


def imported_classifier(c: PipelineConfig) -> dict[str, Any]:
    meta = _json(c.run / "classifier" / "darling.json")
    keys = ("imported", "kind", "backbone", "dtype", "max_tokens_per_response", "threshold")
    return {k: meta[k] for k in keys}


def classifier(c: PipelineConfig) -> dict[str, Any]:
    if c.classifier_from == "import":
        return imported_classifier(c)
    step = classifier_step(c)
    config = step.config
    meta = _json(step.params["output"] / "darling.json")
    data = _json(Path(training_pairs_step(c).config.output) / "summary.json")
    metrics = {k: v for k, v in meta["validation_metrics"].items() if isinstance(v, int | float)}
    return {
        "data": data,
        "preset": step.preset,
        "kind": meta["kind"],
        "backbone": meta["backbone"],
        "dtype": meta["dtype"],
        "schedule": meta.get("schedule"),
        "max_steps": config.max_steps,
        "max_tokens_per_response": meta["max_tokens_per_response"],
        "launcher": " ".join(step.launcher) or None,
        "validation": metrics,
    }


def max_weight_change(before_dir: Path, after_dir: Path) -> float | None:
    """max |w_after - w_before| over the tensors both hold (None unless both are one safetensors file)."""
    from safetensors import safe_open

    a, b = Path(before_dir) / "model.safetensors", Path(after_dir) / "model.safetensors"
    if not (a.exists() and b.exists()):
        return None
    worst = 0.0
    with safe_open(str(a), "pt") as fa, safe_open(str(b), "pt") as fb:
        for key in sorted(set(fa.keys()) & set(fb.keys())):
            x, y = fa.get_tensor(key), fb.get_tensor(key)
            if x.shape == y.shape:
                worst = max(worst, float((x.float() - y.float()).abs().max()))
    return worst


def rl_run(step: Step, reward: str) -> dict[str, Any]:
    """One RL run's settings and per-step metrics (from ``OUTPUT/log_history.json``)."""
    config = step.config
    out = Path(config.output)
    history = _json(out / "log_history.json")
    steps = [{"step": h["step"], **{k: h[k] for k in STEP_KEYS if k in h}} for h in history if REWARD.key in h]
    local = Path(resolve_model(config.policy))
    return {
        "reward": reward,
        "policy": config.policy,
        "problems": config.problems,
        "quality": config.quality if not config.reward_model else f"reward model {config.reward_model}",
        "max_words": config.max_words,
        "strict_length": config.strict_length,
        "floor": config.floor,
        "scale_rewards": config.scale_rewards,
        "max_steps": config.max_steps,
        "num_generations": config.num_generations,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "max_completion_length": config.max_completion_length,
        "learning_rate": config.learning_rate,
        "temperature": config.temperature,
        "seed": config.seed,
        "launcher": " ".join(step.launcher) or None,
        "steps": steps,
        "steps_with_nonzero_reward": sum(1 for s in steps if s.get("reward", 0) != 0),
        "max_weight_change": max_weight_change(local, out / "final") if local.is_dir() else None,
        "checkpoints_left": sorted(p.name for p in out.glob("checkpoint-*")),
    }


def rl(c: PipelineConfig) -> dict[str, Any]:
    warmup = warmup_step(c)
    runs = {} if warmup is None else {"warmup": rl_run(warmup, "quality only (the GRPO warm-up both runs start from)")}
    darling = rl_step(c)
    runs["darling"] = rl_run(darling, f"quality x diversity ({darling.config.combine})")
    if c.grpo_baseline:
        runs["grpo"] = rl_run(rl_step(c, grpo=True), "quality only (GRPO baseline)")
    return {"runs": runs, "side_by_side": c.jobs > 1 and c.grpo_baseline, "served_classifier": c.serve_classifier}


def eval_math(c: PipelineConfig) -> dict[str, Any]:
    models, datasets, ks = {}, [], set()
    for name, step in zip(eval_models(c), eval_math_steps(c), strict=True):
        metrics = _json(Path(step.config.output) / "metrics.json")
        m = metrics["models"][EVAL_NAME]
        models[name] = {"n": m["n"], "problems": m["mean"]["problems"], "pass@k": m["mean"]["pass@k"]}
        datasets = metrics["datasets"]
        ks |= set(metrics["ks"])
    config = eval_math_steps(c)[0].config
    return {
        "datasets": datasets,
        "ks": sorted(ks),
        "models": models,
        "model_paths": eval_models(c),
        "n": config.n,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "engine": config.engine,
        "paired_seeds": True,
    }


def eval_novelty(c: PipelineConfig) -> dict[str, Any]:
    """Per policy its means on the held-out prompts (``models``) and, with ``evaluate_training_prompts``, on the RL
    prompts (``train_models``, ``train_prompts``)."""
    summary: dict[str, Any] = {"models": {}}
    for step in eval_novelty_steps(c):
        output = Path(step.config.output)
        m = _json(output / "metrics.json")
        train = output.parent.name == NOVELTY_TRAIN
        summary.setdefault("train_models" if train else "models", {})[output.name] = {
            "model": step.config.model,
            **{k: m[k] for k in ("n_prompts", "k", *map(mean_key, PROMPT_METRIC_NAMES), "threshold", "partition")},
        }
        summary["train_prompts" if train else "prompts"] = str(step.config.prompts)
        summary.update(quality=m["quality"], patience=m["utility"]["patience"])
    return summary


def eval_creative(c: PipelineConfig) -> dict[str, Any]:
    step = eval_creative_step(c)
    m = _json(c.run / "eval-creative" / "metrics.json")
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


def compare(c: PipelineConfig) -> dict[str, Any]:
    """``compare/compare.json`` (held-out prompts) and, under ``train``, ``compare-train/``'s (the RL prompts)."""
    s = _json(c.run / COMPARE / "compare.json")
    novelty = eval_novelty_steps(c)[0].config
    summary = {**s, "prompt_set": novelty.prompts, "k": novelty.k, "temperature": novelty.temperature}
    if c.evaluate_training_prompts:
        train = _json(c.run / COMPARE_TRAIN / "compare.json")
        summary["train"] = {**train["novelty"], "prompt_set": training_prompts(c)["prompts"]}
    return summary
