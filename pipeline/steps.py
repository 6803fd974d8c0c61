"""One definition of each pipeline stage: the ``darling`` command it is, as a config object plus the command's other
parameters. ``pipeline/stages.py`` runs a step by calling the command's Python API with exactly that config;
``pipeline/commands.py`` renders the same step as its ``darling ...`` line in ``commands.sh``. So the two cannot
disagree, and ``tests/pipeline/test_steps.py`` parses every rendered line with the real command line and checks it
builds the very config the runner used.
"""

from __future__ import annotations

import shlex
import typing
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from darling.core.config import CommandConfig, base_type, coerce, field_types
from darling.pipeline.config import PIPELINE_PROMPTS, PipelineConfig

EVAL_MODELS = ("base", "darling-rl")  # eval-math/<name>/ and eval-novelty/<name>/
GRPO_MODEL = "grpo-rl"  # the GRPO baseline's policy, evaluated beside them with grpo_baseline
# eval-math names the model this in both folders: per-request seeds derive from the name, so both models draw
# the same seeds and the before/after comparison is paired (identical weights give identical samples).
EVAL_NAME = "policy"
INPUTS = "inputs"


@dataclass
class Step:
    """``darling <words> ...``: the command, its settings (``config``) and its other parameters."""

    words: tuple[str, ...]
    config: CommandConfig
    params: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None  # for commands with presets: the one the rendered line names
    shell_params: dict[str, str] = field(default_factory=dict)  # rendered as shell text (e.g. a conditional flag)

    def argv(self, run: Path) -> list[str]:
        """The command line after ``darling``, paths under ``run`` written as ``$RUN/...``."""
        words = list(self.words)
        if self.preset is not None:
            words += ["--preset", self.preset]
        for name, value in self.params.items():
            words += _flag(name.rstrip("_"), value, run)
        for name, value in setting_changes(self.config, self.preset).items():
            f = next(f for f in fields(self.config) if f.name == name)
            if not f.metadata.get("flag", True) or value is None or isinstance(value, dict):
                words += ["--set", f"{name}={_set_value(value, run)}"]
            else:
                words += _flag(name, value, run)
        return words

    def line(self, run: Path) -> str:
        text = " ".join(_quote(w) for w in ["darling", *self.argv(run)])
        return " ".join([text, *self.shell_params.values()])


def baseline(cls: type[CommandConfig], preset: str | None) -> dict[str, Any]:
    """Each field's value before any flag: the preset's, else the dataclass default (MISSING when required)."""
    values = cls.preset_values(preset) if preset is not None else {}
    out = {}
    for f in fields(cls):
        if f.name in values:
            out[f.name] = coerce(cls, f.name, values[f.name])
        elif f.default_factory is not MISSING:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = f.default
    return out


def setting_changes(config: CommandConfig, preset: str | None) -> dict[str, Any]:
    """The fields whose value differs from the baseline: what the command line has to say."""
    base = baseline(type(config), preset)
    ordered = sorted(fields(config), key=lambda f: bool(f.metadata.get("panel")))  # engine flags after the command's
    return {f.name: getattr(config, f.name) for f in ordered if getattr(config, f.name) != base[f.name]}


def run_relative(value: Any, run: Path) -> str:
    """``value`` as text, a path under ``run`` written as ``$RUN/...`` (how commands.sh names run files)."""
    text = str(value)
    root = str(run)
    return "$RUN" + text[len(root) :] if text == root or text.startswith(root + "/") else text


def _flag(name: str, value: Any, run: Path) -> list[str]:
    flag = "--" + name.replace("_", "-")
    if value is None:
        return []
    if isinstance(value, bool):
        return [flag if value else f"--no-{name.replace('_', '-')}"]
    if isinstance(value, list | tuple):
        return [w for v in value for w in (flag, run_relative(v, run))]
    return [flag, run_relative(value, run)]


def _set_value(value: Any, run: Path) -> str:
    import json

    if value is None:
        return "none"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return run_relative(value, run)


def _quote(word: str) -> str:
    """``$RUN/...`` in double quotes so the shell expands it; everything else shell-quoted."""
    return f'"{word}"' if word.startswith("$RUN") else shlex.quote(word)


def field_type_is_list(cls: type, name: str) -> bool:
    return typing.get_origin(base_type(field_types(cls)[name])[0]) in (list, tuple)


# -- the stages' steps ------------------------------------------------------------------------------------------
def input_files(config: PipelineConfig) -> dict[str, Path]:
    """The pipeline-written inputs this config uses (role -> path under RUN/inputs)."""
    root = config.run / INPUTS
    files = {"novelty_prompts": root / "novelty-prompts.jsonl"} if config.novelty_prompts == PIPELINE_PROMPTS else {}
    files.update({f"eval_generators:{name}": root / f"eval-math-{name}.json" for name in eval_models(config)})
    if config.judge_prompt == "compact":
        files["judge_prompt"] = root / "judge-prompt.txt"
    if config.datagen == "generate":
        files["generators"] = root / "generators.json"
    if config.preset == "paper":
        files["accelerate"] = root / "accelerate-zero3.yaml"
    return files


def eval_models(config: PipelineConfig) -> dict[str, str]:
    """Before and after RL (and the GRPO baseline's policy, if trained): name -> model (hub name, alias or path)."""
    models = dict(zip(EVAL_MODELS, (config.policy(), str(config.run / "rl" / "final")), strict=True))
    if config.grpo_baseline:
        models[GRPO_MODEL] = str(config.run / "rl-grpo" / "final")
    return models


def novelty_prompts(config: PipelineConfig) -> str:
    """The prompts of eval novelty: the file the pipeline writes, or the configured file or packaged set."""
    if config.novelty_prompts == PIPELINE_PROMPTS:
        return str(input_files(config)["novelty_prompts"])
    return config.novelty_prompts


def _engine(engine: str, c: PipelineConfig, tensor_parallel: int = 1) -> dict[str, Any]:
    """The engine fields a stage sets: hf takes the CPU threads, vllm its tensor-parallel size."""
    return {
        "engine": engine,
        **({"threads": c.threads} if engine == "hf" else {"tensor_parallel_size": tensor_parallel}),
    }


def datagen_step(c: PipelineConfig) -> Step:
    from darling.datagen.config import RolloutConfig

    out = c.run / "datagen"
    if c.datagen == "champ":
        return Step(("datagen", "rollouts"), RolloutConfig(output=out, limit=c.datagen_limit), {"import_": "champ"})
    config = RolloutConfig(
        problems=c.datagen_problems,
        output=out,
        generators=input_files(c)["generators"],
        n=c.rollout_n,
        temperature=c.rollout_temperature,
        max_tokens=c.rollout_max_tokens,
        seed=c.seed,
        limit=c.datagen_limit,
        **_engine(c.rollout_engine, c, c.rollout_tensor_parallel),
    )
    return Step(("datagen", "rollouts"), config)


def pairs_step(c: PipelineConfig) -> Step:
    from darling.datagen.config import PairConfig

    config = PairConfig(
        rollouts=c.run / "datagen",
        output=c.run / "pairs",
        cross_model_only=c.cross_model_only,
        max_pairs_per_problem=c.pairs_per_problem,
        seed=c.seed,
        workers=c.threads or 0,
    )
    return Step(("datagen", "pairs"), config)


def labels_step(c: PipelineConfig) -> Step:
    from darling.datagen.config import JudgeConfig

    config = JudgeConfig(
        pairs=c.run / "pairs",
        output=c.run / "labels",
        judge_model=c.judge_model,
        prompt_file=input_files(c).get("judge_prompt"),
        temperature=0.0,
        max_tokens=c.judge_max_tokens,
        structured=c.judge_structured,
        max_chars_per_solution=c.judge_max_chars,
        seed=c.seed,
        limit=c.judge_limit,
        **_engine(c.judge_engine, c, c.judge_tensor_parallel),
    )
    return Step(("datagen", "label"), config)


def classifier_data_file(c: PipelineConfig) -> Path:
    """The GPU chain trains on the judge's labels; the CPU chain on ``train-pairs.jsonl``, which the pipeline
    writes first (the judge's labels, plus NoveltyBench's human pairs when the judge gives one class)."""
    if c.preset == "paper":
        return c.run / "labels" / "labelled.parquet"
    return c.run / "classifier" / "train-pairs.jsonl"


def classifier_step(c: PipelineConfig) -> Step:
    from darling.classifier.config import ClassifierTrainConfig

    overrides: dict[str, Any] = {}
    if c.classifier_tokens is not None:
        overrides["max_tokens_per_response"] = c.classifier_tokens
    if c.classifier_steps is not None:  # a short schedule: warm-up, checkpoints and logs scaled to it
        preset_warmup = ClassifierTrainConfig.preset_values(c.classifier_preset).get("warmup_steps", 10)
        overrides.update(
            max_steps=c.classifier_steps,
            warmup_steps=min(preset_warmup, max(1, c.classifier_steps // 5)),
            checkpoint_every_n_steps=max(1, c.classifier_steps // 3),
            log_every_n_steps=max(1, min(10, c.classifier_steps // 4)),
        )
    hardware = {"devices": c.classifier_devices, "strategy": c.classifier_strategy, "threads": c.threads}
    overrides.update({k: v for k, v in hardware.items() if v is not None})
    overrides.update(c.classifier_options)
    config = ClassifierTrainConfig.build(c.classifier_preset, overrides=overrides)
    params = {"data": str(classifier_data_file(c)), "output": c.run / "classifier"}
    shell = {"resume": '$( [ -f "$RUN/classifier/training/checkpoints/last.ckpt" ] && echo --resume )'}
    return Step(("train-classifier",), config, params, c.classifier_preset, shell)


def rl_resume(folder: str) -> str:
    """rl-train refuses --resume without a checkpoint (and a fresh run over one): resume only what an interrupted
    run left."""
    return f'$( ls -d "$RUN"/{folder}/checkpoint-* >/dev/null 2>&1 && echo --resume )'


def rl_step(c: PipelineConfig, classifier_urls: tuple[str, ...] = (), grpo: bool = False) -> Step:
    """DARLING (``rl/``), or with ``grpo`` its GRPO baseline (``rl-grpo/``): the same settings and seeds, quality
    only; the classifier then only measures distinct per group for the training curves."""
    from darling.rl.config import RLTrainConfig

    options = {
        "max_steps": c.rl_steps,
        "limit": c.rl_limit,
        "max_completion_length": c.rl_max_completion_length,
        "threads": c.threads,
    }
    overrides = {k: v for k, v in options.items() if v is not None}  # unset: the preset's value
    folder = "rl-grpo" if grpo else "rl"
    overrides.update(output=c.run / folder, classifier=c.run / "classifier", save_steps=c.rl_save_steps, seed=c.seed)
    if classifier_urls:
        overrides["classifier_urls"] = list(classifier_urls)
    overrides.update(c.rl_options)
    if grpo:
        overrides["diversity"] = False
    config = RLTrainConfig.build(c.rl_preset, overrides=overrides)
    return Step(("rl-train",), config, {}, c.rl_preset, {"resume": rl_resume(folder)})


def eval_math_steps(c: PipelineConfig) -> dict[str, Step]:
    from darling.evals.config import MathEvalConfig

    steps = {}
    for name in eval_models(c):
        config = MathEvalConfig(
            output=c.run / "eval-math" / name,
            problems=list(c.eval_problems),
            generators=input_files(c)[f"eval_generators:{name}"],
            n=c.eval_n,
            temperature=c.eval_temperature,
            top_p=0.95,
            max_tokens=c.eval_max_tokens,
            seed=c.seed,
            limit=c.eval_limit,
            **_engine(c.eval_engine, c),
        )
        steps[name] = Step(("eval", "math"), config)
    return steps


def eval_novelty_steps(c: PipelineConfig) -> dict[str, Step]:
    from darling.evals.config import NoveltyConfig

    steps = {}
    for name, model in eval_models(c).items():  # novelty seeds do not depend on the model: paired too
        config = NoveltyConfig(
            output=c.run / "eval-novelty" / name,
            prompts=novelty_prompts(c),
            model=model,
            k=c.novelty_k,
            temperature=c.novelty_temperature,
            max_tokens=c.novelty_max_tokens,
            limit=c.novelty_limit,
            seed=c.seed,
            classifier=str(c.run / "classifier"),
            **_engine(c.novelty_engine, c),
        )
        steps[name] = Step(("eval", "novelty"), config)
    return steps


# The GPU chain serves its classifier on two replicas (GPUs 6-7) for the 6 training GPUs.
SERVED_URLS = ("http://127.0.0.1:8000", "http://127.0.0.1:8001")


def serve_step(c: PipelineConfig) -> Step:
    from darling.classifier.serve import ServeConfig

    return Step(("serve-classifier",), ServeConfig(model=c.run / "classifier", replicas=2, gpus="6,7", port=8000))
