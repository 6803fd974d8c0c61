"""RL: DARLING (``rl/``) and, with ``grpo_baseline``, its GRPO baseline (``rl-grpo/``) and any other
``arms`` (``rl-<method>/``), trained with the same settings and seeds from the same start (the warm-up's policy,
``pipeline/stages/warmup.py``, when there is one); with the classifier (and a reward model) served by replicas the
block starts and stops around the runs. The policies it leaves (``policies``) are what every evaluation compares."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.pipeline.config import PipelineConfig, resolved
from darling.pipeline.folders import GRPO_RUN, RL_FOLDER, WARMUP_FOLDER, arm_folder
from darling.pipeline.resources import accelerate_config
from darling.pipeline.rl_steps import (
    ACCELERATE_FILE,
    REWARD_SERVERS_FILE,
    SERVERS_FILE,
    arm_step,
    reward_serve_step,
    rl_step,
    rl_steps,
    run_section,
    run_summary,
    serve_step,
)
from darling.pipeline.schema import TABLES
from darling.pipeline.script import Block, side_by_side, start_in_background, stop_background, stop_pid
from darling.pipeline.stage import Plan, Stage
from darling.pipeline.steps import Step, input_path
from darling.rl.methods import CHECKER, METHODS

ENGINE_NAMES = {"trl": "TRL GRPOTrainer", "verl": "verl main_ppo"}  # rl_engine -> what trains, in the report


# -- the block -----------------------------------------------------------------------------------------------------
def trl_server(plan: Plan) -> bool:
    """The RL runs generate with TRL's own vLLM server (``use_vllm`` and ``vllm_mode = server``)."""
    config = rl_step(plan).config
    return plan.config.rl_engine == "trl" and bool(config.use_vllm) and config.vllm_mode == "server"


def trl_server_lines(c: PipelineConfig, run: Step) -> list[str]:
    """TRL's own vLLM server for one RL run (``vllm_mode = server``), on ``trl_vllm_gpus``; its client waits for
    it. A server per run: it holds the weights of the run it serves."""
    cfg = run.config
    env = f"CUDA_VISIBLE_DEVICES={c.trl_vllm_gpus} " if c.trl_vllm_gpus else ""
    tp = str((cfg.trl or {}).get("vllm_tensor_parallel_size", 1))
    words = ["trl", "vllm-serve", "--model", cfg.policy, "--host", cfg.vllm_server_host]
    words += ["--port", str(cfg.vllm_server_port), "--tensor-parallel-size", tp]
    return [f'{env}{shlex.join(words)} > "$RUN/logs/trl-vllm-{run.name}.log" 2>&1 &', "TRL_VLLM=$!"]


def _where(plan: Plan, runs: list[Step]) -> str:
    c = plan.config
    engine = (
        f"{ENGINE_NAMES['verl']} on {c.rl_processes} GPU(s) per run"
        if c.rl_engine == "verl"
        else f"{ENGINE_NAMES['trl']}, {c.rl_processes} process(es) per run"
        + (f" ({c.rl_accelerate})" if c.rl_accelerate else "")
    )
    start = f"the warm-up's policy ({WARMUP_FOLDER}/final)" if c.rl_warmup else runs[0].config.policy
    return (
        f"{start}, {engine}"
        + (", the classifier on serve-classifier replicas" if c.serve_classifier else ", the classifier in process")
        + (", the reward model on serve-reward-model replicas" if c.serve_reward_model else "")
        + (": DARLING and GRPO with the same settings" if c.grpo_baseline else ": DARLING")
        + (f", and {', '.join(c.arms)}" if c.arms else "")
    )


def rl_block(plan: Plan) -> Block:
    c = plan.config
    runs = rl_steps(plan)
    lines: list[str] = []
    servers: list[tuple[Step, str]] = []
    if c.serve_classifier:
        servers.append((serve_step(plan), SERVERS_FILE))
    if c.serve_reward_model:
        servers.append((reward_serve_step(plan), REWARD_SERVERS_FILE))
    for server, ready in servers:
        lines += start_in_background(c, server, RL.name, ready)
    own_server = trl_server(plan)
    for group in [runs] if not own_server else [[r] for r in runs]:
        lines += trl_server_lines(c, group[0]) if own_server else []
        lines += side_by_side(group, c.run, c.jobs)
        lines += [stop_pid("TRL_VLLM", "TRL's vLLM server: it serves this run's weights only")] if own_server else []
    for server, _ in servers:
        lines.append(stop_background(server))
    return Block(RL.name, _where(plan, runs), lines, [*(server for server, _ in servers), *runs])


def rl_inputs(plan: Plan) -> dict[Path, str]:
    c = plan.config
    if c.rl_accelerate and c.rl_engine == "trl":
        return {input_path(c, ACCELERATE_FILE): accelerate_config(c.rl_accelerate, c.rl_processes)}
    return {}


def rl_summary(plan: Plan) -> dict[str, Any]:
    c = plan.config
    runs: dict[str, Any] = {}
    darling = rl_step(plan)
    runs["darling"] = run_summary(darling, f"quality x diversity ({darling.config.reward().combine})")
    if c.grpo_baseline:
        runs["grpo"] = run_summary(rl_step(plan, grpo=True), "quality only (GRPO baseline)")
    for method in c.arms:
        runs[method] = run_summary(arm_step(plan, method), f"{method}: {METHODS[method].about}")
    side_by_side = c.jobs > 1 and len(runs) > 1
    summary = {"runs": runs, "side_by_side": side_by_side, "served_classifier": c.serve_classifier}
    return {**summary, "engine": c.rl_engine}


def rl_section(s: dict[str, Any]) -> list[str]:
    """Both RL runs. Distinct per group is measured by the classifier in both; only DARLING's reward uses it."""
    how = "side by side (one process each)" if s.get("side_by_side") else "one after the other"
    served = "served by `serve-classifier` replicas" if s.get("served_classifier") else "in each training process"
    trainer = ENGINE_NAMES[s.get("engine", "trl")]  # a summary written before 0.2 has no engine: TRL was the only one
    lines = [f"{trainer}; the runs trained {how}, the classifier {served}.", ""]
    folders = {"warmup": WARMUP_FOLDER, "darling": RL_FOLDER, "grpo": GRPO_RUN}  # (a run before 0.2: its warm-up here)
    for key, run in s["runs"].items():  # in training order: DARLING, GRPO, the other arms
        lines += run_section(run, folders.get(key) or arm_folder(key))
    return lines


def rl_check(plan: Plan) -> None:
    """What the RL runs need of the chain's other tables: verl on one node, the reward model the replicas serve, a
    checker for a checker arm, and TRL's vLLM server off the classifier replicas' ports."""
    c = plan.config
    if c.rl_engine == "verl" and c.nodes > 1:
        raise UserInputError(
            "rl_engine verl on several nodes needs one Ray cluster across them (verl's own multi-node set-up), "
            "which the pipeline does not start: run RL on one node, or `rl-train --engine verl --verl-nodes N` "
            "on a Ray cluster yourself"
        )
    if c.serve_reward_model and not c.rl_reward_model():
        raise UserInputError("serve_reward_model needs [rl] reward_model (the model the replicas serve)")
    needing = [arm for arm in c.arms if METHODS[arm].partition == CHECKER]
    if needing and c.checker is None:
        raise UserInputError(f"arms: {needing[0]} partitions by the task's checker: set checker (e.g. items)")
    rl, serve = TABLES["rl"].config, TABLES["serve"].config
    if resolved(c.rl, rl, "vllm_mode") == "server" and c.serve_classifier:
        port = int(resolved(c.rl, rl, "vllm_server_port"))
        first, replicas = (int(resolved(c.serve, serve, key)) for key in ("port", "replicas"))
        if first <= port < first + replicas:
            raise UserInputError(
                f"[rl] vllm_server_port {port} is a classifier replica's port ([serve] port {first}, "
                f"{replicas} replicas): give TRL's vLLM server another"
            )


def rl_design_notes(plan: Plan) -> list[str]:
    """Which runs train side by side, and from where."""
    config = plan.config
    notes = []
    if config.grpo_baseline:
        notes.append(
            f"{RL_FOLDER}/ (DARLING) and {GRPO_RUN}/ (GRPO: quality only) train with the same settings and seeds"
        )
    for method in config.arms:
        notes.append(
            f"{arm_folder(method)}/ ({method}: {METHODS[method].about}) trains from the same start with the same "
            "settings and seeds, and is compared with GRPO and with DARLING"
        )
    return notes


RL = Stage(
    RL_FOLDER,
    "RL: DARLING, and the GRPO baseline beside it",
    rl_block,
    rl_summary,
    rl_section,
    placement="nodes",
    inputs=rl_inputs,
    check=rl_check,
    tables=("rl", "rl_grpo", "rl_arms", "serve", "serve_reward"),
    design_notes=rl_design_notes,
)
