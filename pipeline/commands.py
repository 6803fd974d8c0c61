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

STAGES = ("datagen", "pairs", "labels", "classifier", "rl", "eval-math", "eval-novelty")
COMMANDS_FILE = "commands.sh"
INPUTS = "inputs"
# rl-train refuses --resume without a checkpoint (and a fresh run over one): resume only what an interrupted run left.
RL_RESUME = '$( ls -d "$RUN"/rl/checkpoint-* >/dev/null 2>&1 && echo --resume )'
EVAL_MODELS = ("base", "darling-rl")  # eval-math/<name>/ and eval-novelty/<name>/
# eval-math names the model this in both folders: per-request seeds derive from the name, so both models draw
# the same seeds and the before/after comparison is paired (identical weights give identical samples).
EVAL_NAME = "policy"


@dataclass
class StageCommands:
    name: str
    resources: str  # one comment line: what it needs (GPUs, CPU minutes)
    lines: list[str] = field(default_factory=list)  # shell lines (commands and comments)
    gpu_only: bool = False

    def describe(self) -> str:
        return ("[GPU-only] " if self.gpu_only else "") + self.resources


def input_files(config: PipelineConfig) -> dict[str, Path]:
    """The pipeline-written inputs this config uses (role -> path under RUN/inputs)."""
    root = config.run / INPUTS
    files = {"novelty_prompts": root / "novelty-prompts.jsonl"}
    files.update({f"eval_generators:{name}": root / f"eval-math-{name}.json" for name in EVAL_MODELS})
    if config.judge_prompt == "compact":
        files["judge_prompt"] = root / "judge-prompt.txt"
    if config.datagen == "generate":
        files["generators"] = root / "generators.json"
    if config.preset == "paper":
        files["accelerate"] = root / "accelerate-zero3.yaml"
    return files


def rollout_generators(config: PipelineConfig) -> list[dict]:
    if config.rollout_models:
        return [{"name": m.rsplit("/", 1)[-1], "model": m} for m in config.rollout_models]
    return [dict(g) for g in PAPER_GENERATORS]


def eval_models(config: PipelineConfig) -> dict[str, str]:
    """Before and after RL: name -> model (hub name, alias or path)."""
    return dict(zip(EVAL_MODELS, (config.policy(), str(config.run / "rl" / "final")), strict=True))


def eval_generator(config: PipelineConfig, model: str) -> dict:
    """One eval-math generator, prompted as the policy was trained (the rl template, no system prompt)."""
    return {"name": EVAL_NAME, "model": model, "system_prompt": None, "user_template": config.policy_template()}


def write_inputs(config: PipelineConfig) -> dict[str, Path]:
    """Write (atomically, identically on every run) the input files the stages and commands.sh use."""
    files = input_files(config)
    contents = {
        "novelty_prompts": "".join(json.dumps(p) + "\n" for p in NOVELTY_PROMPTS),
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
    """One command line; ``$RUN/...`` stays unquoted so the shell expands it, everything else is quoted."""
    words = []
    for part in parts:
        text = str(part)
        words.append(f'"{text}"' if text.startswith("$RUN") else shlex.quote(text))
    return " ".join(words)


def _opt(flag: str, value: object) -> list[object]:
    return [] if value is None else [flag, value]


def _engine_flags(engine: str, threads: int | None, tensor_parallel: int) -> list[object]:
    if engine == "hf":
        return ["--engine", "hf", *_opt("--threads", threads)]
    if engine == "vllm":
        return ["--engine", "vllm", "--tensor-parallel-size", tensor_parallel]
    return ["--engine", engine]


def stage_commands(config: PipelineConfig) -> list[StageCommands]:
    c, gpu = config, config.preset == "paper"
    files = input_files(config)
    rel = lambda p: "$RUN/" + str(Path(p).relative_to(config.run))  # noqa: E731
    stages = []

    # 1. rollouts
    if c.datagen == "champ":
        s = StageCommands("datagen", "CPU, seconds: CHAMP's real responses (GPT-3.5, GPT-4, GPT-4 Turbo, PaLM 2)")
        s.lines.append(_cmd("darling", "datagen", "rollouts", "--import", "champ", *_opt("--limit", c.datagen_limit),
                            "--output", "$RUN/datagen"))  # fmt: skip
    else:
        where = ("vLLM in process, one generator at a time, tensor parallel "
                 f"{c.rollout_tensor_parallel} (QwQ-32B and Llama-4-Maverick need the whole 8-GPU node)"
                 if c.rollout_engine == "vllm" else f"{c.rollout_engine} engine")  # fmt: skip
        s = StageCommands("datagen", where, gpu_only=c.rollout_engine == "vllm")
        s.lines.append(f"# generators (names, models, per-model limits): {rel(files['generators'])}")
        s.lines.append(_cmd("darling", "datagen", "rollouts", "--problems", c.datagen_problems,
                            *_opt("--limit", c.datagen_limit), "--generators", rel(files["generators"]),
                            *_engine_flags(c.rollout_engine, c.threads, c.rollout_tensor_parallel),
                            "-n", c.rollout_n, "--temperature", c.rollout_temperature, "--max-tokens",
                            c.rollout_max_tokens, "--seed", c.seed, "--output", "$RUN/datagen"))  # fmt: skip
    stages.append(s)

    # 2. pairs
    s = StageCommands("pairs", "CPU (math-verify), seconds to minutes")
    s.lines.append(_cmd("darling", "datagen", "pairs", "--rollouts", "$RUN/datagen", "--output", "$RUN/pairs",
                        *(["--cross-model-only"] if c.cross_model_only else []),
                        "--max-pairs-per-problem", c.pairs_per_problem, "--seed", c.seed))  # fmt: skip
    stages.append(s)

    # 3. judge labels
    if c.judge_engine == "vllm":
        where = (f"{c.judge_model} in process (vLLM), tensor parallel {c.judge_tensor_parallel} "
                 "(70B in bf16: 4 x 80 GB)")  # fmt: skip
    else:
        where = f"CPU: {c.judge_model} in process ({c.judge_engine} engine), both orders, ~5 s per call on 1 core"
    s = StageCommands("labels", where, gpu_only=c.judge_engine == "vllm")
    s.lines.append(_cmd("darling", "datagen", "label", "--pairs", "$RUN/pairs", "--output", "$RUN/labels",
                        *_engine_flags(c.judge_engine, c.threads, c.judge_tensor_parallel),
                        "--judge-model", c.judge_model, "--structured", c.judge_structured,
                        "--max-tokens", c.judge_max_tokens,
                        *_opt("--max-chars-per-solution", c.judge_max_chars),
                        *(["--prompt-file", rel(files["judge_prompt"])] if "judge_prompt" in files else []),
                        *_opt("--limit", c.judge_limit), "--seed", c.seed))  # fmt: skip
    stages.append(s)

    # 4. classifier
    if gpu:
        s = StageCommands("classifier", "Qwen3-Embedding-4B, bf16, gradient checkpointing, "
                          f"{c.classifier_devices} GPUs ({c.classifier_strategy})", gpu_only=True)  # fmt: skip
        data = "$RUN/labels/labelled.parquet"
        resume = ['$( [ -f "$RUN/classifier/training/checkpoints/last.ckpt" ] && echo --resume )']
    else:
        s = StageCommands("classifier", "CPU, 1-2 minutes: the packaged MiniLM encoder, a few optimiser steps")
        s.lines.append("# Before this command the pipeline writes $RUN/classifier/train-pairs.jsonl: the judge's "
                       f"labels, plus {c.fallback_pairs} of the built-in NoveltyBench human pairs when the judge "
                       f"gives fewer than {c.min_labels_per_class} labels of either class.")  # fmt: skip
        data = "$RUN/classifier/train-pairs.jsonl"
        resume = []
    sets = classifier_overrides(config, for_cli=True)
    s.lines.append(_cmd("darling", "train-classifier", "--preset", c.classifier_preset, "--data", data, "--output",
                        "$RUN/classifier", *_opt("--max-steps", c.classifier_steps),
                        *_opt("--devices", c.classifier_devices), *_opt("--strategy", c.classifier_strategy),
                        *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")],
                        *_opt("--threads", c.threads)) + (" " + resume[0] if resume else ""))  # fmt: skip
    stages.append(s)

    # 5. RL
    rl_flags = ["--preset", c.rl_preset, "--classifier", "$RUN/classifier", "--output", "$RUN/rl",
                *_opt("--max-steps", c.rl_steps), *_opt("--limit", c.rl_limit),
                *_opt("--max-completion-length", c.rl_max_completion_length),
                *_opt("--threads", c.threads)]  # fmt: skip
    extra = {"save_steps": c.rl_save_steps, **c.rl_options}
    if gpu:
        s = StageCommands("rl", "8 GPUs: 2 serve the classifier (vLLM), 6 train with TRL (DeepSpeed ZeRO-3, "
                          "vLLM colocate generation)", gpu_only=True)  # fmt: skip
        s.lines += [
            _cmd("darling", "serve-classifier", "--model", "$RUN/classifier", "--replicas", 2, "--gpus", "6,7",
                 "--port", 8000) + " &",
            'SERVER=$!; trap \'kill "$SERVER" 2>/dev/null || true\' EXIT',
            "until curl -sf http://127.0.0.1:8001/health >/dev/null; do sleep 10; done  # both replicas up",
            "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 "
            + _cmd("accelerate", "launch", "--num_processes", 6, "--config_file", rel(files["accelerate"]), "-m",
                   "darling", "rl-train", *rl_flags, "--classifier-url", "http://127.0.0.1:8000",
                   "--classifier-url", "http://127.0.0.1:8001") + " " + RL_RESUME,
            'kill "$SERVER"; trap - EXIT  # free GPUs 6-7 for the evaluations',
        ]  # fmt: skip
    else:
        s = StageCommands("rl", "CPU, 1-2 minutes: SmolLM2-135M policy, built-in arithmetic problems, TRL GRPOTrainer")
        s.lines.append(_cmd("darling", "rl-train", *rl_flags) + " " + RL_RESUME)
    s.lines.insert(0, f"# rl-train options without a flag, set by the pipeline: {json.dumps(extra, sort_keys=True)}")
    stages.append(s)

    # 6. eval math
    where = ("vLLM, 1 GPU per model; the hub benchmarks must be in the local Hugging Face cache"
             if c.eval_engine == "vllm" else "CPU: both models through the hf engine")  # fmt: skip
    s = StageCommands("eval-math", where, gpu_only=c.eval_engine == "vllm")
    s.lines.append(f"# {EVAL_MODELS[0]} = {config.policy()}, {EVAL_MODELS[1]} = $RUN/rl/final, each named "
                   f"'{EVAL_NAME}' so both draw the same seeds (a paired comparison); prompts as in RL")  # fmt: skip
    for name in EVAL_MODELS:
        s.lines.append(_cmd("darling", "eval", "math", *[x for p in c.eval_problems for x in ("--problems", p)],
                            *_opt("--limit", c.eval_limit), "--generators", rel(files[f"eval_generators:{name}"]),
                            *_engine_flags(c.eval_engine, c.threads, 1), "--n", c.eval_n,
                            "--temperature", c.eval_temperature, "--top-p", 0.95, "--max-tokens", c.eval_max_tokens,
                            "--seed", c.seed, "--output", f"$RUN/eval-math/{name}"))  # fmt: skip
    stages.append(s)

    # 7. eval novelty: both models, the fresh classifier, no reward model (quality 1)
    where = ("vLLM generation; the classifier in process" if c.novelty_engine == "vllm"
             else "CPU: hf generation, the fresh classifier in process")  # fmt: skip
    s = StageCommands("eval-novelty", where + "; no reward model, so quality = 1 and utility measures diversity only",
                      gpu_only=c.novelty_engine == "vllm")  # fmt: skip
    for name, model in zip(EVAL_MODELS, (config.policy(), "$RUN/rl/final"), strict=True):
        s.lines.append(_cmd("darling", "eval", "novelty", "--prompts", rel(files["novelty_prompts"]),
                            "--model", model, *_engine_flags(c.novelty_engine, c.threads, 1),
                            "--classifier", "$RUN/classifier", "--k", c.novelty_k,
                            "--temperature", c.novelty_temperature, "--max-tokens", c.novelty_max_tokens,
                            *_opt("--limit", c.novelty_limit), "--seed", c.seed,
                            "--output", f"$RUN/eval-novelty/{name}"))  # fmt: skip
    stages.append(s)
    assert tuple(st.name for st in stages) == STAGES
    return stages


def classifier_overrides(config: PipelineConfig, for_cli: bool = False) -> dict:
    """ClassifierTrainConfig overrides (besides max_steps and the hardware flags, which have CLI flags)."""
    from darling.classifier.config import ClassifierTrainConfig

    out: dict = {}
    if config.classifier_tokens is not None:
        out["max_tokens_per_response"] = config.classifier_tokens
    if config.classifier_steps is not None:
        preset_warmup = ClassifierTrainConfig.preset_values(config.classifier_preset).get("warmup_steps", 10)
        out["warmup_steps"] = min(preset_warmup, max(1, config.classifier_steps // 5))
        out["checkpoint_every_n_steps"] = max(1, config.classifier_steps // 3)
        out["log_every_n_steps"] = max(1, min(10, config.classifier_steps // 4))
    out.update(config.classifier_options)
    if not for_cli:
        out.update({k: v for k, v in (("max_steps", config.classifier_steps), ("devices", config.classifier_devices),
                                      ("strategy", config.classifier_strategy), ("threads", config.threads))
                    if v is not None})  # fmt: skip
    return out


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
        head.append("# CPU: what `darling pipeline --preset cpu` runs in process (about 10 minutes on 2 cores).")
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
