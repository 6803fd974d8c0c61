"""The RL runs as pipeline steps, and the chain's policies they make: one ``rl-train`` run's step (``[rl]`` plus a
run's own settings and what the pipeline wires), the reward model's and the classifier's replicas, a run's summary
and report section; where the runs start (the warm-up's policy), the runs that train them (DARLING, GRPO, the other
arms) with the classifier they score with, and the name -> model every evaluation compares. The warm-up
(``pipeline/stages/warmup.py``) and the RL stage (``pipeline/stages/rl.py``) build their runs here, so a run is made
one way whichever stage holds it, and every room that trains, evaluates or compares the policies reads them here,
never from another room.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.classifier.config import ServeConfig
from darling.core.errors import UserInputError
from darling.core.local_models import resolve_model
from darling.core.numbers import MISSING
from darling.core.training_log import REWARD, STEP_COLUMNS, STEP_METRICS, TRL_REWARD
from darling.core.weights import SafetensorsArrays, largest_change
from darling.pipeline.folders import (
    BASE_POLICY,
    CLASSIFIER_FOLDER,
    DARLING_POLICY,
    GRPO_POLICY,
    GRPO_RUN,
    RL_FOLDER,
    WARMUP_FOLDER,
    WORLD_POLICY,
    arm_folder,
    arm_policy,
)
from darling.pipeline.stage import Plan, memoised, read_json
from darling.pipeline.steps import Step, input_path, run_relative, shown, stage_config, table_values
from darling.rl.config import SETTINGS_FILE, RLTrainConfig
from darling.rl.methods import CHECKER, DARLING, GRPO, METHODS, arm_settings
from darling.rl.serve_config import RewardServeConfig

REWARD_SERVERS_FILE = "reward-servers.json"  # serve-reward-model's ready file, in the folder of the stage using it
ACCELERATE_FILE = "accelerate.yaml"  # RUN/inputs/: the accelerate config the runs launch with


# -- the reward model's replicas -----------------------------------------------------------------------------------
@memoised
def reward_serve_step(plan: Plan, folder: str = RL_FOLDER) -> Step:
    """``serve-reward-model`` replicas of ``[rl] reward_model`` for the stage writing to ``folder`` (its log is
    ``serve-reward-model.log`` in rl, ``serve-reward-model-<folder>.log`` in another stage)."""
    c = plan.config
    wired = {"model": c.rl_reward_model(), "ready_file": c.run / folder / REWARD_SERVERS_FILE}
    config = stage_config(c, "serve_reward", RewardServeConfig, wired)
    name = "serve-reward-model" + ("" if folder == RL_FOLDER else f"-{folder}")
    return Step(name, ("serve-reward-model",), config, explicit=shown(c, wired, "serve_reward"))


def reward_urls(plan: Plan) -> list[str]:
    serve = reward_serve_step(plan).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


# -- a run ---------------------------------------------------------------------------------------------------------
def rl_resume(folder: str) -> str:
    """rl-train refuses --resume without a checkpoint (and a fresh run over one): resume what an interrupted run
    left, if anything."""
    return f'$( ls -d "$RUN"/{folder}/checkpoint-* >/dev/null 2>&1 && echo --resume )'


def rl_run(
    plan: Plan,
    folder: str,
    method: str,
    own: dict[str, Any],
    threads: int | None,
    tables: tuple[str, ...] = ("rl",),
    own_keys: tuple[str, ...] = (),
    wired_more: dict[str, Any] | None = None,
) -> Step:
    """``rl-train`` into ``RUN/<folder>``: ``[rl]`` (its preset, then its entries), the run's ``own`` settings, and
    what the pipeline wires; ``tables``: the tables whose keys its line always shows; ``wired_more``: the classifier
    the run scores with (``classifier``, ``classifier_urls``; none for a run before the classifier exists) and a
    checker arm's ``checker``."""
    c = plan.config
    preset = c.rl.get("preset")
    wired: dict[str, Any] = {
        "output": c.run / folder,
        **(wired_more or {}),
        "seed": c.seed,
        "method": method,
        "prune_checkpoints": not c.keep_checkpoints,
        "threads": threads,
    }
    if c.serve_reward_model:
        wired["reward_model_urls"] = reward_urls(plan)
    if c.rl_engine == "verl":
        wired.update(engine="verl", verl_gpus=c.rl_processes, verl_nodes=c.nodes)
    config = stage_config(c, "rl", RLTrainConfig, wired, own=own)
    if c.rl_accelerate == "multi-cpu" and not config.use_cpu:
        raise UserInputError("rl_accelerate = multi-cpu launches CPU processes: set [rl] use_cpu = true, or multi-gpu")
    launcher: list[str] = []
    if c.rl_engine == "verl":  # verl starts its own Ray workers on the GPUs it sees
        launcher = [f"CUDA_VISIBLE_DEVICES={c.rl_gpus}"] if c.rl_gpus is not None else []
    elif c.rl_accelerate:
        env = [f"CUDA_VISIBLE_DEVICES={c.rl_gpus}"] if c.rl_gpus is not None else []
        accelerate = ["accelerate", "launch", "--config_file", str(input_path(c, ACCELERATE_FILE))]
        launcher = [*env, *accelerate, "--num_processes", str(c.rl_processes)]
    explicit = tuple(dict.fromkeys([*shown(c, wired, *tables), *(k.split(".", 1)[0] for k in own_keys)]))
    done = run_relative(c.run / folder / "log_history.json", c.run)  # written once its final policy is saved
    return Step(
        folder, ("rl-train",), config, {}, preset, {"resume": rl_resume(folder)}, launcher, explicit, done_if=done
    )


# -- a run's summary and section --------------------------------------------------------------------------------
def max_weight_change(before_dir: Path, after_dir: Path) -> float | None:
    """max |w_after - w_before| over the tensors both hold (None unless both are one safetensors file); read without
    torch (core/weights.py), which this process loads for nothing else."""
    a, b = Path(before_dir) / "model.safetensors", Path(after_dir) / "model.safetensors"
    if not (a.exists() and b.exists()):
        return None
    return largest_change(SafetensorsArrays(a), SafetensorsArrays(b))


def run_summary(step: Step, reward: str) -> dict[str, Any]:
    """One RL run's settings and per-step metrics (from ``OUTPUT/log_history.json``)."""
    config = step.config
    out = Path(config.output)
    history = read_json(out / "log_history.json")
    steps = [{"step": h["step"], **{k: h[k] for k in STEP_METRICS if k in h}} for h in history if REWARD.key in h]
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
        "steps_with_nonzero_reward": sum(1 for s in steps if s.get(TRL_REWARD.key, 0) != 0),
        "max_weight_change": max_weight_change(local, out / "final") if local.is_dir() else None,
        "checkpoints_left": sorted(p.name for p in out.glob("checkpoint-*")),
    }


def _step_row(step: dict[str, Any]) -> str:
    return f"| {step['step']} | " + " | ".join(m.cell(step) for m in STEP_COLUMNS) + " |"


SHOWN_STEPS = 40  # a longer run's step table shows every k-th step (every step is in its log_history.json)


def shown_steps(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The steps a run's table shows: all up to ``SHOWN_STEPS``, else every k-th and the last; and k."""
    stride = -(-len(steps) // (SHOWN_STEPS // 2)) if len(steps) > SHOWN_STEPS else 1
    kept = [step for i, step in enumerate(steps) if i % stride == 0 or i == len(steps) - 1]
    return kept, stride


def run_section(s: dict[str, Any], folder: str) -> list[str]:
    quality = s.get("quality", "math")
    strict = f" (0 over {s['max_words']} words)" if s.get("strict_length") else ""
    launch = f" Launched as `{s['launcher']} ...`." if s.get("launcher") else ""
    steps, stride = shown_steps(s["steps"])
    lines = [
        f"**`{folder}/`** — reward: {s['reward']}, advantages r − mean"
        f"{'' if s.get('scale_rewards', 'none') == 'none' else ' / std (' + s['scale_rewards'] + ')'}. Policy "
        f"`{s['policy']}`, prompts `{s['problems']}`, quality `{quality}`{strict}, floor {s.get('floor', 0)}, "
        f"{s['num_generations']} completions per prompt, ≤ {s['max_completion_length']} tokens, "
        f"lr {s['learning_rate']}, temperature {s['temperature']}, seed {s.get('seed', 0)}.{launch}",
        "",
        "| step | " + " | ".join(m.column or "" for m in STEP_COLUMNS) + " |",
        "|" + " ---: |" * (len(STEP_COLUMNS) + 1),
        *map(_step_row, steps),
        *([] if stride == 1 else ["", f"Every {stride}th step shown, and the last; every step is in the log below."]),
    ]
    change = s["max_weight_change"]
    lines += [
        "",
        f"- steps with a non-zero reward: {s['steps_with_nonzero_reward']} of {len(s['steps'])}",
        f"- largest weight change vs the policy it started from: {MISSING if change is None else f'{change:.2e}'}",
        f"- checkpoints left: {', '.join(s['checkpoints_left']) or 'none (deleted once final was saved)'}",
    ]
    if s["steps_with_nonzero_reward"] == 0:
        lines.append(
            "- **no learning signal:** every reward was 0, so every advantage was 0 and the policy did not move."
        )
    lines += [
        "",
        f"Per-step log: [`{folder}/log_history.json`]({folder}/log_history.json); settings: "
        f"[`{folder}/{SETTINGS_FILE}`]({folder}/{SETTINGS_FILE}); policy: [`{folder}/final/`]({folder}/final/).",
        "",
    ]
    return lines


SERVERS_FILE = "classifier-servers.json"  # serve-classifier's ready file, in rl/


# -- where the runs start ------------------------------------------------------------------------------------------
def born_policy(plan: Plan) -> dict[str, Any]:
    """With ``[world]``: the policy born in the world (``world/policy/final``), what the warm-up (if any) and every
    run start from; else nothing (``[rl]``'s own policy)."""
    return {"policy": str(plan.run / WORLD_POLICY / "final")} if plan.config.world else {}


def start_policy(plan: Plan) -> str:
    """The policy every RL run starts from: the warm-up's (``rl-warmup/final``), else the world's, else ``[rl]``'s."""
    if plan.config.rl_warmup:
        return str(plan.run / WARMUP_FOLDER / "final")
    return born_policy(plan).get("policy") or rl_settings(plan).policy


@memoised
def rl_settings(plan: Plan) -> RLTrainConfig:
    """``[rl]`` as its runs read it (its preset, then its entries): their prompts, template and sampling."""
    c = plan.config
    # read for its prompts, template and sampling only: as GRPO, which needs no classifier
    return stage_config(c, "rl", RLTrainConfig, {"output": plan.run / RL_FOLDER, "method": GRPO.name})


def start(plan: Plan) -> dict[str, Any]:
    """Where every run starts: the warm-up's policy or the world's when there is one (else [rl]'s own, no setting)."""
    return {"policy": start_policy(plan)} if plan.config.rl_warmup or plan.config.world else {}


# -- the classifier the runs score with ----------------------------------------------------------------------------
@memoised
def serve_step(plan: Plan) -> Step:
    c = plan.config
    wired = {"model": c.run / CLASSIFIER_FOLDER, "ready_file": c.run / RL_FOLDER / SERVERS_FILE}
    config = stage_config(c, "serve", ServeConfig, wired)
    return Step("serve-classifier", ("serve-classifier",), config, explicit=shown(c, wired, "serve"))


def classifier_urls(plan: Plan) -> list[str]:
    serve = serve_step(plan).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


def served(plan: Plan) -> dict[str, Any]:
    """The classifier every run after the classifier stage scores with (GRPO's only to measure distinct per group):
    the export, and its replicas with ``serve_classifier``."""
    c = plan.config
    urls = {"classifier_urls": classifier_urls(plan)} if c.serve_classifier else {}
    return {"classifier": c.run / CLASSIFIER_FOLDER, **urls}


# -- the runs ------------------------------------------------------------------------------------------------------
@memoised
def rl_step(plan: Plan, grpo: bool = False) -> Step:
    """DARLING (``rl/``), or with ``grpo`` its GRPO baseline (``rl-grpo/``): the same settings and seeds, quality
    only, plus what ``[rl_grpo]`` changes; the classifier then only measures distinct per group for the logs. With a
    warm-up, both start from its policy."""
    c = plan.config
    own = {**(table_values(c, "rl_grpo") if grpo else {}), **start(plan)}
    folder, method = (GRPO_RUN, GRPO.name) if grpo else (RL_FOLDER, DARLING.name)
    tables = ("rl", "rl_grpo") if grpo else ("rl",)
    return rl_run(plan, folder, method, own, c.threads, tables, wired_more=served(plan))


@memoised
def arm_step(plan: Plan, method: str) -> Step:
    """Another arm (``rl-<method>/``): ``[rl]`` plus what ``[rl_arms]`` sets that this arm reads (an arm's own
    settings reach that arm only), from the same start as DARLING and GRPO, with the same seeds."""
    c = plan.config
    own = arm_settings(method, table_values(c, "rl_arms"))
    folder = arm_folder(method)
    settings = {**own, **start(plan)}
    checker = {"checker": c.checker} if METHODS[method].partition == CHECKER else {}  # the task's, chain-wide
    wired = {**served(plan), **checker}
    return rl_run(plan, folder, method, settings, c.threads, ("rl",), tuple(own), wired)


def rl_steps(plan: Plan) -> list[Step]:
    """Every RL run the evaluations compare: DARLING, GRPO (with grpo_baseline), then each of ``arms``."""
    c = plan.config
    grpo = [rl_step(plan, grpo=True)] if c.grpo_baseline else []
    return [rl_step(plan), *grpo, *(arm_step(plan, method) for method in c.arms)]


# -- what the evaluations compare ----------------------------------------------------------------------------------
def policies(plan: Plan) -> dict[str, str]:
    """Before RL, after DARLING, after GRPO (with grpo_baseline) and after each other arm: name -> model (hub
    name, alias or path)."""
    c = plan.config
    return {
        BASE_POLICY: rl_step(plan).config.policy,
        **{n: str(c.run / f / "final") for n, f in run_folders(plan).items()},
    }


def run_folders(plan: Plan) -> dict[str, str]:
    """The trained policies' run folders (their training logs), by policy name: DARLING, GRPO, the other arms."""
    c = plan.config
    grpo = {GRPO_POLICY: GRPO_RUN} if c.grpo_baseline else {}
    return {DARLING_POLICY: RL_FOLDER, **grpo, **{arm_policy(m): arm_folder(m) for m in c.arms}}


def training_prompts(plan: Plan) -> dict[str, Any]:
    """The prompts the RL runs trained on, as eval novelty's ``prompts`` and ``limit``."""
    rl = rl_step(plan).config
    return {"prompts": str(rl.problems), "limit": rl.limit}
