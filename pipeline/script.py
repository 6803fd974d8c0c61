"""The chain as shell: ``RUN/commands.sh``, one block per stage, and the input files its commands name
(``RUN/inputs/``). The runner runs each block, as written, with the script's prelude: what ran is this text.

A block is its stage's ``darling`` commands (``pipeline/steps.py``, built in the stage's room under
``pipeline/stages/``) with what starts them: ``torchrun`` or ``accelerate launch`` for several processes,
``serve-classifier`` replicas in the background until the RL runs that use them end (their ready file says when to
start), and up to ``jobs`` commands side by side, each logging to ``RUN/logs/<name>.log``. Every command resumes by
itself, so rerunning the script continues where it stopped.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from darling import __version__
from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import PipelineConfig
from darling.pipeline.steps import Step, run_relative

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
class Block:
    """A stage's block of commands.sh: its shell lines and the darling commands among them."""

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


# -- what blocks share ------------------------------------------------------------------------------------------
def engine_where(config, what: str) -> str:
    engine = config.engine
    if engine == "vllm":
        return f"{what}: a vLLM server per model ({config.devices} devices, tensor x data parallel per model)"
    if engine == "hf":
        return f"{what}: transformers in the command's process (--device {config.device}: a GPU when present)"
    return f"{what}: the {engine} engine"


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


def render_script(config: PipelineConfig, stages: list[Block]) -> str:
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


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` only when it differs: a rerun leaves the file (and its mtime) alone."""
    data = text.encode()
    if path.exists() and path.read_bytes() == data:
        return False
    atomic_write_bytes(path, data)
    return True


def write_script(path: Path, text: str) -> Path:
    """An executable script, written only when its text changed."""
    if write_if_changed(path, text):
        path.chmod(0o755)
    return path


def write_commands(config: PipelineConfig, stages: list[Block]) -> Path:
    return write_script(config.run / COMMANDS_FILE, render_script(config, stages))


def write_study_script(config: PipelineConfig, name: str, steps: list) -> Path:
    """``RUN/<name>``: the study's ``eval study`` lines (``pipeline --seeds``' last step), run once every seed's
    ``RUN/seed-S/commands.sh`` is done; written before the seeds run, so a dry run shows it too."""
    seeds = ", ".join(map(str, config.seeds))
    head = [
        "#!/usr/bin/env bash",
        f"# darling {__version__} pipeline, preset {config.preset}: the study over seeds {seeds}, after every",
        "# RUN/seed-S/commands.sh is done. Each line pools one difference over the seeds (`darling eval study`).",
    ]
    lines = [*head, f"RUN=${{RUN:-{shlex.quote(str(config.run))}}}", "set -euo pipefail"]
    return write_script(config.run / name, "\n".join([*lines, *(step.line(config.run) for step in steps), ""]))


# -- inputs ------------------------------------------------------------------------------------------------------
def json_text(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def write_inputs(files: dict[Path, str]) -> list[Path]:
    """Write (atomically, identically on every run) the input files the commands name."""
    for path, text in files.items():
        write_if_changed(path, text)
    return list(files)
