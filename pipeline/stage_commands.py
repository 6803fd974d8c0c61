"""Each pipeline stage as the ``darling`` commands it runs: a command's settings are its stage's table (its preset,
then the table's entries) plus what the pipeline wires (the folders stages pass on, the seed, CPU threads), built
as that command's own config object; ``launcher`` is what starts it (``torchrun``, ``accelerate launch``).
``pipeline/commands_sh.py`` renders these into ``RUN/commands.sh`` and the runner runs that very text, so what ran is
what the script says; ``tests/pipeline`` parses every rendered line with the real command line.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from darling.classifier.config import ClassifierTrainConfig, ServeConfig, TrainingPairsConfig
from darling.classifier.import_classifier import ImportConfig
from darling.core.config import CommandConfig, coerce
from darling.core.errors import UserInputError
from darling.datagen.config import JudgeConfig, PairConfig, RolloutConfig
from darling.evals.config import EVAL_QUALITY, CompareConfig, MathEvalConfig, NoveltyConfig
from darling.evals.creative_config import CreativeConfig
from darling.pipeline.config import INPUTS_PREFIX, SECTIONS, PipelineConfig
from darling.rl.config import RewardServeConfig, RLTrainConfig

BASE, DARLING, GRPO = "base", "darling-rl", "grpo-rl"  # eval-math/<name>/, eval-novelty/<name>/
# eval math names the model this in every folder: per-request seeds derive from the name, so all policies draw the
# same seeds and their comparison is paired (identical weights would give identical samples).
EVAL_NAME = "policy"
INPUTS = "inputs"
SERVERS_FILE = "classifier-servers.json"  # serve-classifier's ready file, in rl/
# eval novelty's and eval compare's folders: on the held-out prompts, and on the prompts the RL runs trained on
NOVELTY, NOVELTY_TRAIN, COMPARE, COMPARE_TRAIN = "eval-novelty", "eval-novelty-train", "compare", "compare-train"
REWARD_SERVERS_FILE = "reward-servers.json"  # serve-reward-model's ready file, in rl/ and eval-novelty/
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass
class Step:
    """``[launcher] darling <words> ...``: a command, its settings (``config``) and its other parameters."""

    name: str  # within its stage: its log file's name (rl, rl-grpo, eval-math-base, ...)
    words: tuple[str, ...]
    config: Any  # the command's settings: its own config dataclass (RLTrainConfig, ...)
    params: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None  # for commands with presets: the one the rendered line names
    shell_params: dict[str, str] = field(default_factory=dict)  # rendered as shell text (a conditional flag)
    launcher: list[str] = field(default_factory=list)  # words before `darling` (env, torchrun, accelerate launch)
    explicit: tuple[str, ...] = ()  # settings the stage's table names: on the line even where they equal the default
    positional: tuple[str, ...] = ()  # arguments after the command words (import-classifier SOURCE)
    done_if: str | None = None  # a file whose presence means the command already finished: it is then skipped

    def guarded(self, run: Path) -> str:
        """``line``, skipped when ``done_if`` exists: rerunning a block never redoes a finished run."""
        return (f'[ -f "{self.done_if}" ] || ' if self.done_if else "") + self.line(run)

    def argv(self, run: Path) -> list[str]:
        """The command line after ``darling``, paths under ``run`` written as ``$RUN/...``."""
        words = [*self.words, *(run_relative(p, run) for p in self.positional)]
        if self.preset is not None:
            words += ["--preset", self.preset]
        for name, value in self.params.items():
            words += _flag(name.rstrip("_"), value, run)
        for name, value in setting_changes(self.config, self.preset, self.explicit).items():
            f = next(f for f in fields(self.config) if f.name == name)
            if not f.metadata.get("flag", True) or value is None or isinstance(value, dict):
                words += ["--set", f"{name}={_set_value(value, run)}"]
            else:
                words += _flag(name, value, run)
        return words

    def line(self, run: Path) -> str:
        """The shell line: ``VAR=value`` assignments, the launcher, ``-m darling`` (or ``darling`` alone)."""
        launch = [w if ENV_ASSIGNMENT.match(w) else shell_word(run_relative(w, run)) for w in self.launcher]
        program = any(not ENV_ASSIGNMENT.match(w) for w in self.launcher)  # torchrun, accelerate: they run a module
        head = [*launch, "-m", "darling"] if program else [*launch, "darling"]
        return " ".join([*head, *(shell_word(w) for w in self.argv(run)), *self.shell_params.values()])


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


def setting_changes(config: CommandConfig, preset: str | None, explicit: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields whose value differs from the baseline, and those named in ``explicit``: what the line says."""
    base = baseline(type(config), preset)
    ordered = sorted(fields(config), key=lambda f: bool(f.metadata.get("panel")))  # engine flags after the command's
    return {
        f.name: getattr(config, f.name)
        for f in ordered
        if getattr(config, f.name) != base[f.name] or f.name in explicit
    }


def run_relative(value: Any, run: Path) -> str:
    """``value`` as text, a path under ``run`` written as ``$RUN/...`` (how commands.sh names run files), also the
    path of a ``NAME=PATH`` value."""
    text = str(value)
    root = str(run)
    name, sep, path = text.partition("=")
    if sep and "/" not in name and (path == root or path.startswith(root + "/")):
        return f"{name}=$RUN{path[len(root) :]}"
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
    if value is None:
        return "none"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return run_relative(value, run)


def shell_word(word: str) -> str:
    """A word naming ``$RUN`` in double quotes so the shell expands it; everything else shell-quoted."""
    return f'"{word}"' if "$RUN" in word and '"' not in word and "`" not in word else shlex.quote(word)


# -- from a stage's table to a command's config ------------------------------------------------------------------
def input_path(c: PipelineConfig, name: str) -> Path:
    return c.run / INPUTS / name


def table_values(c: PipelineConfig, section: str) -> dict[str, Any]:
    """A stage's table as command settings: ``inputs:NAME`` as its path in RUN/inputs, the pipeline's keys out."""
    values = {}
    for key, value in getattr(c, section).items():
        if key in SECTIONS[section].extra:  # the pipeline's keys (preset, generators, source), not the command's
            continue
        is_input = isinstance(value, str) and value.startswith(INPUTS_PREFIX)
        values[key] = input_path(c, value.removeprefix(INPUTS_PREFIX)) if is_input else value
    return values


C = TypeVar("C", bound=CommandConfig)


def stage_config(c: PipelineConfig, section: str, cls: type[C], **wired: Any) -> C:
    """The command's config: its preset (the table's ``preset``), the table, then what the pipeline wires."""
    preset = getattr(c, section).get("preset")
    return cls.build(preset, overrides={**table_values(c, section), **wired})


def named_in(c: PipelineConfig, *sections: str) -> tuple[str, ...]:
    """The settings the tables name (``grpo.x`` names ``grpo``): a preset's explicit choices, shown on the line."""
    return tuple(dict.fromkeys(k.split(".", 1)[0] for s in sections for k in table_values(c, s)))


def shown(c: PipelineConfig, wired: dict[str, Any], *sections: str) -> tuple[str, ...]:
    """What a line always says, even where it equals the command's default: what the pipeline wires, and what the
    stage's tables name. So two presets that set the same keys have lines with the same options."""
    return tuple(dict.fromkeys([*wired, *named_in(c, *sections)]))


def threads(c: PipelineConfig, cls: type[CommandConfig]) -> dict[str, Any]:
    """The chain's CPU threads as the command's ``threads`` field (train-classifier reads 0 as torch's default)."""
    if cls is ClassifierTrainConfig:
        return {"threads": c.threads or 0}
    return {"threads": c.threads}


# -- the stages --------------------------------------------------------------------------------------------------
def datagen_step(c: PipelineConfig) -> Step:
    wired: dict[str, Any] = {"output": c.run / "datagen", "seed": c.seed}
    if c.rollouts_from == "champ":
        config = stage_config(c, "datagen", RolloutConfig, **wired)
        return Step(
            "datagen", ("datagen", "rollouts"), config, {"import_": "champ"}, explicit=shown(c, wired, "datagen")
        )
    generators = input_path(c, "generators.json") if c.datagen.get("generators") else None
    wired.update(generators=generators, **threads(c, RolloutConfig))
    config = stage_config(c, "datagen", RolloutConfig, **wired)
    return Step("datagen", ("datagen", "rollouts"), config, explicit=shown(c, wired, "datagen"))


def pairs_step(c: PipelineConfig) -> Step:
    wired = {"rollouts": c.run / "datagen", "output": c.run / "pairs", "seed": c.seed, "workers": c.threads or 0}
    config = stage_config(c, "pairs", PairConfig, **wired)
    return Step("pairs", ("datagen", "pairs"), config, explicit=shown(c, wired, "pairs"))


def labels_step(c: PipelineConfig) -> Step:
    wired = {"pairs": c.run / "pairs", "output": c.run / "labels", "seed": c.seed, **threads(c, JudgeConfig)}
    config = stage_config(c, "labels", JudgeConfig, **wired)
    return Step("labels", ("datagen", "label"), config, explicit=shown(c, wired, "labels"))


def training_pairs_step(c: PipelineConfig) -> Step:
    wired: dict[str, Any] = {"output": c.run / "training-pairs", "seed": c.seed}
    if c.rollouts_from != "none":  # the chat track has no judge labels: human pairs only
        wired["labels"] = c.run / "labels"
    config = stage_config(c, "training_pairs", TrainingPairsConfig, **wired)
    return Step("training-pairs", ("datagen", "training-pairs"), config, explicit=shown(c, wired, "training_pairs"))


def process_count(devices: str) -> int:
    """Processes a Lightning ``devices`` setting asks for (``"8"`` -> 8; ``auto`` and lists: 1, Lightning's own)."""
    return int(devices) if devices.isdigit() else 1


def classifier_step(c: PipelineConfig) -> Step:
    preset = c.classifier.get("preset")
    wired = {"seed": c.seed, **threads(c, ClassifierTrainConfig)}
    if c.launcher == "slurm" and c.nodes > 1:  # torchrun once per node (pipeline/launch_slurm.py): Lightning must know
        wired["num_nodes"] = c.nodes
    config = stage_config(c, "classifier", ClassifierTrainConfig, **wired)
    params = {"data": str(c.run / "training-pairs" / "pairs.jsonl"), "output": c.run / "classifier"}
    shell = {"resume": '$( [ -f "$RUN/classifier/training/checkpoints/last.ckpt" ] && echo --resume )'}
    processes = process_count(config.devices)
    launcher = ["torchrun", "--standalone", "--nproc-per-node", str(processes)] if processes > 1 else []
    explicit = shown(c, wired, "classifier")
    return Step("classifier", ("train-classifier",), config, params, preset, shell, launcher, explicit)


def serve_step(c: PipelineConfig) -> Step:
    wired = {"model": c.run / "classifier", "ready_file": c.run / "rl" / SERVERS_FILE}
    config = ServeConfig.build(overrides={**table_values(c, "serve"), **wired})
    return Step("serve-classifier", ("serve-classifier",), config, explicit=shown(c, wired, "serve"))


def classifier_urls(c: PipelineConfig) -> list[str]:
    serve = serve_step(c).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


def reward_serve_step(c: PipelineConfig, folder: str = "rl") -> Step:
    """``serve-reward-model`` replicas of ``[rl] reward_model`` for the stage writing to ``folder`` (its log is
    ``serve-reward-model.log`` in rl, ``serve-reward-model-<folder>.log`` in another stage)."""
    wired = {"model": c.rl_reward_model(), "ready_file": c.run / folder / REWARD_SERVERS_FILE}
    config = RewardServeConfig.build(overrides={**table_values(c, "serve_reward"), **wired})
    name = "serve-reward-model" + ("" if folder == "rl" else f"-{folder}")
    return Step(name, ("serve-reward-model",), config, explicit=shown(c, wired, "serve_reward"))


def reward_urls(c: PipelineConfig) -> list[str]:
    serve = reward_serve_step(c).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


def rl_resume(folder: str) -> str:
    """rl-train refuses --resume without a checkpoint (and a fresh run over one): resume what an interrupted run
    left, if anything."""
    return f'$( ls -d "$RUN"/{folder}/checkpoint-* >/dev/null 2>&1 && echo --resume )'


WARMUP = "rl-warmup"  # the GRPO warm-up both RL runs branch from (with an [rl_warmup] table)


def warmup_step(c: PipelineConfig) -> Step | None:
    """The GRPO warm-up (``rl-warmup/``): ``[rl]`` plus ``[rl_warmup]``, quality only, alone on the stage's cores;
    None without an ``[rl_warmup]`` table. Both RL runs then start from its policy, so that DARLING's term meets
    groups with repeated answers from its first step (a base policy's long answers rarely repeat)."""
    if not c.rl_warmup:
        return None
    threads = c.threads * c.jobs if c.threads else None  # alone in the block: the cores the runs would share
    return _rl_run(c, WARMUP, diversity=False, own=table_values(c, "rl_warmup"), threads=threads)


def rl_step(c: PipelineConfig, grpo: bool = False) -> Step:
    """DARLING (``rl/``), or with ``grpo`` its GRPO baseline (``rl-grpo/``): the same settings and seeds, quality
    only, plus what ``[rl_grpo]`` changes; the classifier then only measures distinct per group for the logs. With a
    warm-up, both start from its policy."""
    own = table_values(c, "rl_grpo") if grpo else {}
    start = {"policy": str(c.run / WARMUP / "final")} if c.rl_warmup else {}
    return _rl_run(c, "rl-grpo" if grpo else "rl", diversity=not grpo, own={**own, **start}, threads=c.threads)


def _rl_run(c: PipelineConfig, folder: str, diversity: bool, own: dict[str, Any], threads: int | None) -> Step:
    preset = c.rl.get("preset")
    wired: dict[str, Any] = {
        "output": c.run / folder,
        "classifier": c.run / "classifier",
        "seed": c.seed,
        "diversity": diversity,
        "prune_checkpoints": not c.keep_checkpoints,
        "threads": threads,
    }
    if c.serve_classifier:
        wired["classifier_urls"] = classifier_urls(c)
    if c.serve_reward_model:
        wired["reward_model_urls"] = reward_urls(c)
    if c.rl_engine == "verl":
        wired.update(engine="verl", verl_gpus=c.rl_processes, verl_nodes=c.nodes)
    config = RLTrainConfig.build(preset, overrides={**table_values(c, "rl"), **own, **wired})
    if c.rl_accelerate == "multi-cpu" and not config.use_cpu:
        raise UserInputError("rl_accelerate = multi-cpu launches CPU processes: set [rl] use_cpu = true, or multi-gpu")
    launcher: list[str] = []
    if c.rl_engine == "verl":  # verl starts its own Ray workers on the GPUs it sees
        launcher = [f"CUDA_VISIBLE_DEVICES={c.rl_gpus}"] if c.rl_gpus is not None else []
    elif c.rl_accelerate:
        env = [f"CUDA_VISIBLE_DEVICES={c.rl_gpus}"] if c.rl_gpus is not None else []
        accelerate = ["accelerate", "launch", "--config_file", str(input_path(c, "accelerate.yaml"))]
        launcher = [*env, *accelerate, "--num_processes", str(c.rl_processes)]
    tables = ["rl", *(["rl_grpo"] if folder == "rl-grpo" else []), *(["rl_warmup"] if folder == WARMUP else [])]
    explicit = shown(c, wired, *tables)
    done = run_relative(c.run / folder / "log_history.json", c.run)  # written once its final policy is saved
    return Step(
        folder, ("rl-train",), config, {}, preset, {"resume": rl_resume(folder)}, launcher, explicit, done_if=done
    )


def eval_models(c: PipelineConfig) -> dict[str, str]:
    """Before RL, after DARLING and (with grpo_baseline) after GRPO: name -> model (hub name, alias or path)."""
    models = {BASE: rl_step(c).config.policy, DARLING: str(c.run / "rl" / "final")}
    if c.grpo_baseline:
        models[GRPO] = str(c.run / "rl-grpo" / "final")
    return models


def eval_math_steps(c: PipelineConfig) -> list[Step]:
    steps = []
    for name in eval_models(c):
        wired = {
            "output": c.run / "eval-math" / name,
            "generators": input_path(c, f"eval-math-{name}.json"),
            "seed": c.seed,
            **threads(c, MathEvalConfig),
        }
        config = stage_config(c, "eval_math", MathEvalConfig, **wired)
        steps.append(Step(f"eval-math-{name}", ("eval", "math"), config, explicit=shown(c, wired, "eval_math")))
    return steps


def training_prompts(c: PipelineConfig) -> dict[str, Any]:
    """The prompts the RL runs trained on, as eval novelty's ``prompts`` and ``limit``."""
    rl = rl_step(c).config
    return {"prompts": str(rl.problems), "limit": rl.limit}


def eval_novelty_steps(c: PipelineConfig) -> list[Step]:
    """Each policy on the held-out prompts ([eval_novelty]) and, with ``evaluate_training_prompts``, on the RL
    prompts (``eval-novelty-train/``) with the same sampling."""
    sets = {NOVELTY: {}, **({NOVELTY_TRAIN: training_prompts(c)} if c.evaluate_training_prompts else {})}
    return [step for folder, prompts in sets.items() for step in _novelty_steps(c, folder, prompts)]


def _novelty_steps(c: PipelineConfig, folder: str, prompts: dict[str, Any]) -> list[Step]:
    steps = []
    for name, model in eval_models(c).items():  # novelty seeds do not depend on the model: paired too
        wired = {
            "output": c.run / folder / name,
            **prompts,
            "model": model,
            "classifier": str(c.run / "classifier"),
            "seed": c.seed,
            **threads(c, NoveltyConfig),
            **({"reward_model_urls": reward_urls(c)} if c.serve_reward_model else {}),
        }
        config = stage_config(c, "eval_novelty", NoveltyConfig, **wired)
        explicit = shown(c, wired, "eval_novelty")
        steps.append(Step(f"{folder}-{name}", ("eval", "novelty"), config, explicit=explicit))
    return steps


def compare_steps(c: PipelineConfig) -> list[Step]:
    """``compare/`` (held-out prompts, with math) and, with ``evaluate_training_prompts``, ``compare-train/``."""
    return [compare_step(c), *([compare_step(c, train=True)] if c.evaluate_training_prompts else [])]


def compare_step(c: PipelineConfig, train: bool = False) -> Step:
    """DARLING against GRPO (with grpo_baseline) and the base policy, from the evaluations' generations and the
    training logs; ``train``: on the RL prompts' evaluations (no math). Its quality is the RL runs' own where that
    is an open-ended one (naming prompts), else eval novelty's."""
    rl = rl_step(c).config
    names = [DARLING, *([GRPO] if c.grpo_baseline else []), BASE]
    runs = {DARLING: "rl", GRPO: "rl-grpo"}
    quality = rl.quality if rl.quality != "math" and not rl.reward_model else EVAL_QUALITY
    folder, novelty = (COMPARE_TRAIN, NOVELTY_TRAIN) if train else (COMPARE, NOVELTY)
    wired = {
        "output": c.run / folder,
        "novelty": [f"{n}={c.run / novelty / n}" for n in names],
        "math": [f"{n}={c.run / 'eval-math' / n}" for n in names] if c.evaluate_math and not train else [],
        "training": [f"{n}={c.run / runs[n]}" for n in names if n in runs],
        "pairs": [f"{a}:{b}" for i, a in enumerate(names) for b in names[i + 1 :]],
        "seed": c.seed,
    }
    defaults = {"quality": quality, "max_words": rl.max_words, "strict_length": rl.strict_length}
    config = CompareConfig.build(overrides={**defaults, **table_values(c, "compare"), **wired})
    return Step(folder, ("eval", "compare"), config, explicit=shown(c, wired, "compare"))


def import_step(c: PipelineConfig) -> Step:
    """``import-classifier SOURCE``: a classifier trained elsewhere (a released one) as the chain's export."""
    config = ImportConfig.build(overrides=table_values(c, "import_classifier"))
    params = {"output": c.run / "classifier"}
    source = str(c.import_classifier["source"])
    explicit = named_in(c, "import_classifier")
    return Step("import-classifier", ("import-classifier",), config, params, explicit=explicit, positional=(source,))


def eval_creative_step(c: PipelineConfig) -> Step:
    """Every policy of ``eval_models`` written and judged in one ``eval creative`` (its report compares them)."""
    models = eval_models(c)
    wired: dict[str, Any] = {
        "output": c.run / "eval-creative",
        "model": [f"{name}={model}" for name, model in models.items()],
        "seed": c.seed,
        "versus": f"{DARLING}:{GRPO if c.grpo_baseline else BASE}",
        **threads(c, CreativeConfig),
    }
    config = stage_config(c, "eval_creative", CreativeConfig, **wired)
    return Step("eval-creative", ("eval", "creative"), config, explicit=shown(c, wired, "eval_creative"))
