"""The chain as ``darling`` commands: ``RUN/commands.sh`` (one block per stage, resources in comments) and
the input files those commands name (``RUN/inputs/``).

For the ``cpu`` preset the script documents, command for command, what ``run_pipeline`` does in process
(the one step with no command of its own, mixing NoveltyBench pairs into the classifier's data, is a
comment). For ``paper`` the script *is* the run: on a CUDA machine ``run_pipeline`` executes each block in
turn, recording each as a stage; each command resumes by itself, so a rerun continues where it stopped.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from darling import __version__
from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import PipelineConfig
from darling.pipeline.resources import ACCELERATE_ZERO3, COMPACT_JUDGE_PROMPT, NOVELTY_PROMPTS, PAPER_GENERATORS
from darling.pipeline.steps import (
    EVAL_NAME,
    SERVED_URLS,
    classifier_step,
    datagen_step,
    eval_math_steps,
    eval_models,
    eval_novelty_steps,
    input_files,
    labels_step,
    pairs_step,
    rl_step,
    run_relative,
    serve_step,
)

# Every stage, in order; a config runs a subsequence (rl-grpo and compare only with grpo_baseline).
STAGES = ("datagen", "pairs", "labels", "classifier", "rl", "rl-grpo", "eval-math", "eval-novelty", "compare")
COMMANDS_FILE = "commands.sh"


@dataclass
class StageCommands:
    name: str
    resources: str  # one comment line: what it needs (GPUs, CPU minutes)
    lines: list[str] = field(default_factory=list)  # shell lines (commands and comments)
    gpu_only: bool = False

    def describe(self) -> str:
        return ("[GPU-only] " if self.gpu_only else "") + self.resources


def rollout_generators(config: PipelineConfig) -> list[dict]:
    if config.rollout_models:
        return [{"name": m.rsplit("/", 1)[-1], "model": m} for m in config.rollout_models]
    return [dict(g) for g in PAPER_GENERATORS]


def eval_generator(config: PipelineConfig, model: str) -> dict:
    """One eval-math generator, prompted as the policy was trained (the rl template, no system prompt)."""
    return {"name": EVAL_NAME, "model": model, "system_prompt": None, "user_template": config.policy_template()}


def write_inputs(config: PipelineConfig) -> dict[str, Path]:
    """Write (atomically, identically on every run) the input files the stages and commands.sh use."""
    files = input_files(config)
    contents = {
        "novelty_prompts": "".join(json.dumps(p) + "\n" for p in NOVELTY_PROMPTS),  # novelty_prompts=pipeline
        **{
            f"eval_generators:{name}": json.dumps({"generators": [eval_generator(config, model)]}, indent=2) + "\n"
            for name, model in eval_models(config).items()
        },
        "judge_prompt": COMPACT_JUDGE_PROMPT,
        "generators": json.dumps({"generators": rollout_generators(config)}, indent=2) + "\n",
        "accelerate": ACCELERATE_ZERO3,
    }
    for role, path in files.items():
        data = contents[role].encode()
        if not path.exists() or path.read_bytes() != data:
            atomic_write_bytes(path, data)
    return files


def _cmd(*parts: object) -> str:
    """A non-darling command line (``accelerate``); ``$RUN/...`` stays expandable, everything else is quoted."""
    return " ".join(f'"{p}"' if str(p).startswith("$RUN") else shlex.quote(str(p)) for p in parts)


def _rel(config: PipelineConfig, path: Path) -> str:
    return "$RUN/" + str(Path(path).relative_to(config.run))


def _datagen_block(c: PipelineConfig) -> StageCommands:
    if c.datagen == "champ":
        s = StageCommands("datagen", "CPU, seconds: CHAMP's real responses (GPT-3.5, GPT-4, GPT-4 Turbo, PaLM 2)")
    else:
        where = (
            "vLLM in process, one generator at a time, tensor parallel "
            f"{c.rollout_tensor_parallel} (QwQ-32B and Llama-4-Maverick need the whole 8-GPU node)"
            if c.rollout_engine == "vllm"
            else f"{c.rollout_engine} engine"
        )
        s = StageCommands("datagen", where, gpu_only=c.rollout_engine == "vllm")
        s.lines.append(f"# generators (names, models, per-model limits): {_rel(c, input_files(c)['generators'])}")
    s.lines.append(datagen_step(c).line(c.run))
    return s


def _labels_block(c: PipelineConfig) -> StageCommands:
    if c.judge_engine == "vllm":
        where = f"{c.judge_model} in process (vLLM), tensor parallel {c.judge_tensor_parallel} (70B in bf16: 4 x 80 GB)"
    else:
        where = f"CPU: {c.judge_model} in process ({c.judge_engine} engine), both orders, ~5 s per call on 1 core"
    return StageCommands("labels", where, [labels_step(c).line(c.run)], gpu_only=c.judge_engine == "vllm")


def _classifier_block(c: PipelineConfig) -> StageCommands:
    if c.needs_gpu:
        where = (
            f"Qwen3-Embedding-4B, bf16, gradient checkpointing, {c.classifier_devices} GPUs ({c.classifier_strategy})"
        )
        s = StageCommands("classifier", where, gpu_only=True)
    else:
        s = StageCommands("classifier", "CPU, 1-2 minutes: the packaged MiniLM encoder, a few optimiser steps")
        if c.classifier_data == "human":
            what = (
                f"{c.human_pairs} of the built-in NoveltyBench human-labelled pairs (by design: a 135M judge cannot "
                "label strategies; its verdicts are reported, not trained on)"
            )
        else:
            what = (
                f"the judge's labels, plus {c.human_pairs} of the built-in NoveltyBench human pairs when the judge "
                f"gives fewer than {c.min_labels_per_class} labels of either class"
            )
        s.lines.append(f"# Before this command the pipeline writes $RUN/classifier/train-pairs.jsonl: {what}.")
    s.lines.append(classifier_step(c).line(c.run))
    return s


def _rl_blocks(c: PipelineConfig) -> list[StageCommands]:
    if c.needs_gpu:
        return [_rl_gpu_block(c)]
    step = rl_step(c)
    settings = step.config.to_dict()
    where = (
        f"CPU, minutes: {c.policy()} policy, {settings['problems']} problems, TRL GRPOTrainer, "
        f"{settings['max_steps']} steps"
    )
    blocks = [StageCommands("rl", where + ", the DARLING reward", [step.line(c.run)])]
    if c.grpo_baseline:
        line = rl_step(c, grpo=True).line(c.run)
        blocks.append(StageCommands("rl-grpo", where + ": the GRPO baseline, the same settings and seeds", [line]))
    return blocks


def _rl_gpu_block(c: PipelineConfig) -> StageCommands:
    where = "8 GPUs: 2 serve the classifier (vLLM), 6 train with TRL (DeepSpeed ZeRO-3, vLLM colocate generation)"
    launch = _cmd("accelerate", "launch", "--num_processes", 6, "--config_file", _rel(c, input_files(c)["accelerate"]))
    lines = [
        serve_step(c).line(c.run) + " &",
        "SERVER=$!; trap 'kill \"$SERVER\" 2>/dev/null || true' EXIT",
        "until curl -sf http://127.0.0.1:8001/health >/dev/null; do sleep 10; done  # both replicas up",
        f"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 {launch} -m {rl_step(c, classifier_urls=SERVED_URLS).line(c.run)}",
        'kill "$SERVER"; trap - EXIT  # free GPUs 6-7 for the evaluations',
    ]
    return StageCommands("rl", where, lines, gpu_only=True)


def _eval_blocks(c: PipelineConfig) -> list[StageCommands]:
    where = "vLLM, 1 GPU per model" if c.eval_engine == "vllm" else "CPU: each model through the hf engine"
    math = StageCommands("eval-math", where, gpu_only=c.eval_engine == "vllm")
    models = ", ".join(f"{name} = {run_relative(model, c.run)}" for name, model in eval_models(c).items())
    math.lines.append(f"# {models}; each named '{EVAL_NAME}' so all draw the same seeds (paired); math prompts")
    math.lines += [step.line(c.run) for step in eval_math_steps(c).values()]
    vllm = c.novelty_engine == "vllm"
    where = (
        "vLLM generation; the classifier in process" if vllm else "CPU: hf generation, the fresh classifier in process"
    )
    novelty = StageCommands(
        "eval-novelty", where + "; no reward model, so quality = 1 and utility measures diversity only", gpu_only=vllm
    )
    novelty.lines += [step.line(c.run) for step in eval_novelty_steps(c).values()]
    blocks = [math, novelty]
    if c.grpo_baseline:
        compare = StageCommands("compare", "CPU, seconds: recomputed from the saved generations and training logs")
        compare.lines.append(
            "# No command of its own: darling.pipeline.compare reads eval-novelty/*/scores.parquet and "
            "rl*/log_history.json -> compare/compare.json, compare/curves.png (paired bootstrap over prompts)"
        )
        blocks.append(compare)
    return blocks


def stage_commands(config: PipelineConfig) -> list[StageCommands]:
    """Each stage's block of ``commands.sh``: the same ``Step`` objects ``stages.py`` runs, rendered."""
    pairs = StageCommands("pairs", "CPU (math-verify), seconds to minutes", [pairs_step(config).line(config.run)])
    stages = [
        _datagen_block(config),
        pairs,
        _labels_block(config),
        _classifier_block(config),
        *_rl_blocks(config),
        *_eval_blocks(config),
    ]
    names = [st.name for st in stages]
    assert names == [name for name in STAGES if name in names]
    return stages


def render_script(config: PipelineConfig, stages: list[StageCommands]) -> str:
    head = [
        "#!/usr/bin/env bash",
        f"# darling {__version__} pipeline, preset {config.preset}: {len(stages)} stages, one block each.",
        "# Written by `darling pipeline` (manifest.json holds the full config, versions and file hashes).",
        "# Every command resumes by itself: rerun this script (or the same `darling pipeline`) after an interruption.",
    ]
    if config.preset == "paper":
        head.append("# GPU-only: meant for one node with 8 x 80 GB GPUs (CUDA); nothing here runs on a CPU machine.")
        head.append("# Check the model and dataset names in inputs/ against your hub mirror before starting.")
    else:
        head.append("# CPU: what `darling pipeline --preset cpu` runs in process (about 12 minutes on 2 cores).")
    lines = [*head, "set -euo pipefail", f"RUN=${{RUN:-{shlex.quote(str(config.run))}}}", ""]
    for i, stage in enumerate(stages, 1):
        lines += [f"# == {i}/{len(stages)} {stage.name} — {stage.describe()}", *stage.lines, ""]
    return "\n".join(lines)


def write_commands(config: PipelineConfig) -> tuple[Path, list[StageCommands]]:
    stages = stage_commands(config)
    path = config.run / COMMANDS_FILE
    data = render_script(config, stages).encode()
    if not path.exists() or path.read_bytes() != data:  # a rerun leaves it (and its mtime) alone
        atomic_write_bytes(path, data)
        path.chmod(0o755)
    return path, stages
