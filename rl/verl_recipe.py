"""``rl-train --engine verl``: the same settings as a verl run, ``python -m verl.trainer.main_ppo`` with overrides.

Each override is derived from a field of ``RLTrainConfig`` (so a preset, ``paper-math``, is one recipe for TRL and
for verl), plus the training data in verl's Parquet format (``write_verl_data``: the prompt under the preset's
``user_template``, the reference answer as ``reward_model.ground_truth``). The quality is darling's
``compute_quality`` (math-verify, in verl's per-sample reward loop); DARLING's group reward comes from the agent-loop
manager ``darling.rl.verl_agent_loop.DarlingAgentLoopManager`` with its settings under ``+darling.*``; the GRPO
baseline (``--method grpo``) is the same command without them. Keys are verl 0.9's (``reward.*``, not the legacy
``custom_reward_function.*`` that verl 0.9's ``main_ppo`` ignores); tests compose every line against verl's own
Hydra config.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import polars as pl

from darling.core.errors import UserInputError
from darling.core.shards import atomic_write_bytes
from darling.core.training_log import TRL_REWARD
from darling.datagen.problems import load_problems
from darling.rl.config import RLTrainConfig
from darling.rl.verl_settings import VERL_LOSS_AGG, check_verl

MANAGER = "darling.rl.verl_agent_loop.DarlingAgentLoopManager"
DATA_FILE = "train.parquet"


def write_verl_data(config: RLTrainConfig, folder: Path) -> Path:
    """``folder/train.parquet`` in verl's RL format from ``config.problems``; its path."""
    problems = [p for p in load_problems(config.problems, limit=config.limit) if p.reference_answer is not None]
    if not problems:
        raise UserInputError(f"{config.problems}: no problems with a reference answer (verl's math reward needs one)")
    rows = [
        {
            "data_source": "darling-math",
            "prompt": [{"role": "user", "content": config.user_template.replace("{problem}", p.problem)}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(p.reference_answer)},
            "extra_info": {"split": "train", "index": i, "problem_id": str(p.problem_id)},
        }
        for i, p in enumerate(problems)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / DATA_FILE
    tmp = path.with_suffix(".parquet.tmp")
    pl.DataFrame(rows).write_parquet(tmp)
    tmp.replace(path)  # never a half-written file where verl looks
    return path


def batch_shape(config: RLTrainConfig, gpus: int) -> tuple[int, int, int]:
    """(prompts per generation batch, prompts per optimiser step, optimiser steps per generation batch) of the TRL
    settings on ``gpus`` training GPUs: verl's ``data.train_batch_size`` and ``actor.ppo_mini_batch_size``."""
    per_step = config.per_device_train_batch_size * config.gradient_accumulation_steps * gpus
    per_generation = (
        config.per_device_train_batch_size * (config.steps_per_generation or config.gradient_accumulation_steps) * gpus
    )
    if per_step % config.num_generations or per_generation % per_step:
        raise UserInputError(
            f"verl needs whole prompts per optimiser step: {per_step} completions per step on {gpus} GPUs is not a "
            f"multiple of num_generations = {config.num_generations}, or {per_generation} per generation not of it"
        )
    return per_generation // config.num_generations, per_step // config.num_generations, per_generation // per_step


def verl_overrides(config: RLTrainConfig, train_file: Path, gpus: int, nodes: int = 1) -> list[str]:
    """``main_ppo`` overrides (``key=value`` lines) for ``config`` on ``nodes`` x ``gpus`` GPUs."""
    check_verl(config)
    prompts, mini, updates = batch_shape(config, gpus * nodes)
    lines = [
        f"data.train_files={train_file}",
        f"data.val_files={train_file}",  # required by verl; validation is off (test_freq=-1)
        f"data.train_batch_size={prompts}",
        f"data.max_response_length={config.max_completion_length}",
        "data.max_prompt_length=1024",  # verl's default 512 cuts competition problems; longer ones are dropped:
        "data.filter_overlong_prompts=True",
        f"actor_rollout_ref.model.path={config.policy}",
        f"actor_rollout_ref.model.enable_gradient_checkpointing={config.gradient_checkpointing}",
        f"actor_rollout_ref.actor.optim.lr={config.learning_rate}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={mini}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={config.per_device_train_batch_size}",
        f"actor_rollout_ref.actor.loss_agg_mode={VERL_LOSS_AGG[config.loss_type]}",
        f"actor_rollout_ref.actor.use_kl_loss={config.beta > 0}",
        f"actor_rollout_ref.actor.kl_loss_coef={config.beta}",
        f"actor_rollout_ref.actor.entropy_coeff={config.entropy_coef}",  # 0 but for the entropy arm (as TRL's)
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={config.num_generations}",
        f"actor_rollout_ref.rollout.temperature={config.temperature}",
        f"actor_rollout_ref.rollout.gpu_memory_utilization={config.trl.get('vllm_gpu_memory_utilization', 0.5)}",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={config.trl.get('vllm_tensor_parallel_size', 1)}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={config.per_device_train_batch_size}",
        "algorithm.adv_estimator=grpo",
        f"algorithm.norm_adv_by_std_in_grpo={config.scale_rewards == 'group'}",  # verl scales by the group's std
        "algorithm.use_kl_in_reward=False",
        "reward.custom_reward_function.path=pkg://darling.rl.verl_reward",
        "reward.custom_reward_function.name=compute_quality",
        f"trainer.n_gpus_per_node={gpus}",
        f"trainer.nnodes={nodes}",
        f"trainer.total_training_steps={max(1, config.max_steps // updates)}",  # verl counts generation batches
        f"trainer.save_freq={max(1, config.save_steps // updates)}",
        "trainer.test_freq=-1",
        "trainer.val_before_train=False",
        f"trainer.default_local_dir={config.output.resolve() / 'verl' / 'checkpoints'}",  # verl resumes from it
        "trainer.project_name=darling",
        f"trainer.experiment_name={config.output.name}",
        f"trainer.logger=[{','.join(['console', 'file', *[r for r in config.report_to if r != 'none']])}]",
        f"data.seed={config.seed}",
    ]
    if config.arm.partition:  # darling, darling-add: the group reward; grpo: verl's own reward loop alone
        lines += darling_lines(config)
    return lines


def darling_lines(config: RLTrainConfig) -> list[str]:
    """The DARLING reward: darling's agent-loop manager and its settings (``VerlSettings`` fields)."""
    lines = [
        f"+actor_rollout_ref.rollout.agent.agent_loop_manager_class={MANAGER}",
        f"+darling.classifier={Path(str(config.classifier)).resolve()}",  # verl's workers need no cwd of ours
        *(f"+darling.{name}={value}" for name, value in asdict(config.darling_term()).items()),
    ]
    if config.classifier_urls:
        lines.append(f"+darling.classifier_urls=[{','.join(config.classifier_urls)}]")
    if config.classifier_threshold is not None:
        lines.append(f"+darling.threshold={config.classifier_threshold}")
    if config.classifier_device is not None:
        lines.append(f"+darling.classifier_device={config.classifier_device}")
    return lines


def main_ppo_command(overrides: list[str], python: str = "python") -> str:
    """The shell command, one override per line."""
    return " \\\n    ".join([f"{python} -m verl.trainer.main_ppo", *(shlex.quote(line) for line in overrides)])


def run_verl(config: RLTrainConfig) -> Path:
    """Write ``OUTPUT/verl/`` (``train.parquet`` and ``main_ppo.sh``); unless ``dry_run``, run it, then merge the last
    checkpoint's actor into ``OUTPUT/final`` (a Hugging Face folder, as ``--engine trl`` leaves). Returns the script.
    A rerun resumes: verl continues from its last checkpoint (``trainer.resume_mode=auto``)."""
    folder = config.output.resolve() / "verl"
    overrides = verl_overrides(config, folder / DATA_FILE, config.verl_gpus, config.verl_nodes)  # refusals first
    write_verl_data(config, folder)
    script = folder / "main_ppo.sh"
    atomic_write_bytes(
        script, ("#!/usr/bin/env bash\nset -euo pipefail\n" + main_ppo_command(overrides) + "\n").encode()
    )
    if config.dry_run:
        return script
    if importlib.util.find_spec("verl") is None:
        raise UserInputError("--engine verl: verl is not installed here (pip install verl==0.9.1 on the GPU nodes)")
    # verl's file logger truncates its file when it starts: one file per launch, so a resumed run keeps the earlier
    metrics = folder / f"metrics-{len(list(folder.glob('metrics-*.jsonl')))}.jsonl"
    env = {**os.environ, "VERL_FILE_LOGGER_PATH": str(metrics)}
    subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], check=True, env=env)
    checkpoints = folder / "checkpoints"
    step = (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip()
    merge = ["-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    merge += [
        "--local_dir",
        str(checkpoints / f"global_step_{step}" / "actor"),
        "--target_dir",
        str(config.output / "final"),
    ]
    subprocess.run([sys.executable, *merge], check=True)
    history = log_history(sorted(folder.glob("metrics-*.jsonl"), key=lambda p: int(p.stem.split("-")[1])))
    atomic_write_bytes(config.output / "log_history.json", (json.dumps(history, indent=2) + "\n").encode())
    return script


def log_history(files: list[Path]) -> list[dict]:
    """verl's per-step metrics (its file logger: a JSON line ``{"step", "data"}`` per step) as ``rl-train``'s
    ``log_history.json``: ``reward`` is verl's ``critic/score/mean``, every metric kept as ``verl/<name>``; a step
    logged twice (a resumed run) keeps its last record."""
    steps: dict[int, dict] = {}
    for path in files:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            data = record["data"]
            row = {"step": record["step"], **{f"verl/{k}": v for k, v in data.items()}}
            if "critic/score/mean" in data:
                row[TRL_REWARD.key] = data["critic/score/mean"]  # where the pipeline reads TRL's reward
            steps[record["step"]] = row
    return [steps[k] for k in sorted(steps)]
