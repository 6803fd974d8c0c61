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

# The paper's eight generator models (reference notes: DeepScaleR problems, rollouts from these models).
# Qwen2.5-Math-7B-Instruct has a 4k context, so its responses are capped below the others'.
PAPER_GENERATORS: tuple[dict, ...] = (
    {"name": "qwen3-4b-base", "model": "Qwen/Qwen3-4B-Base"},
    {"name": "qwen3-8b-base", "model": "Qwen/Qwen3-8B-Base"},
    {"name": "qwen3-4b", "model": "Qwen/Qwen3-4B"},
    {"name": "qwen3-8b", "model": "Qwen/Qwen3-8B"},
    {"name": "octothinker-8b", "model": "OctoThinker/OctoThinker-8B-Hybrid-Base"},
    {"name": "qwen2.5-math-7b-instruct", "model": "Qwen/Qwen2.5-Math-7B-Instruct", "max_tokens": 3072},
    {"name": "qwq-32b", "model": "Qwen/QwQ-32B"},
    {"name": "llama-4-maverick", "model": "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"},
)

# TRL's examples/accelerate_configs/deepspeed_zero3.yaml, for 6 training processes (2 GPUs serve the classifier).
ACCELERATE_ZERO3 = """\
compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  deepspeed_multinode_launcher: standard
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
downcast_bf16: 'no'
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 6
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
"""
