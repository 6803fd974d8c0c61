"""The in-process policy stages of the ``cpu`` chain: DARLING RL (``rl``), its GRPO baseline (``rl-grpo``),
``eval-math``, ``eval-novelty`` and the DARLING-vs-GRPO comparison (``compare``). Like ``stages.py``, each
calls a Python API into its own folder of RUN and returns the JSON summary report.md shows."""

from __future__ import annotations

import gc
import json
import os
import shlex
import shutil
import subprocess
import sys
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


# -- 5. RL: DARLING, and the GRPO baseline beside it ------------------------------------------------------------
def train_in_process(ctx: Context, grpo: bool) -> None:
    from darling.rl.train import rl_train

    config = rl_step(ctx.config, grpo=grpo).config
    for leftover in Path(config.output).glob(".pruned-*"):  # a prune that was interrupted
        shutil.rmtree(leftover, ignore_errors=True)
    trainer = rl_train(config, resume=None)  # continue a checkpoint an interrupted run left, if any
    del trainer
    gc.collect()


def start_baseline(ctx: Context) -> subprocess.Popen:
    """The GRPO baseline as its own process, running its ``commands.sh`` line (which resumes a checkpoint an
    interrupted run left): on 2 cores the two runs side by side take ~60% of the time of one after the other."""
    out = ctx.run / "rl-grpo"
    out.mkdir(parents=True, exist_ok=True)
    for leftover in out.glob(".pruned-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    line = rl_step(ctx.config, grpo=True).line(ctx.run)
    assert line.startswith("darling ")
    command = f"{shlex.quote(sys.executable)} -m darling {line[len('darling ') :]}"
    log = open(out / "train.log", "ab")  # noqa: SIM115 (closed by the child's end; the parent keeps no handle)
    try:
        return subprocess.Popen(
            ["bash", "-c", command], env={**os.environ, "RUN": str(ctx.run)}, stdout=log, stderr=log
        )
    finally:
        log.close()


def finished(out: Path) -> bool:
    return (out / "final" / "config.json").exists() and (out / "log_history.json").exists()


def summarise_run(ctx: Context, grpo: bool, **extra: Any) -> dict[str, Any]:
    """The run's settings and per-step metrics (from ``OUTPUT/log_history.json``); prunes its checkpoints."""
    from darling.core.local_models import resolve_model

    c = ctx.config
    config = rl_step(c, grpo=grpo).config
    out = Path(config.output)
    history = json.loads((out / "log_history.json").read_text())
    steps = [{"step": h["step"], **{k: h[k] for k in STEP_KEYS if k in h}} for h in history if "darling/reward" in h]
    change = max_weight_change(Path(resolve_model(config.policy)), out / "final")
    pruned = []
    if not c.keep_checkpoints:  # rename first (atomic), so a resume never sees half a checkpoint
        for ckpt in sorted(out.glob("checkpoint-*")):
            target = out / f".pruned-{ckpt.name}"
            ckpt.rename(target)
            shutil.rmtree(target)
            pruned.append(ckpt.name)
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
        "steps_with_nonzero_reward": sum(1 for s in steps if s.get("reward", 0) != 0),
        "max_weight_change": change,
        "checkpoints_pruned": pruned,
        **extra,
    }


def rl(ctx: Context) -> dict[str, Any]:
    """DARLING in process; with ``grpo_baseline`` the GRPO run trains at the same time in a second process."""
    baseline_out = ctx.run / "rl-grpo"
    baseline = start_baseline(ctx) if ctx.config.grpo_baseline and not finished(baseline_out) else None
    try:
        train_in_process(ctx, grpo=False)
    except BaseException:
        if baseline is not None:
            baseline.terminate()
            baseline.wait()
        raise
    if baseline is not None and baseline.wait() != 0:
        raise StageFailed(
            f"rl: the GRPO baseline exited with {baseline.returncode} (see {baseline_out / 'train.log'}); "
            "rerun to resume both"
        )
    return summarise_run(ctx, grpo=False)


def rl_grpo(ctx: Context) -> dict[str, Any]:
    """The GRPO baseline: normally trained beside DARLING by the ``rl`` stage; trained here if it was not."""
    concurrent = finished(ctx.run / "rl-grpo")
    if not concurrent:
        train_in_process(ctx, grpo=True)
    note = "trained beside rl/ in its own process, during the rl stage" if concurrent else "trained in this stage"
    return summarise_run(ctx, grpo=True, trained=note)


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
        prompt_set=c.novelty_prompts,
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
