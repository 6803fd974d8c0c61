"""The in-process stages of the ``cpu`` chain: each calls one stage's Python API into its own folder of RUN and
returns a JSON summary (the numbers report.md shows). Every API resumes by itself, so calling a stage again
after an interruption continues it."""

from __future__ import annotations

import gc
import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import PipelineConfig
from darling.pipeline.steps import (
    EVAL_NAME,
    classifier_step,
    datagen_step,
    eval_math_steps,
    eval_novelty_steps,
    labels_step,
    pairs_step,
    rl_step,
)


class StageFailed(RuntimeError):
    """A stage finished with failed items (e.g. judge calls); rerunning the pipeline retries them."""


@dataclass
class Context:
    config: PipelineConfig
    progress: bool
    log: Callable[[str], None]

    @property
    def run(self) -> Path:
        return self.config.run


def _write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=2, default=str) + "\n").encode())


# -- 1. rollouts ---------------------------------------------------------------------------------------------
def datagen(ctx: Context) -> dict[str, Any]:
    import polars as pl

    from darling.datagen.rollouts import generate_rollouts, import_champ, read_rollouts

    c, step = ctx.config, datagen_step(ctx.config)
    config = step.config
    if step.params.get("import_") == "champ":
        run = import_champ(config.output, limit=config.limit, progress=ctx.progress)
        mode = f"CHAMP import: the real responses of 4 models to the first {c.datagen_limit or 270} problems"
    else:
        run = generate_rollouts(config, progress=ctx.progress)
        names = ", ".join(s.name for s in config.generator_specs())
        mode = f"generated: {names} on {c.datagen_problems}, n = {c.rollout_n}"
        if run.failed:
            raise StageFailed(f"datagen: {run.failed} responses failed; rerun to retry them")
    rows = read_rollouts(config.output)
    ok = rows.filter(pl.col("status") == "ok")
    return {
        "mode": mode,
        "rollouts": rows.height,
        "problems": rows["problem_id"].n_unique(),
        "models": sorted(rows["model"].unique().to_list()),
        "with_final_answer": int(ok["extracted_answer"].is_not_null().sum()),
        "correct": int(ok["correct"].fill_null(False).sum()),
        "new_this_run": run.generated,
    }


# -- 2. pairs ------------------------------------------------------------------------------------------------
def pairs(ctx: Context) -> dict[str, Any]:
    from darling.datagen.pairs import build_pairs

    c = ctx.config
    s = build_pairs(pairs_step(c).config, progress=ctx.progress)
    return {
        "pairs": s.pairs,
        "problems_with_pairs": s.problems_with_pairs,
        "responses_used": s.responses_used,
        "duplicates_dropped": s.duplicates_dropped,
        "per_model_pair": dict(sorted(s.per_model_pair.items())),
        "cross_model_only": c.cross_model_only,
        "max_pairs_per_problem": c.pairs_per_problem,
    }


# -- 3. judge labels -----------------------------------------------------------------------------------------
def labels(ctx: Context) -> dict[str, Any]:
    from darling.datagen.judge import label_pairs

    c = ctx.config
    config = labels_step(c).config
    prompt = config.prompt_file
    s = label_pairs(config, progress=ctx.progress)
    if s.counts.get("failed"):
        raise StageFailed(f"labels: {s.counts['failed']} pairs failed (engine errors); rerun to retry them")
    return {
        "judge": c.judge_model,
        "engine": c.judge_engine,
        "structured": c.judge_structured,
        "prompt": f"compact ([`inputs/{prompt.name}`](inputs/{prompt.name}))" if prompt else "datagen's default",
        "both_orders": True,
        "counts": s.counts,
        "label_balance": {str(k): v for k, v in sorted(s.label_balance.items())},
        "judge_calls": s.requests,
    }


# -- 4. classifier: train, calibrate, export -----------------------------------------------------------------
def classifier_data(ctx: Context) -> dict[str, Any]:
    """``classifier/train-pairs.jsonl``: the judge's labels, plus NoveltyBench's human pairs when the judge gave
    too few labels of a class (the classifier needs both, and a validation split of both)."""
    import polars as pl

    from darling.classifier.data import BUILTIN_PAIRS, load_pairs

    c = ctx.config
    labelled = pl.read_parquet(ctx.run / "labels" / "labelled.parquet")
    balance = {label: int((labelled["similar"] == label).sum()) for label in (0, 1)}
    rows = [
        {
            "id": r["pair_id"],
            "prompt": r["prompt"],
            "generation_0": r["generation_0"],
            "generation_1": r["generation_1"],
            "similar": int(r["similar"]),
            "source": "judge",
        }
        for r in labelled.iter_rows(named=True)
    ]
    needed = max(c.min_labels_per_class, 7)  # the stratified 15% validation split needs 7 of each class
    fallback = min(balance.values()) < needed
    reason = None
    if fallback:
        reason = (
            f"the judge labelled {balance[1]} pairs equivalent and {balance[0]} different; the classifier needs "
            f"at least {needed} of each, so {c.fallback_pairs} of NoveltyBench's human-labelled pairs "
            "(built in) were mixed in"
        )
        builtin = load_pairs("noveltybench").pairs
        sample = random.Random(c.seed).sample(builtin, min(c.fallback_pairs, len(builtin)))
        rows += [
            {
                "id": f"noveltybench:{p.pair_id}",
                "prompt": p.prompt,
                "generation_0": p.generation_0,
                "generation_1": p.generation_1,
                "similar": p.similar,
                "source": "noveltybench",
            }
            for p in sample
        ]
    path = ctx.run / "classifier" / "train-pairs.jsonl"
    atomic_write_bytes(path, "".join(json.dumps(r) + "\n" for r in rows).encode())
    by_source = {s: sum(r["source"] == s for r in rows) for s in ("judge", "noveltybench")}
    return {
        "file": str(path),
        "pairs": len(rows),
        "by_source": by_source,
        "judge_balance": balance,
        "balance": {str(k): sum(r["similar"] == k for r in rows) for k in (0, 1)},
        "fallback": fallback,
        "fallback_reason": reason,
        "noveltybench_file": str(BUILTIN_PAIRS["noveltybench"]) if fallback else None,
    }


def classifier(ctx: Context) -> dict[str, Any]:
    from darling.classifier.train import train_classifier

    c, step = ctx.config, classifier_step(ctx.config)
    config, out = step.config, step.params["output"]
    data = classifier_data(ctx)
    if data["fallback"]:
        ctx.log(f"  note: {data['fallback_reason']}")
    resume = (out / "training" / "checkpoints" / "last.ckpt").exists()
    result = train_classifier(config, step.params["data"], out, resume=resume, progress=ctx.progress)
    metrics = {k: v for k, v in result.metrics.items() if isinstance(v, int | float)}
    del result
    gc.collect()
    return {
        "data": data,
        "preset": c.classifier_preset,
        "kind": config.kind,
        "backbone": config.backbone,
        "max_steps": config.max_steps,
        "max_tokens_per_response": config.max_tokens_per_response,
        "validation": metrics,
        "resumed": resume,
    }


# -- 5. RL -----------------------------------------------------------------------------------------------------
STEP_KEYS = (
    "reward",
    "darling/quality",
    "darling/diversity",
    "darling/distinct_per_group",
    "darling/classifier_pairs",
    "darling/classifier_pairs_saved",
    "loss",
    "grad_norm",
)


def _max_weight_change(before_dir: Path, after_dir: Path) -> float | None:
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


def rl(ctx: Context) -> dict[str, Any]:
    from darling.core.local_models import resolve_model
    from darling.rl.train import rl_train

    c, out = ctx.config, ctx.run / "rl"
    for leftover in out.glob(".pruned-*"):  # a prune that was interrupted
        shutil.rmtree(leftover, ignore_errors=True)
    config = rl_step(c).config
    resumed = any(out.glob("checkpoint-*"))
    trainer = rl_train(config, resume=None)  # continue a checkpoint an interrupted run left, if any
    history = trainer.state.log_history
    del trainer
    gc.collect()
    _write_json(out / "log_history.json", history)
    steps = [{"step": h["step"], **{k: h[k] for k in STEP_KEYS if k in h}} for h in history if "darling/reward" in h]
    change = _max_weight_change(Path(resolve_model(config.policy)), out / "final")
    pruned = []
    if not c.keep_checkpoints:  # rename first (atomic), so a resume never sees half a checkpoint
        for ckpt in sorted(out.glob("checkpoint-*")):
            target = out / f".pruned-{ckpt.name}"
            ckpt.rename(target)
            shutil.rmtree(target)
            pruned.append(ckpt.name)
    rewarded = sum(1 for s in steps if s.get("reward", 0) != 0)
    return {
        "policy": config.policy,
        "problems": config.problems,
        "max_steps": config.max_steps,
        "num_generations": config.num_generations,
        "max_completion_length": config.max_completion_length,
        "learning_rate": config.learning_rate,
        "temperature": config.temperature,
        "steps": steps,
        "steps_with_nonzero_reward": rewarded,
        "max_weight_change": change,
        "checkpoints_pruned": pruned,
        "resumed": resumed,
    }


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


RUNNERS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "datagen": datagen,
    "pairs": pairs,
    "labels": labels,
    "classifier": classifier,
    "rl": rl,
    "eval-math": eval_math,
    "eval-novelty": eval_novelty,
}
