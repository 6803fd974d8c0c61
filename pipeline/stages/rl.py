"""Stage 5, RL: DARLING (``rl/``) and, with ``grpo_baseline``, its GRPO baseline (``rl-grpo/``) and any other
``arms`` (``rl-<method>/``), trained with the same settings and seeds, optionally from a GRPO warm-up
(``rl-warmup/``); with the classifier (and a reward model) served by replicas the block starts and stops around the
runs. The policies it leaves (``policies``) are what every evaluation compares."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from darling.classifier.config import ServeConfig
from darling.core.errors import UserInputError
from darling.core.local_models import resolve_model
from darling.core.numbers import MISSING
from darling.core.training_log import REWARD, STEP_COLUMNS, STEP_METRICS, TRL_REWARD
from darling.pipeline.config import PipelineConfig
from darling.pipeline.resources import accelerate_config
from darling.pipeline.script import Block, side_by_side, start_in_background, stop_background, stop_pid
from darling.pipeline.stage import Plan, Stage, read_json
from darling.pipeline.stages.classifier import CLASSIFIER
from darling.pipeline.steps import Step, block_threads, input_path, run_relative, shown, table_values
from darling.pipeline.tables import Section
from darling.rl.config import SETTINGS_FILE, RLTrainConfig
from darling.rl.methods import DARLING, GRPO, METHODS, arm_settings
from darling.rl.serve_config import RewardServeConfig

ENGINE_NAMES = {"trl": "TRL GRPOTrainer", "verl": "verl main_ppo"}  # rl_engine -> what trains, in the report
GRPO_RUN = "rl-grpo"  # RUN/rl-grpo/: the GRPO baseline
WARMUP = "rl-warmup"  # RUN/rl-warmup/: the GRPO warm-up both runs start from
SERVERS_FILE = "classifier-servers.json"  # serve-classifier's ready file, in rl/
REWARD_SERVERS_FILE = "reward-servers.json"  # serve-reward-model's ready file, in rl/ and eval-novelty/
ACCELERATE_FILE = "accelerate.yaml"  # RUN/inputs/: the accelerate config the runs launch with
# The policies the evaluations compare, each in eval-math/<name>/ and eval-novelty/<name>/.
BASE_POLICY, DARLING_POLICY, GRPO_POLICY = "base", "darling-rl", "grpo-rl"


def arm_folder(method: str) -> str:
    """RUN/rl-<method>/: another arm's run (``arms``)."""
    return f"rl-{method}"


def arm_policy(method: str) -> str:
    """Another arm's policy name in the evaluations (``<method>-rl``, as DARLING's is ``darling-rl``)."""
    return f"{method}-rl"


# -- the replicas the runs score with ------------------------------------------------------------------------------
def serve_step(plan: Plan) -> Step:
    return plan.once(("serve-classifier",), lambda: _serve_step(plan))


def _serve_step(plan: Plan) -> Step:
    c = plan.config
    wired = {"model": CLASSIFIER.folder(c.run), "ready_file": RL.folder(c.run) / SERVERS_FILE}
    config = ServeConfig.build(overrides={**table_values(c, "serve"), **wired})
    return Step("serve-classifier", ("serve-classifier",), config, explicit=shown(c, wired, "serve"))


def classifier_urls(plan: Plan) -> list[str]:
    serve = serve_step(plan).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


def reward_serve_step(plan: Plan, folder: str | None = None) -> Step:
    """``serve-reward-model`` replicas of ``[rl] reward_model`` for the stage writing to ``folder`` (default rl's;
    its log is ``serve-reward-model.log`` in rl, ``serve-reward-model-<folder>.log`` in another stage)."""
    folder = folder or RL.name
    return plan.once(("serve-reward-model", folder), lambda: _reward_serve_step(plan, folder))


def _reward_serve_step(plan: Plan, folder: str) -> Step:
    c = plan.config
    wired = {"model": c.rl_reward_model(), "ready_file": c.run / folder / REWARD_SERVERS_FILE}
    config = RewardServeConfig.build(overrides={**table_values(c, "serve_reward"), **wired})
    name = "serve-reward-model" + ("" if folder == RL.name else f"-{folder}")
    return Step(name, ("serve-reward-model",), config, explicit=shown(c, wired, "serve_reward"))


def reward_urls(plan: Plan) -> list[str]:
    serve = reward_serve_step(plan).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


# -- the runs ------------------------------------------------------------------------------------------------------
def rl_resume(folder: str) -> str:
    """rl-train refuses --resume without a checkpoint (and a fresh run over one): resume what an interrupted run
    left, if anything."""
    return f'$( ls -d "$RUN"/{folder}/checkpoint-* >/dev/null 2>&1 && echo --resume )'


def warmup_step(plan: Plan) -> Step | None:
    """The GRPO warm-up (``rl-warmup/``): ``[rl]`` plus ``[rl_warmup]``, quality only, alone on the stage's cores;
    None without an ``[rl_warmup]`` table. Both RL runs then start from its policy, so that DARLING's term meets
    groups with repeated answers from its first step (a base policy's long answers rarely repeat)."""
    c = plan.config
    if not c.rl_warmup:
        return None
    threads = block_threads(c)  # alone in the block: the cores the runs would share
    own = table_values(c, "rl_warmup")
    return plan.once((WARMUP,), lambda: _rl_run(plan, WARMUP, method=GRPO.name, own=own, threads=threads))


def rl_step(plan: Plan, grpo: bool = False) -> Step:
    """DARLING (``rl/``), or with ``grpo`` its GRPO baseline (``rl-grpo/``): the same settings and seeds, quality
    only, plus what ``[rl_grpo]`` changes; the classifier then only measures distinct per group for the logs. With a
    warm-up, both start from its policy."""
    c = plan.config
    own = table_values(c, "rl_grpo") if grpo else {}
    start = {"policy": str(c.run / WARMUP / "final")} if c.rl_warmup else {}
    folder, method = (GRPO_RUN, GRPO.name) if grpo else (RL.name, DARLING.name)
    return plan.once((folder,), lambda: _rl_run(plan, folder, method, {**own, **start}, c.threads))


def arm_step(plan: Plan, method: str) -> Step:
    """Another arm (``rl-<method>/``): ``[rl]`` plus what ``[rl_arms]`` sets that this arm reads (an arm's own
    settings reach that arm only), from the same start as DARLING and GRPO, with the same seeds."""
    c = plan.config
    own = arm_settings(method, table_values(c, "rl_arms"))
    start = {"policy": str(c.run / WARMUP / "final")} if c.rl_warmup else {}
    folder = arm_folder(method)
    return plan.once((folder,), lambda: _rl_run(plan, folder, method, {**own, **start}, c.threads, tuple(own)))


def rl_steps(plan: Plan) -> list[Step]:
    """Every RL run the evaluations compare: DARLING, GRPO (with grpo_baseline), then each of ``arms``."""
    c = plan.config
    grpo = [rl_step(plan, grpo=True)] if c.grpo_baseline else []
    return [rl_step(plan), *grpo, *(arm_step(plan, method) for method in c.arms)]


# The rl-train options the pipeline sets for every run (refused in the rl tables); _rl_run sets only these.
RL_WIRED = ("output", "classifier", "seed", "threads", "method", "prune_checkpoints") + (
    ("classifier_urls", "reward_model_urls", "engine", "verl_gpus", "verl_nodes")  # where the run is served / runs
)


def _rl_run(
    plan: Plan, folder: str, method: str, own: dict[str, Any], threads: int | None, own_keys: tuple[str, ...] = ()
) -> Step:
    c = plan.config
    preset = c.rl.get("preset")
    wired: dict[str, Any] = {
        "output": c.run / folder,
        "classifier": CLASSIFIER.folder(c.run),
        "seed": c.seed,
        "method": method,
        "prune_checkpoints": not c.keep_checkpoints,
        "threads": threads,
    }
    if c.serve_classifier:
        wired["classifier_urls"] = classifier_urls(plan)
    if c.serve_reward_model:
        wired["reward_model_urls"] = reward_urls(plan)
    if c.rl_engine == "verl":
        wired.update(engine="verl", verl_gpus=c.rl_processes, verl_nodes=c.nodes)
    assert set(wired) <= set(RL_WIRED), f"wired but not declared in RL_WIRED: {set(wired) - set(RL_WIRED)}"
    config = RLTrainConfig.build(preset, overrides={**table_values(c, "rl"), **own, **wired})
    if c.rl_accelerate == "multi-cpu" and not config.use_cpu:
        raise UserInputError("rl_accelerate = multi-cpu launches CPU processes: set [rl] use_cpu = true, or multi-gpu")
    launcher: list[str] = []
    if c.rl_engine == "verl":  # verl starts its own Ray workers on the GPUs it sees
        launcher = [f"CUDA_VISIBLE_DEVICES={c.rl_gpus}"] if c.rl_gpus is not None else []
    elif c.rl_accelerate:
        env = [f"CUDA_VISIBLE_DEVICES={c.rl_gpus}"] if c.rl_gpus is not None else []
        accelerate = ["accelerate", "launch", "--config_file", str(input_path(c, ACCELERATE_FILE))]
        launcher = [*env, *accelerate, "--num_processes", str(c.rl_processes)]
    tables = ["rl", *(["rl_grpo"] if folder == GRPO_RUN else []), *(["rl_warmup"] if folder == WARMUP else [])]
    explicit = tuple(dict.fromkeys([*shown(c, wired, *tables), *(k.split(".", 1)[0] for k in own_keys)]))
    done = run_relative(c.run / folder / "log_history.json", c.run)  # written once its final policy is saved
    return Step(
        folder, ("rl-train",), config, {}, preset, {"resume": rl_resume(folder)}, launcher, explicit, done_if=done
    )


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
    return {DARLING_POLICY: RL.name, **grpo, **{arm_policy(m): arm_folder(m) for m in c.arms}}


def training_prompts(plan: Plan) -> dict[str, Any]:
    """The prompts the RL runs trained on, as eval novelty's ``prompts`` and ``limit``."""
    rl = rl_step(plan).config
    return {"prompts": str(rl.problems), "limit": rl.limit}


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


def _where(plan: Plan, runs: list[Step], warmup: Step | None) -> str:
    c = plan.config
    cfg = (warmup or runs[0]).config
    engine = (
        f"{ENGINE_NAMES['verl']} on {c.rl_processes} GPU(s) per run"
        if c.rl_engine == "verl"
        else f"{ENGINE_NAMES['trl']}, {c.rl_processes} process(es) per run"
        + (f" ({c.rl_accelerate})" if c.rl_accelerate else "")
    )
    return (
        f"{cfg.policy}, {engine}"
        + (", the classifier on serve-classifier replicas" if c.serve_classifier else ", the classifier in process")
        + (", the reward model on serve-reward-model replicas" if c.serve_reward_model else "")
        + (f"; a {c.rl_warmup.get('max_steps', '')}-step GRPO warm-up, then" if c.rl_warmup else ";")
        + (" DARLING and GRPO with the same settings" if c.grpo_baseline else " DARLING")
        + (f", and {', '.join(c.arms)}" if c.arms else "")
    )


def rl_block(plan: Plan) -> Block:
    c = plan.config
    runs = rl_steps(plan)
    warmup = warmup_step(plan)
    lines: list[str] = []
    steps = list(runs)
    servers: list[tuple[Step, str]] = []
    if c.serve_classifier:
        servers.append((serve_step(plan), SERVERS_FILE))
    if c.serve_reward_model:
        servers.append((reward_serve_step(plan), REWARD_SERVERS_FILE))
    for server, ready in servers:
        lines += start_in_background(c, server, RL.name, ready)
    steps[:0] = [server for server, _ in servers]
    if warmup is not None:  # alone, before the two runs that start from its policy
        lines += [f"# the GRPO warm-up both runs start from ({warmup.config.max_steps} steps)", warmup.guarded(c.run)]
        steps.insert(len(servers), warmup)
    own_server = trl_server(plan)
    for group in [runs] if not own_server else [[r] for r in runs]:
        lines += trl_server_lines(c, group[0]) if own_server else []
        lines += side_by_side(group, c.run, c.jobs)
        lines += [stop_pid("TRL_VLLM", "TRL's vLLM server: it serves this run's weights only")] if own_server else []
    for server, _ in servers:
        lines.append(stop_background(server))
    return Block(RL.name, _where(plan, runs, warmup), lines, steps)


def rl_inputs(plan: Plan) -> dict[Path, str]:
    c = plan.config
    if c.rl_accelerate and c.rl_engine == "trl":
        return {input_path(c, ACCELERATE_FILE): accelerate_config(c.rl_accelerate, c.rl_processes)}
    return {}


# -- summary -------------------------------------------------------------------------------------------------------
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


def rl_summary(plan: Plan) -> dict[str, Any]:
    c = plan.config
    warmup = warmup_step(plan)
    runs: dict[str, Any] = {}
    if warmup is not None:
        runs["warmup"] = run_summary(warmup, "quality only (the GRPO warm-up both runs start from)")
    darling = rl_step(plan)
    runs["darling"] = run_summary(darling, f"quality x diversity ({darling.config.reward().combine})")
    if c.grpo_baseline:
        runs["grpo"] = run_summary(rl_step(plan, grpo=True), "quality only (GRPO baseline)")
    for method in c.arms:
        runs[method] = run_summary(arm_step(plan, method), f"{method}: {METHODS[method].about}")
    side_by_side = c.jobs > 1 and len(runs) - ("warmup" in runs) > 1
    summary = {"runs": runs, "side_by_side": side_by_side, "served_classifier": c.serve_classifier}
    return {**summary, "engine": c.rl_engine}


# -- section -------------------------------------------------------------------------------------------------------
def _step_row(step: dict[str, Any]) -> str:
    return f"| {step['step']} | " + " | ".join(m.cell(step) for m in STEP_COLUMNS) + " |"


def run_section(s: dict[str, Any], folder: str) -> list[str]:
    quality = s.get("quality", "math")
    strict = f" (0 over {s['max_words']} words)" if s.get("strict_length") else ""
    launch = f" Launched as `{s['launcher']} ...`." if s.get("launcher") else ""
    lines = [
        f"**`{folder}/`** — reward: {s['reward']}, advantages r − mean"
        f"{'' if s.get('scale_rewards', 'none') == 'none' else ' / std (' + s['scale_rewards'] + ')'}. Policy "
        f"`{s['policy']}`, prompts `{s['problems']}`, quality `{quality}`{strict}, floor {s.get('floor', 0)}, "
        f"{s['num_generations']} completions per prompt, ≤ {s['max_completion_length']} tokens, "
        f"lr {s['learning_rate']}, temperature {s['temperature']}, seed {s.get('seed', 0)}.{launch}",
        "",
        "| step | " + " | ".join(m.column or "" for m in STEP_COLUMNS) + " |",
        "|" + " ---: |" * (len(STEP_COLUMNS) + 1),
        *map(_step_row, s["steps"]),
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


def rl_section(s: dict[str, Any]) -> list[str]:
    """Both RL runs. Distinct per group is measured by the classifier in both; only DARLING's reward uses it."""
    how = "side by side (one process each)" if s.get("side_by_side") else "one after the other"
    served = "served by `serve-classifier` replicas" if s.get("served_classifier") else "in each training process"
    trainer = ENGINE_NAMES[s.get("engine", "trl")]  # a summary written before 0.2 has no engine: TRL was the only one
    lines = [f"{trainer}; the runs trained {how}, the classifier {served}.", ""]
    folders = {"warmup": WARMUP, "darling": RL.name, "grpo": GRPO_RUN}
    for key, run in s["runs"].items():  # in training order: the warm-up, DARLING, GRPO, the other arms
        lines += run_section(run, folders.get(key) or arm_folder(key))
    return lines


RL = Stage(
    "rl",
    "RL: DARLING, and the GRPO baseline beside it",
    rl_block,
    rl_summary,
    rl_section,
    placement="nodes",
    inputs=rl_inputs,
    tables={
        "serve": Section(ServeConfig, ("model", "ready_file", "exit_after_check"), command="serve-classifier"),
        "serve_reward": Section(
            RewardServeConfig, ("model", "ready_file", "exit_after_check"), command="serve-reward-model"
        ),
        "rl": Section(RLTrainConfig, RL_WIRED, ("preset",), "rl-train, both runs"),
        "rl_grpo": Section(RLTrainConfig, RL_WIRED, command="rl-train: what the GRPO baseline sets differently"),
        "rl_arms": Section(RLTrainConfig, RL_WIRED, command="rl-train: what the other arms add (each reads its own)"),
        "rl_warmup": Section(
            RLTrainConfig, (*RL_WIRED, "policy"), command="rl-train: a GRPO warm-up both runs start from"
        ),
    },
)
