"""The in-process stages of the ``cpu`` chain up to the classifier (the policy stages are in
``policy_stages.py``): each calls one stage's Python API into its own folder of RUN and returns a JSON summary
(the numbers report.md shows). Every API resumes by itself, so calling a stage again after an interruption
continues it."""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import PipelineConfig
from darling.pipeline.steps import classifier_step, datagen_step, labels_step, pairs_step


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


def write_json(path: Path, data: Any) -> None:
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
def plan_notes(config: PipelineConfig) -> list[str]:
    """What the chain does by design that a reader could mistake for a rescue, said before it starts."""
    notes = []
    if config.classifier_data == "human":
        notes.append(
            f"the classifier trains on {config.human_pairs} of NoveltyBench's human-labelled pairs by design: "
            f"{config.judge_model} cannot tell solution strategies apart (as a judge it calls nearly every pair "
            "'same strategy'); the judge stage still runs and its verdicts are reported, not trained on"
        )
    if config.grpo_baseline:
        notes.append(
            "rl/ (DARLING) and rl-grpo/ (GRPO: quality only) train with the same settings and seeds, and are "
            f"compared with the base policy on {config.novelty_prompts} (prompts neither run trains on)"
        )
    return notes


def human_pair_rows(c: PipelineConfig) -> list[dict[str, Any]]:
    """A seeded sample of ``human_pairs`` of NoveltyBench's built-in human-labelled pairs, as train-pairs rows."""
    from darling.classifier.data import load_pairs

    builtin = load_pairs("noveltybench").pairs
    sample = random.Random(c.seed).sample(builtin, min(c.human_pairs, len(builtin)))
    return [
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


def classifier_data(ctx: Context) -> dict[str, Any]:
    """``classifier/train-pairs.jsonl``: the judge's labels, plus NoveltyBench's human pairs when the judge gave
    too few labels of a class (the classifier needs both, and a validation split of both); with
    ``classifier_data=human``, the human pairs only, by design."""
    import polars as pl

    from darling.classifier.data import BUILTIN_PAIRS

    c = ctx.config
    labelled = pl.read_parquet(ctx.run / "labels" / "labelled.parquet")
    balance = {label: int((labelled["similar"] == label).sum()) for label in (0, 1)}
    by_design = c.classifier_data == "human"
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
        if not by_design
    ]
    needed = max(c.min_labels_per_class, 7)  # the stratified 15% validation split needs 7 of each class
    fallback = not by_design and min(balance.values()) < needed
    reason = None
    if by_design:
        reason = plan_notes(c)[0]
    elif fallback:
        reason = (
            f"the judge labelled {balance[1]} pairs equivalent and {balance[0]} different; the classifier needs "
            f"at least {needed} of each, so {c.human_pairs} of NoveltyBench's human-labelled pairs "
            "(built in) were mixed in"
        )
    if by_design or fallback:
        rows += human_pair_rows(c)
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
        "by_design": by_design,
        "fallback_reason": reason,
        "noveltybench_file": str(BUILTIN_PAIRS["noveltybench"]) if by_design or fallback else None,
    }


def classifier(ctx: Context) -> dict[str, Any]:
    from darling.classifier.train import train_classifier

    c, step = ctx.config, classifier_step(ctx.config)
    config, out = step.config, step.params["output"]
    data = classifier_data(ctx)
    if data["fallback"]:  # (by design: said before the chain started)
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


RUNNERS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "datagen": datagen,
    "pairs": pairs,
    "labels": labels,
    "classifier": classifier,
}
