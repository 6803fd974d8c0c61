"""The chain as shell: ``RUN/commands.sh``, one block per stage, and the input files its commands name
(``RUN/inputs/``). The runner runs each block, as written, with the script's prelude: what ran is this text.

A block is its stage's ``darling`` commands (``pipeline/stage_commands.py``) with what starts them: ``torchrun`` or
``accelerate launch`` for several processes, ``serve-classifier`` replicas in the background until the RL runs that
use them end (their ready file says when to start), and up to ``jobs`` commands side by side, each logging to
``RUN/logs/<name>.log``. Every command resumes by itself, so rerunning the script continues where it stopped.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from darling import __version__
from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import INPUTS_PREFIX, SECTIONS, PipelineConfig
from darling.pipeline.resources import INPUT_FILES, accelerate_config
from darling.pipeline.stage_commands import (
    EVAL_NAME,
    REWARD_SERVERS_FILE,
    SERVERS_FILE,
    Step,
    classifier_step,
    compare_steps,
    datagen_step,
    eval_creative_step,
    eval_math_steps,
    eval_models,
    eval_novelty_steps,
    import_step,
    input_path,
    labels_step,
    pairs_step,
    reward_serve_step,
    rl_step,
    run_relative,
    serve_step,
    training_pairs_step,
    warmup_step,
)

COMMANDS_FILE = "commands.sh"
LOGS = "logs"
# Shell functions every block may use; the script and the runner define them once, before any block.
PRELUDE = [
    "set -euo pipefail",
    'mkdir -p "$RUN/logs"',
    "set -m  # each background job in a process group of its own, so stopping it stops what it started",
    "trap 'exit 130' INT TERM",
    "trap 'for p in $(jobs -p); do kill -- -\"$p\" 2>/dev/null; done; true' EXIT  # no job outlives the block",
    'fail() { echo "$1 failed; the end of $2:" >&2; tail -n 40 "$2" >&2; exit 1; }',
    "# wait_ready FILE PID NAME LOG: until FILE is written; fail if PID ends first",
    'wait_ready() { until [ -s "$1" ]; do kill -0 "$2" 2>/dev/null || fail "$3" "$4"; sleep 2; done; }',
    "# wait_jobs N: until at most N of the side-by-side commands (their pids in PIDS) still run; a failed one ends the",
    "# block. Each is waited for by its pid, which finds its status even after bash has reported it done: `wait -n`",
    "# found no job when two ended together and failed a block whose commands had all succeeded.",
    "PIDS=()",
    "wait_jobs() {",
    "  while :; do",
    "    local running=\" $(jobs -rp | tr '\\n' ' ') \" left=() p",
    '    for p in ${PIDS[@]+"${PIDS[@]}"}; do',
    '      case $running in *" $p "*) left+=("$p") ;; *) wait "$p" || exit 1 ;; esac',
    "    done",
    '    PIDS=(${left[@]+"${left[@]}"})',
    '    [ "${#PIDS[@]}" -le "$1" ] && return',
    "    sleep 0.2",
    "  done",
    "}",
]


@dataclass
class StageCommands:
    name: str
    resources: str  # one comment line: what it runs on
    lines: list[str] = field(default_factory=list)  # shell lines (commands and comments)
    steps: list[Step] = field(default_factory=list)  # the darling commands among them

    def describe(self) -> str:
        return self.resources


def side_by_side(steps: list[Step], run: Path, jobs: int) -> list[str]:
    """``steps`` in order, up to ``jobs`` at a time, the next starting as soon as any one ends (a slow command never
    holds a free core). Alone, a command writes to the block's output; beside others, each writes to its own log
    (named after its step), its pid goes to ``PIDS``, and a failure shows that log's end and ends the block
    (``wait_jobs`` in the prelude)."""
    if jobs == 1 or len(steps) == 1:
        return [s.guarded(run) for s in steps]
    lines = []
    for k, step in enumerate(steps):
        if k >= jobs:
            lines.append(f"wait_jobs {jobs - 1}  # a slot frees")
        log = f'"$RUN/logs/{step.name}.log"'
        lines.append(f"{step.guarded(run)} > {log} 2>&1 || fail {step.name} {log} & PIDS+=($!)")
    lines.append("wait_jobs 0")
    return lines


# -- the blocks --------------------------------------------------------------------------------------------------
def _engine_where(config, what: str) -> str:
    engine = config.engine
    if engine == "vllm":
        return f"{what}: a vLLM server per model ({config.devices} devices, tensor x data parallel per model)"
    if engine == "hf":
        return f"{what}: transformers in the command's process (--device {config.device}: a GPU when present)"
    return f"{what}: the {engine} engine"


def datagen_block(c: PipelineConfig) -> StageCommands:
    step = datagen_step(c)
    if c.rollouts_from == "champ":
        where = "CPU, seconds: CHAMP's real responses (GPT-3.5, GPT-4, GPT-4 Turbo, PaLM 2)"
    else:
        where = _engine_where(step.config, f"{len(c.datagen.get('generators', []))} generators")
    lines = [step.line(c.run)]
    if c.rollouts_from == "generate":
        listed = run_relative(input_path(c, "generators.json"), c.run)
        lines.insert(0, f"# generators (names, models, each one's own parallelism and memory): {listed}")
    return StageCommands("datagen", where, lines, [step])


def pairs_block(c: PipelineConfig) -> StageCommands:
    step = pairs_step(c)
    return StageCommands("pairs", "CPU (math-verify), seconds to minutes", [step.line(c.run)], [step])


def labels_block(c: PipelineConfig) -> StageCommands:
    step = labels_step(c)
    where = _engine_where(step.config, f"judge {step.config.judge_model}, both orders")
    return StageCommands("labels", where, [step.line(c.run)], [step])


def classifier_block(c: PipelineConfig) -> StageCommands:
    if c.classifier_from == "import":
        step = import_step(c)
        where = f"CPU, minutes: {c.import_classifier['source']} in the {step.config.format} format"
        return StageCommands("classifier", where, [step.line(c.run)], [step])
    data, train = training_pairs_step(c), classifier_step(c)
    cfg = train.config
    processes = f"{train.launcher[-1]} processes (torchrun)" if train.launcher else "one process"
    where = f"{cfg.backbone} ({cfg.kind}, {cfg.precision}, {cfg.strategy}), {processes} on {cfg.accelerator}"
    return StageCommands("classifier", where, [data.line(c.run), train.line(c.run)], [data, train])


def rl_block(c: PipelineConfig) -> StageCommands:
    runs = [rl_step(c)] + ([rl_step(c, grpo=True)] if c.grpo_baseline else [])
    warmup = warmup_step(c)
    cfg = (warmup or runs[0]).config
    engine = (
        f"verl main_ppo on {c.rl_processes} GPU(s) per run"
        if c.rl_engine == "verl"
        else f"TRL GRPOTrainer, {c.rl_processes} process(es) per run"
        + (f" ({c.rl_accelerate})" if c.rl_accelerate else "")
    )
    where = (
        f"{cfg.policy}, {engine}"
        + (", the classifier on serve-classifier replicas" if c.serve_classifier else ", the classifier in process")
        + (", the reward model on serve-reward-model replicas" if c.serve_reward_model else "")
        + (f"; a {c.rl_warmup.get('max_steps', '')}-step GRPO warm-up, then" if c.rl_warmup else ";")
        + (" DARLING and GRPO with the same settings" if c.grpo_baseline else " DARLING")
    )
    lines: list[str] = []
    steps = list(runs)
    servers: list[tuple[Step, str]] = []
    if c.serve_classifier:
        servers.append((serve_step(c), SERVERS_FILE))
    if c.serve_reward_model:
        servers.append((reward_serve_step(c), REWARD_SERVERS_FILE))
    for server, ready in servers:
        lines += start_in_background(c, server, "rl", ready)
    steps[:0] = [server for server, _ in servers]
    if warmup is not None:  # alone, before the two runs that start from its policy
        lines += [f"# the GRPO warm-up both runs start from ({warmup.config.max_steps} steps)", warmup.guarded(c.run)]
        steps.insert(len(servers), warmup)
    for group in [runs] if not trl_server(c) else [[r] for r in runs]:
        lines += trl_server_lines(c, group[0]) if trl_server(c) else []
        lines += side_by_side(group, c.run, c.jobs)
        lines += [stop_pid("TRL_VLLM", "TRL's vLLM server: it serves this run's weights only")] if trl_server(c) else []
    for server, _ in servers:
        lines.append(stop_background(server))
    return StageCommands("rl", where, lines, steps)


def _pid_var(server: Step) -> str:
    return server.name.upper().replace("-", "_")  # serve-reward-model-eval-novelty -> SERVE_REWARD_MODEL_EVAL_NOVELTY


def start_in_background(c: PipelineConfig, server: Step, folder: str, ready: str) -> list[str]:
    """A serving command (its replicas) in the background, and a wait until its ready file says they answer."""
    path = run_relative(c.run / folder / ready, c.run)
    log = f'"$RUN/logs/{server.name}.log"'
    return [
        f'mkdir -p "$RUN/{folder}" && rm -f "{path}"',
        f"{server.line(c.run)} > {log} 2>&1 &",
        f"{_pid_var(server)}=$!",
        f'wait_ready "{path}" "${_pid_var(server)}" {server.name} {log}',
    ]


def stop_background(server: Step) -> str:
    return stop_pid(_pid_var(server), "stop its replicas: their devices are free")


def stop_pid(var: str, why: str) -> str:
    """Stop the background job whose pid is in ``$var`` and reap it; one that already ended is no failure (under
    ``set -e`` a bare ``kill`` of a gone pid would fail a block whose work is done)."""
    return f'{{ kill "${var}" 2>/dev/null || true; }}; wait "${var}" || true  # {why}'


def trl_server(c: PipelineConfig) -> bool:
    """The RL runs generate with TRL's own vLLM server (``use_vllm`` and ``vllm_mode = server``)."""
    config = rl_step(c).config
    return c.rl_engine == "trl" and bool(config.use_vllm) and config.vllm_mode == "server"


def trl_server_lines(c: PipelineConfig, run: Step) -> list[str]:
    """TRL's own vLLM server for one RL run (``vllm_mode = server``), on ``trl_vllm_gpus``; its client waits for
    it. A server per run: it holds the weights of the run it serves."""
    cfg = run.config
    env = f"CUDA_VISIBLE_DEVICES={c.trl_vllm_gpus} " if c.trl_vllm_gpus else ""
    tp = str((cfg.grpo or {}).get("vllm_tensor_parallel_size", 1))
    words = ["trl", "vllm-serve", "--model", cfg.policy, "--host", cfg.vllm_server_host]
    words += ["--port", str(cfg.vllm_server_port), "--tensor-parallel-size", tp]
    return [f'{env}{shlex.join(words)} > "$RUN/logs/trl-vllm-{run.name}.log" 2>&1 &', "TRL_VLLM=$!"]


def eval_math_block(c: PipelineConfig) -> StageCommands:
    models = ", ".join(f"{name} = {run_relative(model, c.run)}" for name, model in eval_models(c).items())
    steps = eval_math_steps(c)
    lines = [
        f"# {models}; each named '{EVAL_NAME}' so all draw the same seeds (paired), prompted as RL trained it",
        *side_by_side(steps, c.run, c.jobs),
    ]
    return StageCommands("eval-math", _engine_where(steps[0].config, "pass@k"), lines, steps)


def eval_novelty_block(c: PipelineConfig) -> StageCommands:
    steps = eval_novelty_steps(c)
    where = _engine_where(steps[0].config, "generation; the fresh classifier in process")
    lines = side_by_side(steps, c.run, c.jobs)
    if c.serve_reward_model:  # utility from the reward model's replicas, started again for this stage
        server = reward_serve_step(c, "eval-novelty")
        lines = [*start_in_background(c, server, "eval-novelty", REWARD_SERVERS_FILE), *lines, stop_background(server)]
        steps = [server, *steps]
    return StageCommands("eval-novelty", where, lines, steps)


def eval_creative_block(c: PipelineConfig) -> StageCommands:
    step = eval_creative_step(c)
    where = _engine_where(step.config, "every policy writes; the judge scores at temperature 0")
    return StageCommands("eval-creative", where, [step.line(c.run)], [step])


def compare_block(c: PipelineConfig) -> StageCommands:
    steps = compare_steps(c)
    where = "CPU, seconds: from the saved generations and training logs"
    return StageCommands("compare", where, [step.line(c.run) for step in steps], steps)


def render_script(config: PipelineConfig, stages: list[StageCommands]) -> str:
    head = [
        "#!/usr/bin/env bash",
        f"# darling {__version__} pipeline, preset {config.preset}: {len(stages)} stages, one block each.",
        *(f"# {line}" for line in config.about.splitlines()),
        "# `darling pipeline` runs each block below as it stands; manifest.json holds the config, versions and hashes.",
        "# Every command resumes by itself: rerun this script (or the same `darling pipeline`) after an interruption.",
    ]
    lines = [*head, f"RUN=${{RUN:-{shlex.quote(str(config.run))}}}", *PRELUDE, ""]
    for i, stage in enumerate(stages, 1):
        lines += [f"# == {i}/{len(stages)} {stage.name} — {stage.describe()}", *stage.lines, ""]
    return "\n".join(lines)


def write_commands(config: PipelineConfig, stages: list[StageCommands]) -> Path:
    path = config.run / COMMANDS_FILE
    data = render_script(config, stages).encode()
    if not path.exists() or path.read_bytes() != data:  # a rerun leaves it (and its mtime) alone
        atomic_write_bytes(path, data)
        path.chmod(0o755)
    return path


# -- inputs ------------------------------------------------------------------------------------------------------
def eval_generator(config: PipelineConfig, model: str) -> dict:
    """One eval-math generator, prompted as the policy was trained (the rl template, no system prompt)."""
    template = rl_step(config).config.user_template
    return {"name": EVAL_NAME, "model": model, "system_prompt": None, "user_template": template}


def input_files(config: PipelineConfig) -> dict[Path, str]:
    """Every file the commands read from RUN/inputs, with its contents."""
    files: dict[Path, str] = {}
    for name in SECTIONS:
        for value in getattr(config, name).values():
            if isinstance(value, str) and value.startswith(INPUTS_PREFIX):
                files[input_path(config, value.removeprefix(INPUTS_PREFIX))] = INPUT_FILES[
                    value.removeprefix(INPUTS_PREFIX)
                ]
    if config.rollouts_from == "generate" and config.datagen.get("generators"):
        files[input_path(config, "generators.json")] = _json({"generators": config.datagen["generators"]})
    for name, model in eval_models(config).items() if config.evaluate_math else ():
        files[input_path(config, f"eval-math-{name}.json")] = _json({"generators": [eval_generator(config, model)]})
    if config.rl_accelerate and config.rl_engine == "trl":
        files[input_path(config, "accelerate.yaml")] = accelerate_config(config.rl_accelerate, config.rl_processes)
    return files


def _json(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def write_inputs(config: PipelineConfig) -> list[Path]:
    """Write (atomically, identically on every run) the input files the commands name."""
    files = input_files(config)
    for path, text in files.items():
        data = text.encode()
        if not path.exists() or path.read_bytes() != data:
            atomic_write_bytes(path, data)
    return list(files)
