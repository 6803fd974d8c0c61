"""The in-process policy stages of the ``cpu`` chain: DARLING RL (``rl``), its GRPO baseline (``rl-grpo``),
``eval-math``, ``eval-novelty`` and the DARLING-vs-GRPO comparison (``compare``). Like ``stages.py``, each
calls a Python API into its own folder of RUN and returns the JSON summary report.md shows."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from darling.pipeline.stages import Context, StageFailed, write_json
from darling.pipeline.steps import EVAL_MODELS, EVAL_NAME, GRPO_MODEL, eval_math_steps, eval_novelty_steps, rl_step

STEP_KEYS = (
    "reward",
    "darling/quality",
    "darling/diversity",
    "darling/distinct_per_group",
    "darling/distinct_answers",
    "darling/classifier_pairs",
    "darling/classifier_pairs_saved",
    "loss",
    "grad_norm",
)


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


# -- 5. RL: DARLING, and the GRPO baseline ---------------------------------------------------------------------
def train_policy(ctx: Context, grpo: bool) -> dict[str, Any]:
    from darling.core.local_models import resolve_model
    from darling.rl.train import rl_train

    c = ctx.config
    config = rl_step(c, grpo=grpo).config
    out = Path(config.output)
    for leftover in out.glob(".pruned-*"):  # a prune that was interrupted
        shutil.rmtree(leftover, ignore_errors=True)
    resumed = any(out.glob("checkpoint-*"))
    trainer = rl_train(config, resume=None)  # continue a checkpoint an interrupted run left, if any
    history = trainer.state.log_history
    del trainer
    gc.collect()
    write_json(out / "log_history.json", history)
    steps = [{"step": h["step"], **{k: h[k] for k in STEP_KEYS if k in h}} for h in history if "darling/reward" in h]
    change = max_weight_change(Path(resolve_model(config.policy)), out / "final")
    pruned = []
    if not c.keep_checkpoints:  # rename first (atomic), so a resume never sees half a checkpoint
        for ckpt in sorted(out.glob("checkpoint-*")):
            target = out / f".pruned-{ckpt.name}"
            ckpt.rename(target)
            shutil.rmtree(target)
            pruned.append(ckpt.name)
    rewarded = sum(1 for s in steps if s.get("reward", 0) != 0)
    return {
        "reward": "quality only (GRPO baseline)" if grpo else f"quality x diversity ({config.combine})",
        "policy": config.policy,
        "problems": config.problems,
        "quality": config.quality if not config.reward_model else f"reward model {config.reward_model}",
        "max_words": config.max_words,
        "max_steps": config.max_steps,
        "num_generations": config.num_generations,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "max_completion_length": config.max_completion_length,
        "learning_rate": config.learning_rate,
        "temperature": config.temperature,
        "seed": config.seed,
        "steps": steps,
        "steps_with_nonzero_reward": rewarded,
        "max_weight_change": change,
        "checkpoints_pruned": pruned,
        "resumed": resumed,
    }


def rl(ctx: Context) -> dict[str, Any]:
    return train_policy(ctx, grpo=False)


def rl_grpo(ctx: Context) -> dict[str, Any]:
    return train_policy(ctx, grpo=True)


# -- 6. eval math ----------------------------------------------------------------------------------------------
def eval_math(ctx: Context) -> dict[str, Any]:
    from darling.evals.math import evaluate_math
    from darling.pipeline.steps import eval_models

    c = ctx.config
    models, paths, ks, datasets = {}, {}, set(), []
    steps = eval_math_steps(c)
    for name, model in eval_models(c).items():  # one folder each, the same model name: paired seeds
        config = steps[name].config
        metrics = evaluate_math(config, progress=ctx.progress)
        if metrics["generation"] and metrics["generation"]["failed"]:
            raise StageFailed(f"eval-math: {metrics['generation']['failed']} samples of {name} failed; rerun to retry")
        m = metrics["models"][EVAL_NAME]
        models[name] = {"n": m["n"], "problems": m["mean"]["problems"], "pass@k": m["mean"]["pass@k"]}
        paths[name], datasets = model, metrics["datasets"]
        ks |= set(metrics["ks"])
    return {
        "datasets": datasets,
        "ks": sorted(ks),
        "models": models,
        "model_paths": paths,
        "n": c.eval_n,
        "temperature": c.eval_temperature,
        "max_tokens": c.eval_max_tokens,
        "paired_seeds": True,
    }


# -- 7. eval novelty -------------------------------------------------------------------------------------------
def eval_novelty(ctx: Context) -> dict[str, Any]:
    from darling.evals.novelty import evaluate_novelty

    c = ctx.config
    results = {}
    for name, step in eval_novelty_steps(c).items():  # novelty seeds do not depend on the model: paired too
        config = step.config
        model, prompts = config.model, config.prompts
        m = evaluate_novelty(config, progress=ctx.progress)
        if m["n_prompts_incomplete"]:
            raise StageFailed(f"eval-novelty: {m['n_prompts_incomplete']} prompts of {name} failed; rerun to retry")
        results[name] = {
            "model": model,
            "n_prompts": m["n_prompts"],
            "k": m["k"],
            "mean_distinct": m["mean_distinct"],
            "mean_utility": m["mean_utility"],
            "mean_quality": m["mean_quality"],
            "threshold": m["threshold"],
            "partition": m["partition"],
        }
        quality = m["quality"]
    return {"models": results, "quality": quality, "prompts": str(prompts), "patience": 0.8}


# -- 8. DARLING against GRPO -----------------------------------------------------------------------------------
def compare(ctx: Context) -> dict[str, Any]:
    from darling.pipeline.compare import compare_policies, plot_curves, training_curves

    c, out = ctx.config, ctx.run / "compare"
    rl_config = rl_step(c).config
    darling, base = EVAL_MODELS[1], EVAL_MODELS[0]
    scores = {name: ctx.run / "eval-novelty" / name / "scores.parquet" for name in (base, GRPO_MODEL, darling)}
    pairs = [(darling, GRPO_MODEL), (darling, base), (GRPO_MODEL, base)]
    quality = rl_config.quality if rl_config.quality != "math" else "short-answer"
    result = compare_policies(scores, quality, rl_config.max_words, pairs, seed=c.seed)
    curves = training_curves(
        {darling: ctx.run / "rl" / "log_history.json", GRPO_MODEL: ctx.run / "rl-grpo" / "log_history.json"}
    )
    plot_curves(curves, out / "curves.png")
    result.update(
        quality=quality,
        max_words=rl_config.max_words,
        prompts=c.novelty_prompts,
        prompts_n=result["prompts"],
        k=c.novelty_k,
        temperature=c.novelty_temperature,
        curves=curves,
        figure=str(out / "curves.png"),
    )
    write_json(out / "compare.json", result)
    return result


RUNNERS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "rl": rl,
    "rl-grpo": rl_grpo,
    "eval-math": eval_math,
    "eval-novelty": eval_novelty,
    "compare": compare,
}
