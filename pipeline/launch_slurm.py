"""``--launcher slurm``: the chain as SLURM jobs, one ``sbatch`` script per stage and ``submit.sh`` chaining them
(``--dependency=afterok``), written to ``RUN/slurm/`` beside ``commands.sh``; nothing runs here, the user submits.

Each script is its stage's block of ``commands.sh`` (the same ``darling`` lines, so the same resumable commands and
logs) under ``#SBATCH`` lines with the stage's node and GPU counts. Training is the one multi-node stage: with
``nodes`` > 1 the classifier's ``torchrun`` and each RL run's ``accelerate launch`` start once per node through
``srun`` and meet at a c10d rendezvous on the job's first node (the pattern of accelerate's own SLURM example,
``examples/slurm/submit_multinode.sh``); ``serve-classifier`` / ``serve-reward-model`` replicas stay on the first
node, on the GPUs the preset gives them, bound to its name instead of 127.0.0.1 so the other nodes reach them, while
the RL processes take ``rl_gpus`` on every node. (TRL's own vLLM server, ``vllm_mode = server``, is not moved: set
``[rl] vllm_server_host`` yourself.)
Generation, judging and evaluation run on one node (their vLLM servers per model); for more, use ``--engine ray``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from darling.core.shards import atomic_write_bytes
from darling.pipeline.config import PipelineConfig
from darling.pipeline.script import PRELUDE, Block
from darling.pipeline.stages import STAGE
from darling.pipeline.steps import Step, run_relative, shell_word

SLURM_DIR = "slurm"
SUBMIT = "submit.sh"
RENDEZVOUS_PORT = 29500
SERVERS = ("serve-classifier", "serve-reward-model")  # replicas the RL processes of every node call
LOCAL_HOST = "127.0.0.1"  # no GPU: math-verify and tables
HEAD = 'HEAD_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)  # the rendezvous host'


@dataclass(frozen=True)
class Job:
    """One stage's SLURM job: its script's name, its stage, its node and GPU counts."""

    file: str
    stage: str
    nodes: int
    gpus_per_node: int


def multi_node_launcher(step: Step, config: PipelineConfig) -> str | None:
    """``srun`` + a rendezvous launcher for a training step on ``config.nodes`` nodes (None: not a training step)."""
    launcher = [run_relative(w, config.run) for w in step.launcher]
    srun = f"srun --nodes={config.nodes} --ntasks-per-node=1"
    if launcher[:1] == ["torchrun"]:
        per_node = launcher[launcher.index("--nproc-per-node") + 1]
        rendezvous = f'--rdzv-backend c10d --rdzv-endpoint "$HEAD_NODE:{RENDEZVOUS_PORT}" --rdzv-id "$SLURM_JOB_ID"'
        return f"{srun} torchrun --nnodes {config.nodes} --nproc-per-node {per_node} {rendezvous}"
    if "accelerate" in launcher:
        at = launcher.index("accelerate")
        env = " ".join(["env", *launcher[:at]]) if at else ""  # srun runs a program: `env VAR=... accelerate`
        processes = int(launcher[launcher.index("--num_processes") + 1])  # per node
        config_file = shell_word(launcher[launcher.index("--config_file") + 1])
        accelerate = (
            f"accelerate launch --config_file {config_file} --num_machines {config.nodes} "
            f"--num_processes {processes * config.nodes} --rdzv_backend c10d "
            f'--main_process_ip "$HEAD_NODE" --main_process_port {RENDEZVOUS_PORT}'
        )
        return f"{srun} {env + ' ' if env else ''}{accelerate}"
    return None


def stage_lines(stage: Block, config: PipelineConfig) -> list[str]:
    """The stage's block, its training commands started on every node when ``nodes`` > 1 (the stages placed on
    every node); replicas the RL processes call (bound to 127.0.0.1 on one node) then bind the first node's name,
    and the URLs say it."""
    lines = list(stage.lines)
    if config.nodes == 1 or STAGE[stage.name].placement != "nodes":
        return lines
    for step in stage.steps:
        line = step.line(config.run)
        launcher = multi_node_launcher(step, config)
        if launcher is not None:
            command = line[line.index("-m darling") :]
            lines = [text.replace(line, f"{launcher} {command}") for text in lines]
        elif step.words[0] in SERVERS and getattr(step.config, "host", None) == LOCAL_HOST:
            lines = [text.replace(line, f'{line} --host "$HEAD_NODE"') for text in lines]
    lines = [text.replace(f"http://{LOCAL_HOST}:", 'http://"$HEAD_NODE":') for text in lines]
    return [HEAD, *lines]


def stage_job(index: int, stage: Block, config: PipelineConfig) -> Job:
    placement = STAGE[stage.name].placement  # cpu | node | nodes (the training stages span every node)
    nodes = config.nodes if placement == "nodes" else 1
    gpus = 0 if placement == "cpu" else config.gpus_per_node
    return Job(f"{index:02d}-{stage.name}.sbatch", stage.name, nodes, gpus)


def render_job(job: Job, stage: Block, config: PipelineConfig) -> str:
    options = {
        "job-name": f"darling-{job.stage}",
        "nodes": str(job.nodes),
        "ntasks-per-node": "1",
        **({"gpus-per-node": str(job.gpus_per_node), "exclusive": ""} if job.gpus_per_node else {}),
        "output": str(config.run / "logs" / f"slurm-{job.stage}-%j.log"),
        **{k: str(v) for k, v in config.slurm.items()},
    }
    head = ["#!/usr/bin/env bash"]
    head += [f"#SBATCH --{key}" + (f"={value}" if value else "") for key, value in options.items()]
    head += [f"# darling pipeline, preset {config.preset}: stage {job.stage} — {stage.describe()}"]
    head += ["# Resumable: resubmitting this job continues where it stopped (every command resumes by itself)."]
    body = [f"RUN=${{RUN:-{shlex.quote(str(config.run))}}}", *PRELUDE, *stage_lines(stage, config)]
    return "\n".join([*head, *body, ""])


def render_submit(jobs: list[Job]) -> str:
    lines = [
        "#!/usr/bin/env bash",
        "# Submit the chain: one job per stage, each starting once the one before it ended well (afterok).",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
    ]
    for i, job in enumerate(jobs):
        dependency = ' --dependency="afterok:$prev"' if i else ""
        lines.append(f'prev=$(sbatch --parsable{dependency} {job.file}); echo "{job.stage}: job $prev"')
    return "\n".join([*lines, ""])


def write_slurm(config: PipelineConfig, stages: list[Block]) -> list[Path]:
    """Write ``RUN/slurm/NN-stage.sbatch`` per stage and ``RUN/slurm/submit.sh``; returns their paths."""
    folder = config.run / SLURM_DIR
    jobs = [stage_job(i, stage, config) for i, stage in enumerate(stages, 1)]
    files = {folder / job.file: render_job(job, stage, config) for job, stage in zip(jobs, stages, strict=True)}
    files[folder / SUBMIT] = render_submit(jobs)
    for path, text in files.items():
        atomic_write_bytes(path, text.encode())
        path.chmod(0o755)
    return list(files)
