"""The command line built from the config dataclasses: every field of a command's config is a flag named after
it (``--learning-rate``), with the field's help; ``--config`` and ``--set`` come with every command, ``--preset``
with every command that has presets, in the one precedence of ``darling.core.config``.

A command is ``config_command(ConfigClass, run, params=...)``: ``params`` are the options that are not settings
(inputs, the output folder, ``--resume``), declared once here or next to the command; ``run(config, **params)``
calls the Python API and prints a summary. So a command's code is its help text and a few lines that call.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from darling.cli.common import user_errors
from darling.core.config import CommandConfig, base_type, field_types, parse_set_options

SETTINGS_PANEL = "Settings (unset: the --preset's value; also --config FILE, --set KEY=VALUE)"
PLAIN_SETTINGS_PANEL = "Settings (also --config FILE, --set KEY=VALUE)"  # a command without presets


def flag_name(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def param(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _cli_type(kind: Any) -> Any:
    """The type typer parses a flag as: lists stay repeatable lists (of numbers: read as text, so that ``--seeds
    1,2,3`` works as ``--seeds 1 --seeds 2 --seeds 3``; ``numbers_joined`` hands them to the config), everything
    else as itself."""
    if typing.get_origin(kind) in (list, tuple):
        item = (typing.get_args(kind) or (str,))[0]
        return list[str] if item in (int, float) else list[item]  # type: ignore[valid-type]
    return kind


def numbers_joined(cls: type[CommandConfig], name: str, value: Any) -> Any:
    """A repeatable number flag's texts as one comma list, which the config reads as its field's type."""
    kind = base_type(field_types(cls)[name])[0]
    numbers = typing.get_origin(kind) in (list, tuple) and (typing.get_args(kind) or (str,))[0] in (int, float)
    return ",".join(map(str, value)) if numbers and isinstance(value, list | tuple) else value


def field_params(cls: type[CommandConfig], exclude: Sequence[str] = ()) -> list[inspect.Parameter]:
    """One keyword parameter per flag field of ``cls``; unset flags are None (they override nothing)."""
    types_ = field_types(cls)
    with_presets = cls.PRESET_PACKAGE is not None
    panel = SETTINGS_PANEL if with_presets else PLAIN_SETTINGS_PANEL
    out, grouped = [], []
    for f in fields(cls):
        if f.name in exclude or not f.metadata.get("flag", True):
            continue
        kind, _ = base_type(types_[f.name])
        names = [flag_name(f.name), *f.metadata.get("aliases", ())]
        if kind is bool:  # a bool's aliases are click declarations: " /--one-order" is one more off switch
            names = [f"{flag_name(f.name)}/--no-{f.name.replace('_', '-')}", *f.metadata.get("aliases", ())]
        help_text = f.metadata.get("help", "")
        choices = f.metadata.get("choices")
        if choices:
            help_text += f" [{' | '.join(choices)}]"
        required = f.default is MISSING and f.default_factory is MISSING
        # With presets no default is shown: a setting's value comes from the preset (or --config) unless the flag
        # is given. Without presets a field's plain default is its flag's (and shown); other unset flags are None.
        default = None if with_presets or f.default is MISSING else f.default
        own_panel = f.metadata.get("panel") or panel
        option = typer.Option(*names, help=help_text, rich_help_panel=own_panel, show_default=not with_presets)
        cli_type = _cli_type(kind) if required else _cli_type(kind) | None
        annotation = Annotated[cli_type, option]  # type: ignore[valid-type]  # a run-time annotation for typer
        out.append(param(f.name, annotation, inspect.Parameter.empty if required else default))
        grouped.append(own_panel != panel)
    # A group with its own panel (the generation engine's flags, inherited first) comes after the command's own.
    return [p for _, p in sorted(zip(grouped, out, strict=True), key=lambda item: item[0])]


def preset_params(cls: type[CommandConfig], default: str | None) -> list[inspect.Parameter]:
    """``--preset`` (commands with presets), ``--config`` and ``--set`` (every command)."""
    own = []
    if cls.PRESET_PACKAGE is not None:
        names = ", ".join(cls.preset_names())
        own.append(
            param(
                "preset",
                Annotated[
                    str | None,
                    typer.Option(help=f"Preset: {names}. A setting not given keeps the preset's value."),
                ],
                default,
            )
        )
    return [
        *own,
        param(
            "config", Annotated[Path | None, typer.Option(help="TOML/JSON/YAML file of settings (field names).")], None
        ),
        param("set_", Annotated[list[str] | None, typer.Option("--set", help="Any setting: --set KEY=VALUE.")], None),
    ]


def config_command(
    cls: type[CommandConfig],
    run: Callable[..., Any],
    params: Sequence[inspect.Parameter] = (),
    *,
    doc: str,
    preset: str | None = None,
    exclude: Sequence[str] = (),
    fixed: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Callable[..., None]:
    """A typer command: ``params``, then every settings flag of ``cls``; builds the config (preset < --config <
    --set < flags) and calls ``run(config, **params)``. ``fixed`` may add settings derived from ``params``."""
    setting_names = [p.name for p in field_params(cls, exclude)]
    own = [p.name for p in params]

    def parse(kwargs: dict[str, Any]) -> tuple[CommandConfig, dict[str, Any]]:
        """The parsed command line -> (config, the non-setting params): what ``run`` is called with."""
        kwargs = dict(kwargs)
        overrides = parse_set_options(kwargs.pop("set_", None))
        # Unset: None, or an empty tuple for a repeatable flag never given (click's own value, before typer's).
        given = {n: kwargs[n] for n in setting_names if kwargs.get(n) not in (None, (), [])}
        overrides.update({n: numbers_joined(cls, n, v) for n, v in given.items()})
        if fixed is not None:
            overrides.update(fixed(kwargs))
        config = cls.build(kwargs.pop("preset", None), kwargs.pop("config", None), overrides)
        return config, {n: kwargs[n] for n in own}

    @user_errors
    def command(**kwargs: Any) -> None:
        config, params = parse(kwargs)
        run(config, **params)

    signature = [*params, *preset_params(cls, preset), *field_params(cls, exclude)]
    command.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in signature}
    command.__doc__ = doc
    command.__name__ = getattr(run, "__name__", "command")
    command.parse = parse  # type: ignore[attr-defined]  # pipeline tests: a rendered command line -> its config
    return command


def parse_argv(app: typer.Typer, argv: Sequence[str]) -> tuple[CommandConfig, dict[str, Any]]:
    """What a ``darling`` command line would run, without running it: (config, params) of the command that
    ``argv`` (without the leading ``darling``) names, parsed by the real command line."""
    import typer.main

    group = typer.main.get_command(app)
    info: Any = app
    words = list(argv)
    ctx_parent = None
    while True:
        name = words.pop(0)
        sub = next((g.typer_instance for g in info.registered_groups if g.name == name), None)
        if sub is not None:
            info = sub
            group = group.commands[name]  # type: ignore[attr-defined]
            continue
        callback = next(c.callback for c in info.registered_commands if c.name == name)
        click_command = group.commands[name]  # type: ignore[attr-defined]
        ctx = click_command.make_context(name, words, parent=ctx_parent)
        return callback.parse(ctx.params)
