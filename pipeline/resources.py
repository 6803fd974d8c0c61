"""Inputs the pipeline ships (our own writing) and writes into ``RUN/inputs/``, so a run needs no other file."""

from __future__ import annotations

# Open-ended prompts for `eval novelty` (written for this package; short, so a CPU model answers in 64 tokens).
NOVELTY_PROMPTS: tuple[dict[str, str], ...] = (
    {"id": "lighthouse-poem", "category": "creativity", "prompt": "Write a two-line poem about a lighthouse."},
    {
        "id": "cereal-name",
        "category": "creativity",
        "prompt": "Invent a name for a new breakfast cereal and describe it in one sentence.",
    },
    {"id": "umbrella-reuse", "category": "ideas", "prompt": "Suggest a creative way to reuse an old umbrella."},
    {
        "id": "train-station-story",
        "category": "creativity",
        "prompt": "Tell a one-sentence story that begins in a train station.",
    },
    {
        "id": "first-job-advice",
        "category": "advice",
        "prompt": "Give one piece of advice to someone starting their first job.",
    },
    {"id": "rainy-sunday", "category": "ideas", "prompt": "Name something fun to do on a rainy Sunday afternoon."},
)

# The judge prompt for a small CPU judge: datagen's question (different strategies? [[yes]]/[[no]]) in a
# quarter of the tokens, since SmolLM2-135M scores every token of it twice per pair (both orders).
COMPACT_JUDGE_PROMPT = """\
Two solutions to the same math problem reach the same final answer. Do they use DIFFERENT strategies \
(different methods, key steps or concepts), not just different wording, notation or detail?

[Problem]
{problem}

[Solution 1]
{solution_1}

[Solution 2]
{solution_2}

Answer [[yes]] if the strategies are different, [[no]] if they are essentially the same.
"""

# The judge prompt for answers to one open question (item prompts): the same answer in other words, or another
# answer? datagen's [[yes]]/[[no]] form, "yes" = different (similar = 0), short enough for a small CPU judge.
ANSWER_JUDGE_PROMPT = """\
Two answers to the same question. Do they give DIFFERENT answers (name a different thing, make a different \
claim), not just say the same answer in other words, with other details or at another length?

[Question]
{problem}

[Answer 1]
{solution_1}

[Answer 2]
{solution_2}

Answer [[yes]] if the answers are different, [[no]] if they give the same answer.
"""

# Accelerate configs RL launches with (after TRL's examples/accelerate_configs), by name; num_processes comes from
# the pipeline's rl_processes. deepspeed-zero3: the paper's (weights, gradients and optimizer state sharded, fp32
# master weights in the optimizer); multi-gpu: DDP; multi-cpu: the multi-gpu launch (torch.distributed.run) of CPU
# processes, which rl-train's use_cpu makes gloo ranks. Not accelerate's own MULTI_CPU with use_cpu: true, which
# `accelerate launch` runs through its simple launcher, one process whatever num_processes says (an MPI hostfile
# aside): the CPU chain would never run RL on several ranks.
# main_process_port 0: a free port per launch. At the default 29500, two runs started together on one node (DARLING
# and GRPO side by side, seeds) both found it free and one then failed to bind it (EADDRINUSE). Several nodes
# (launch_slurm) give the port on the command line.
_ACCELERATE_COMMON = """\
compute_environment: LOCAL_MACHINE
debug: false
machine_rank: 0
main_process_port: 0
main_training_function: main
num_machines: 1
num_processes: {processes}
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
"""
ACCELERATE = {
    "deepspeed-zero3": _ACCELERATE_COMMON
    + """\
deepspeed_config:
  deepspeed_multinode_launcher: standard
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
downcast_bf16: 'no'
mixed_precision: bf16
use_cpu: false
""",
    "multi-gpu": _ACCELERATE_COMMON
    + """\
distributed_type: MULTI_GPU
downcast_bf16: 'no'
gpu_ids: all
mixed_precision: bf16
use_cpu: false
""",
    "multi-cpu": _ACCELERATE_COMMON
    + """\
distributed_type: MULTI_GPU
downcast_bf16: 'no'
mixed_precision: 'no'
use_cpu: false
""",
}


def accelerate_config(name: str, processes: int) -> str:
    return ACCELERATE[name].format(processes=processes)


def _jsonl(rows: tuple[dict[str, str], ...]) -> str:
    import json

    return "".join(json.dumps(r) + "\n" for r in rows)


# Files a stage's table may name as "inputs:NAME": the pipeline writes them to RUN/inputs/NAME.
INPUT_FILES = {
    "compact-judge-prompt.txt": COMPACT_JUDGE_PROMPT,
    "answer-judge-prompt.txt": ANSWER_JUDGE_PROMPT,
    "novelty-prompts.jsonl": _jsonl(NOVELTY_PROMPTS),
}
