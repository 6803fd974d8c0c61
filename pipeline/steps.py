"""A ``darling`` command as a pipeline step: its settings are its stage's table (its preset, then the table's
entries) plus what the pipeline wires (the folders stages pass on, the seed, CPU threads), built as that command's
own config object; ``launcher`` is what starts it (``torchrun``, ``accelerate launch``). Each stage's room
(``pipeline/stages/``) builds its steps with these helpers, ``pipeline/script.py`` renders them into
``RUN/commands.sh`` and the runner runs that very text, so what ran is what the script says; ``tests/pipeline``
parses every rendered line with the real command line.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from darling.classifier.config import ClassifierTrainConfig
from darling.core.config import CommandConfig, coerce
from darling.pipeline.config import PipelineConfig
from darling.pipeline.schema import TABLES
from darling.pipeline.tables import INPUTS_PREFIX

INPUTS = "inputs"  # RUN/inputs/: the files the commands read that the pipeline writes (prompts, generators)
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass
class Step:
    """``[launcher] darling <words> ...``: a command, its settings (``config``) and its other parameters."""

    name: str  # within its stage: its log file's name (rl, rl-grpo, eval-novelty-train, ...)
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
        if key in TABLES[section].extra:  # the pipeline's keys (preset, generators, source), not the command's
            continue
        is_input = isinstance(value, str) and value.startswith(INPUTS_PREFIX)
        values[key] = input_path(c, value.removeprefix(INPUTS_PREFIX)) if is_input else value
    return values


C = TypeVar("C", bound=CommandConfig)


def stage_config(
    c: PipelineConfig,
    section: str,
    cls: type[C],
    wired: Mapping[str, Any] | None = None,
    *,
    defaults: dict[str, Any] | None = None,
    own: dict[str, Any] | None = None,
    table: bool = True,
    also_wired: tuple[str, ...] = (),
    generates: bool = True,
) -> C:
    """The one way a step's settings are made: the table's preset, ``defaults`` (the pipeline's choices a table may
    change), the table (``table=False``: not read), ``own`` (a run's settings from another table), then what the
    pipeline wires, each wired key declared by the table's ``Section`` (``also_wired``: keys a step replaces on
    purpose, said where it does: a policy chain's rollouts, refused in the table by the config's own check; the RL
    prompts of ``eval-novelty-train/``, where the table's held-out prompts give way). With ``--launcher ray`` a
    generating table's command generates on the cluster's vLLM replicas (``--engine ray --ray-address auto``, over
    the table's engine; ``generates=False``: a step of that table that generates nothing, as CHAMP's import)."""
    wired = wired or {}
    TABLES[section].check_wired(section, wired, also_wired)
    preset = getattr(c, section).get("preset") if table else None
    on_ray = {"engine": "ray", "ray_address": "auto"} if c.launcher == "ray" and generates else {}
    on_ray = on_ray if TABLES[section].generates else {}
    values = {**(defaults or {}), **(table_values(c, section) if table else {}), **on_ray, **(own or {}), **wired}
    return cls.build(preset, overrides=values)


def named_in(c: PipelineConfig, *sections: str) -> tuple[str, ...]:
    """The settings the tables name (``trl.x`` names ``trl``): a preset's explicit choices, shown on the line."""
    return tuple(dict.fromkeys(k.split(".", 1)[0] for s in sections for k in table_values(c, s)))


def shown(c: PipelineConfig, wired: dict[str, Any], *sections: str) -> tuple[str, ...]:
    """What a line always says, even where it equals the command's default: what the pipeline wires, and what the
    stage's tables name. So two presets that set the same keys have lines with the same options."""
    return tuple(dict.fromkeys([*wired, *named_in(c, *sections)]))


def threads(c: PipelineConfig, cls: type[CommandConfig], alone: bool = False) -> dict[str, Any]:
    """The chain's CPU threads as the command's ``threads`` field (train-classifier reads 0 as torch's default);
    ``alone``: a one-process command alone in its block gets the cores ``jobs`` commands would share."""
    count = block_threads(c) if alone else c.threads
    return {"threads": count or 0} if cls is ClassifierTrainConfig else {"threads": count}


def block_threads(c: PipelineConfig) -> int | None:
    """The threads of a command alone in its block: the cores ``jobs`` side-by-side commands would share."""
    return c.threads * c.jobs if c.threads else None
