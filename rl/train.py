"""``darling rl-train``: TRL's GRPOTrainer with the DARLING reward as one group-aware reward function.

The paper's choices are the defaults: rewards centred per group without std scaling
(``scale_rewards="none"``, Eq. 6), no KL term (``beta=0``), a length-unbiased loss (``dr_grpo``).
``method`` names the arm (``darling.rl.methods``): ``grpo`` is the baseline with identical settings (quality only).
The settings are ``darling.rl.config.RLTrainConfig`` (presets: ``rl/presets/*.toml``); any other ``GRPOConfig``
field comes from its ``trl`` table. In-process reward models (the classifier, a reward model, the relevance
encoder) run on this rank's accelerator unless told otherwise: in a multi-GPU launch each rank scores on its own GPU.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from darling.classifier.export import ClassifierExport
from darling.core.checkers import get_checker
from darling.core.devices import resolve_device
from darling.core.errors import UserInputError
from darling.core.local_models import check_model_source, resolve_model
from darling.core.shards import atomic_write_bytes
from darling.datagen.problems import load_problems
from darling.rl.config import SETTINGS_FILE, RLTrainConfig, trl_fields
from darling.rl.methods import CHECKER, NGRAM

EVAL_PROMPTS_PER_BATCH = 16  # held-out prompts per evaluation batch (each with num_generations answers)
# What a resumed run may change: the settings marked RESUMABLE where RLTrainConfig declares them.
RESUME_MAY_CHANGE = frozenset(f.name for f in fields(RLTrainConfig) if f.metadata.get("resume_may_change"))


def build_dataset(config: RLTrainConfig, problems_from: str | None = None, limit: int | None = None, groups: int = 1):
    """The run's prompts as TRL reads them (conversational): its training problems, or ``problems_from`` (the
    held-out prompts of its evaluation) with ``limit``, each listed ``groups`` times (TRL samples a group per row)."""
    from datasets import Dataset

    source = problems_from or config.problems
    problems = load_problems(source, limit=config.limit if problems_from is None else limit)
    if config.quality == "math" and not config.reward_model:  # correctness needs a reference answer
        problems = [p for p in problems if p.reference_answer is not None]
        if not problems:
            raise UserInputError(
                f"{source}: no problems with a reference answer (open-ended prompts: --quality short-answer)"
            )
    if config.arm.partition == CHECKER:  # the ceiling arm: every prompt's answers must carry a key its rule reads
        rendered = [config.user_template.replace("{problem}", p.problem) for p in problems]
        get_checker(config.checker).require(rendered, f"--method {config.method} on {source}")
    rows = [
        {
            "prompt": [{"role": "user", "content": config.user_template.replace("{problem}", p.problem)}],
            "answer": p.reference_answer,
            "problem_id": p.problem_id,
        }
        for p in problems
    ]
    return Dataset.from_list([row for row in rows for _ in range(groups)])


def build_scorer(config: RLTrainConfig, export: ClassifierExport | None = None):
    """What partitions the groups: for darling-ngram its word n-gram scorer (no model), for checker-ceiling the
    checker's keys; else the in-process (on
    ``classifier_device``, default this rank's accelerator) or vLLM-served classifier, either kind, of ``export``
    (``config.classifier`` already read) or ``config.classifier``. An arm whose reward reads no partition gets one
    only to measure distinct per group for the logs (None without --classifier)."""
    from darling.classifier.ngram import ngram_scorer  # loads torch (through scoring): not before the settings
    from darling.classifier.partition import KeyPartition  # loads torch (through scoring): not before the settings
    from darling.classifier.scoring import load_scorer  # loads torch: not before the settings are checked

    if config.arm.partition == NGRAM:
        return ngram_scorer(config.ngram_n, config.ngram_threshold)
    if config.arm.partition == CHECKER:
        return KeyPartition(get_checker(config.checker))
    if config.classifier is None:
        return None
    export = export or ClassifierExport(config.classifier)
    if config.classifier_urls:
        return load_scorer(
            export,
            config.classifier_urls,
            threshold=config.classifier_threshold,
            **client_options(config),
        )
    device = resolve_device(config.classifier_device)
    return load_scorer(export, threshold=config.classifier_threshold, device=device)


def check_enough_prompts(config: RLTrainConfig, prompts: int) -> None:
    """A step samples ``per_device_train_batch_size x steps_per_generation / num_generations`` prompts on each process;
    fewer prompts than that fill no batch, and TRL would train zero steps without a word."""
    per_step = config.per_device_train_batch_size * (config.steps_per_generation or config.gradient_accumulation_steps)
    needed = per_step // config.num_generations
    if prompts < needed:
        raise UserInputError(
            f"{config.problems}: {prompts} prompts (limit {config.limit}), fewer than the {needed} a step samples "
            f"({per_step} completions of {config.num_generations}): raise --limit or lower "
            "--per-device-train-batch-size"
        )


def client_options(config: RLTrainConfig) -> dict:
    """Timeouts and retries of the served classifier's and reward model's clients (``PoolingClient``)."""
    return {"timeout": config.server_timeout, "max_retries": config.server_retries}


def build_quality(config: RLTrainConfig):
    """The quality signal: math-verify correctness, an open-ended quality, or a reward model (served by
    ``reward_model_urls``, else in process on ``reward_model_device``, default this rank's accelerator)."""
    from darling.rl.trl_reward import (  # loads torch: not before the settings are checked
        OpenEndedQuality,
        RewardModelQuality,
        answer_quality,
    )

    if config.reward_model and config.reward_model_urls:
        return RewardModelQuality(str(config.reward_model), urls=config.reward_model_urls, **client_options(config))
    device = resolve_device(config.reward_model_device)
    if config.reward_model:
        return RewardModelQuality(str(config.reward_model), device)
    if config.quality != "math":
        return OpenEndedQuality(config.quality, config.max_words, device, config.strict_length)
    return answer_quality


def grpo_overrides(config: RLTrainConfig) -> dict:
    """``config.trl``, each key checked against this TRL's ``GRPOConfig`` (a typo is refused, not ignored)."""
    from dataclasses import fields

    from trl import GRPOConfig, __version__

    known = {f.name for f in fields(GRPOConfig)}
    unknown = sorted(set(config.trl) - known)
    if unknown:
        raise UserInputError(f"trl.{unknown[0]}: not a field of TRL {__version__}'s GRPOConfig")
    return dict(config.trl)


def model_init_kwargs(config: RLTrainConfig, overrides: dict) -> dict:
    """How TRL loads the policy: in bf16 when training in bf16 (TRL's own default is fp32, whatever the run's
    precision), else fp32; ``trl.model_init_kwargs`` adds to (or replaces) it."""
    own = {"dtype": "bfloat16" if config.bf16 else "float32"}
    given = overrides.get("model_init_kwargs") or {}
    if isinstance(given, str):
        given = json.loads(given)
    return {**own, **given}


def grpo_args(config: RLTrainConfig, eval_prompts: int = 0):
    """TRL's ``GRPOConfig`` from the command's settings, then ``trl``'s other fields; ``eval_prompts``: how many
    held-out prompts TRL's evaluation answers (none: no evaluation)."""
    from trl import GRPOConfig

    overrides = grpo_overrides(config)
    # every setting that reaches TRL, named by its field (``rl.config.trl_fields``); then what rl-train fixes
    own: dict[str, Any] = {trl: getattr(config, name) for trl, name in trl_fields().items()}
    own.update(output_dir=str(config.output), logging_steps=1, save_strategy="steps")
    if eval_prompts:  # TRL's evaluation of the held-out prompts: before the first step, then every eval_steps
        own.update(
            eval_strategy="steps",
            eval_on_start=True,
            per_device_eval_batch_size=config.num_generations * min(eval_prompts, EVAL_PROMPTS_PER_BATCH),
        )
    return GRPOConfig(**own, **{**overrides, "model_init_kwargs": model_init_kwargs(config, overrides)})


def build_trainer(config: RLTrainConfig, dataset=None, export: ClassifierExport | None = None):
    """A ready ``GRPOTrainer`` whose only reward function is the DARLING reward (``trainer.darling_reward``);
    ``dataset`` and ``export`` when ``rl_train`` has read them already."""
    import torch
    from trl import GRPOTrainer

    from darling.rl.trl_reward import DarlingRewardFunction  # loads torch: not before the settings are checked

    if config.threads:
        torch.set_num_threads(config.threads)
    dataset = dataset if dataset is not None else build_dataset(config)
    held_out = None
    if config.eval_problems:
        held_out = build_dataset(config, config.eval_problems, config.eval_limit, config.eval_groups)
    args = grpo_args(config, len(held_out) if held_out is not None else 0)  # a bad trl.* key: before any model
    reward = DarlingRewardFunction(
        config.num_generations,
        build_scorer(config, export),
        config.reward(),
        build_quality(config),
        scale=config.scale_rewards,
        term=config.darling_term(),
        checker=get_checker(config.checker),
    )
    trainer = GRPOTrainer(
        model=resolve_model(config.policy),
        reward_funcs=[reward],  # type: ignore[list-item]  # TRL wants list[float | None] returned; list is invariant
        args=args,
        train_dataset=dataset,
        eval_dataset=held_out,
    )
    trainer.darling_reward = reward  # type: ignore[attr-defined]  # ours, on TRL's trainer: the handle callers use
    if config.trainable_layers is not None:  # before train(): TRL's optimiser takes the weights that need grads
        train_top_layers(trainer.model, config.trainable_layers)
    return trainer


def decoder_layers(model) -> Any:
    """The policy's stack of decoder layers: the ModuleList as long as ``config.num_hidden_layers``."""
    import torch

    count = model.config.num_hidden_layers
    found = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == count]
    if not found:
        raise UserInputError(f"trainable_layers: no stack of {count} decoder layers in {type(model).__name__}")
    return found[0]


def train_top_layers(model, n: int) -> int:
    """Freeze every weight but the top ``n`` decoder layers and the final norm; returns the trainable count. Tied
    input/output embeddings stay frozen with the input's: training them would move every layer's input."""
    layers = decoder_layers(model)
    if not 0 < n <= len(layers):
        raise UserInputError(f"trainable_layers must be between 1 and {len(layers)} (the policy's layers), got {n}")
    model.requires_grad_(False)
    for layer in list(layers)[-n:]:
        layer.requires_grad_(True)
    norm = getattr(getattr(model, "model", model), "norm", None)
    if norm is not None:
        norm.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def checkpoints(output: Path) -> list[Path]:
    return sorted(Path(output).glob("checkpoint-*"), key=lambda p: (len(p.name), p.name))  # checkpoint-8 < -10


def last_complete_checkpoint(output: Path) -> Path | None:
    """The newest checkpoint the Trainer finished writing (it writes ``trainer_state.json`` last): a save cut
    short by a kill or a full disk leaves a folder without it, which resuming must skip, not crash on."""
    complete = [p for p in checkpoints(output) if (p / "trainer_state.json").exists()]
    return complete[-1] if complete else None


def start_or_resume(config: RLTrainConfig, resume: bool | None) -> bool:
    """Check OUTPUT against ``resume`` and record the settings; True when training continues a checkpoint.

    ``resume=True`` (``--resume``) needs a checkpoint; ``False`` refuses an OUTPUT that already holds some
    (a fresh run would mix its checkpoints with another's); ``None`` resumes when there is one (the pipeline).
    A resumed run must keep the settings it started with, except ``RESUME_MAY_CHANGE``."""
    output = Path(config.output)
    found = checkpoints(output)
    if resume and not found:
        raise UserInputError(f"{output}: --resume given, but there is no checkpoint-* to resume from")
    if resume is False and found:
        raise UserInputError(
            f"{output}: already holds {found[-1].name}; pass --resume to continue, or another --output"
        )
    saved_file, now = output / SETTINGS_FILE, config.to_dict()
    if found and saved_file.exists():
        saved = json.loads(saved_file.read_text())
        for key in sorted(set(now) - RESUME_MAY_CHANGE):
            if key in saved and saved[key] != now[key]:
                raise UserInputError(
                    f"{saved_file}: this run started with {key}={saved[key]!r}, now {key}={now[key]!r}; a resumed "
                    f"run keeps its settings (only {', '.join(sorted(RESUME_MAY_CHANGE))} may change)"
                )
    output.mkdir(parents=True, exist_ok=True)
    tmp = saved_file.with_name(f".{SETTINGS_FILE}.{os.getpid()}.tmp")  # every rank of a launch writes it
    tmp.write_text(json.dumps(now, indent=2))
    tmp.replace(saved_file)
    return bool(found)


def check_policy(name: str) -> None:
    """A policy that cannot be loaded is bad input, found before anything is written or loaded: a local folder
    must hold a model, and a hub name must be in the local cache (or, online, on the hub)."""

    check_model_source(name, "--policy")


LOG_FILE = "log_history.json"


def rl_train(config: RLTrainConfig, resume: bool | None = False, trainer=None):
    """Train; returns the TRL trainer (its ``state.log_history`` has the per-step metrics, also written to
    ``OUTPUT/log_history.json`` beside ``OUTPUT/final``)."""
    dataset, export = None, None
    if trainer is None:  # every input is read (and refused, if bad) before OUTPUT is touched or a model loads
        dataset = build_dataset(config)
        check_enough_prompts(config, len(dataset))
        grpo_overrides(config)
        if config.classifier is not None:
            export = ClassifierExport(config.classifier)
        check_policy(config.policy)  # may convert the packaged SmolLM2 the first time: after the cheap checks
    resuming = start_or_resume(config, resume)
    last = last_complete_checkpoint(config.output) if resuming else None
    if resuming and last is None:
        raise UserInputError(
            f"{config.output}: no complete checkpoint-* to resume from (each lacks trainer_state.json)"
        )
    trainer = trainer or build_trainer(config, dataset, export)
    trainer.train(resume_from_checkpoint=str(last) if last else False)
    trainer.save_model(str(Path(config.output) / "final"))
    if trainer.is_world_process_zero():
        history = json.dumps(trainer.state.log_history, indent=2, default=str) + "\n"
        atomic_write_bytes(Path(config.output) / LOG_FILE, history.encode())
        if config.prune_checkpoints:
            prune_checkpoints(Path(config.output))
    close_process_group(trainer)
    return trainer


def close_process_group(trainer) -> None:
    """End the process group ``accelerate launch`` / torchrun opened, once every rank is past its last collective:
    TRL's trainer never does (transformers leaves it to the script), and NCCL then warns at exit that
    ``destroy_process_group()`` was not called. No group (one process): nothing.

    The DDP wrapper goes first. Its reducer holds the group too, and when it is the last holder it ends the group
    without releasing the GIL, while a gloo thread freeing a finished collective waits for the GIL: a rank then hung
    at exit (2 launches in 12 on 2 CPU ranks, bench/rl_exit.sh; pytorch/pytorch#56297). Ended from Python instead,
    the group is freed with the GIL released. If anything still holds a DDP wrapper, the group is left to the
    process's exit, as before."""
    import gc

    import torch.distributed as dist  # loaded already by TRL's trainer
    from torch.nn.parallel import DistributedDataParallel

    if not (dist.is_available() and dist.is_initialized()):
        return
    world = dist.get_world_size()
    trainer.accelerator.wait_for_everyone()
    trainer.accelerator.free_memory()  # its references to the wrapped model and optimiser
    trainer.model_wrapped = trainer.model
    gc.collect()
    if any(isinstance(obj, DistributedDataParallel) for obj in gc.get_objects()):
        print("the process group is left to the process's exit: a DDP wrapper is still held", flush=True)
        return
    trainer.accelerator.end_training()
    if trainer.is_world_process_zero():
        print(f"closed the process group of {world} processes", flush=True)


def prune_checkpoints(output: Path) -> list[str]:
    """Delete ``checkpoint-*`` once ``final`` is saved: each is renamed first (atomic), so a resume never sees half
    a checkpoint; a prune cut short leaves ``.pruned-*`` folders, which the next prune removes."""
    import shutil

    for leftover in output.glob(".pruned-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    pruned = []
    for ckpt in checkpoints(output):
        target = output / f".pruned-{ckpt.name}"
        ckpt.rename(target)
        shutil.rmtree(target)
        pruned.append(ckpt.name)
    return pruned
