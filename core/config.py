"""One config system for every command (after TRL's config dataclasses and litgpt's preset files).

- A command's settings are one ``kw_only`` dataclass deriving from ``CommandConfig``; each field carries its
  help (``option(..., help=...)``), so the CLI (``darling.cli.options``) builds its flags from the fields: a
  flag's name is its field's name (``learning_rate`` -> ``--learning-rate``).
- Presets are data files in the package, one TOML file per preset whose keys are field names
  (``classifier/presets/cpu.toml``); a ``--config`` file (TOML, JSON or YAML) has the same keys. A preset may
  start from another (``base = "paper"``) and change only what it names (``paper-tiny``: sizes and models).
- One precedence everywhere: preset, then ``--config`` file, then flags and ``--set KEY=VALUE``. A table-valued
  field (a pipeline stage's section, rl-train's ``grpo``) merges key by key across those layers, and
  ``--set TABLE.KEY=VALUE`` sets one entry of it.
- Validation lives in one place per dataclass: ``validate()`` (choices declared on the fields, plus the
  class's own ``check()``), run when a config is made, so no path can skip it. Configs are frozen: what changes a
  setting makes a new object (``dataclasses.replace``), checked in turn, so nothing re-validates one it was given.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from importlib.resources import files
from pathlib import Path
from typing import Any, ClassVar, Self

from darling.core.errors import UserInputError
from darling.core.readers import read_structured

# Not part of a pipeline run's identity (``darling.pipeline.config``): where it runs and how fast, or a gate that stops
# the chain, not what it computes (a field's metadata; the identity leaves out every field that carries it, a chain
# field or a stage table's key).
NOT_IDENTITY = {"identity": False}


def option(
    default: Any = MISSING,
    *,
    help: str,
    factory: Any = MISSING,
    choices: tuple[str, ...] | None = None,
    aliases: tuple[str, ...] = (),
    flag: bool = True,
    panel: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Any:
    """A config field with its help; ``choices`` are validated; ``aliases`` are extra flag names (``--lr``; for a
    bool, click declarations such as ``" /--one-order"``, an extra off switch); ``flag=False`` keeps it out of the
    command line (then only ``--config`` / ``--set`` set it); ``panel``: the ``--help`` panel of a group of flags
    (e.g. the generation engine's), shown after the command's own settings; ``meta``: more metadata a command's
    own code reads (rl-train: the TRL field a setting becomes)."""
    metadata = {"help": help, "choices": choices, "aliases": tuple(aliases), "flag": flag, "panel": panel}
    metadata.update(meta or {})
    return field(default=default, default_factory=factory, metadata=metadata)


def option_from(source: type, name: str, **kwargs: Any) -> Any:
    """A config field whose default and help are another dataclass's field ``name`` (its ``metadata["help"]``), so a
    setting a command passes on to a library class is declared once, there; ``kwargs`` as ``option``'s."""
    declared = {f.name: f for f in fields(source)}[name]
    return option(declared.default, help=declared.metadata["help"], **kwargs)


@dataclass(kw_only=True, frozen=True)
class CommandConfig:
    """Base of every command's settings: presets, files and overrides in one order; validation on creation."""

    PRESET_PACKAGE: ClassVar[str | None] = None  # e.g. "darling.classifier": presets in its presets/ folder

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value is not None and value not in choices:
                raise UserInputError(f"{f.name} must be one of {', '.join(choices)}, got {value!r}")
        rules = getattr(type(self), "check", None)
        if callable(rules):  # a field named ``check`` (serve-classifier --check) hides the method: override validate
            rules(self)

    def check(self) -> None:
        """Rules that involve several fields; subclasses override (one with a field named ``check`` extends
        ``validate`` instead)."""

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), default=str))

    # -- presets, files, overrides ------------------------------------------------------------------------------
    @classmethod
    def preset_names(cls) -> list[str]:
        folder = cls._preset_folder()
        return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))

    @classmethod
    def _preset_folder(cls):
        if cls.PRESET_PACKAGE is None:
            raise UserInputError(f"{cls.__name__} has no presets")
        return files(cls.PRESET_PACKAGE) / "presets"

    @classmethod
    def preset_values(cls, name: str) -> dict[str, Any]:
        """The preset's values; one that names a ``base`` preset is that preset's values with its own on top."""
        if name not in cls.preset_names():
            raise UserInputError(f"unknown preset {name!r}; choose from {', '.join(cls.preset_names())}")
        import tomllib

        values = tomllib.loads((cls._preset_folder() / f"{name}.toml").read_text(encoding="utf-8"))
        base = values.pop("base", None)
        if base == name:
            raise UserInputError(f"preset {name!r} names itself as its base")
        return merge_tables(cls.preset_values(base), values) if base is not None else values

    @classmethod
    def build(
        cls,
        preset: str | None = None,
        config_file: str | Path | None = None,
        overrides: dict[str, Any] | None = None,
    ) -> Self:
        """Preset, then the config file, then ``overrides`` (flags and ``--set``), each value read as its field's
        type; an unknown key names where it came from."""
        layers: list[tuple[str, dict[str, Any]]] = []
        if preset is not None:
            layers.append((f"preset {preset}", cls.preset_values(preset)))
        if config_file is not None:
            data = read_structured(Path(config_file), "config")
            if not isinstance(data, dict):
                raise UserInputError(f"{config_file}: expected a table/object of option names")
            layers.append((str(config_file), data))
        layers.append(("option", overrides or {}))
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for origin, layer in layers:
            for name, value in layer.items():
                base, dot, key = name.partition(".")
                if base not in known:
                    raise UserInputError(f"{origin}: unknown option '{name}'")
                is_table = typing.get_origin(base_type(field_types(cls)[base])[0]) is dict
                if dot:  # one entry of a table: rl.floor=0.1 (a deeper key, rl.grpo.x=1, is the table's to read)
                    if not is_table:
                        raise UserInputError(f"{origin}: option '{base}' is not a table: use {base}=VALUE")
                    current = values.get(base, _default(cls, base))
                    values[base] = {**current, key: _json_or_text(value)}
                    continue
                value = coerce(cls, name, value, origin)
                values[name] = merge_tables(values.get(name, {}), value) if is_table and value is not None else value
        missing = [f.name for f in fields(cls) if _required(f) and f.name not in values]
        if missing:
            raise UserInputError(f"missing option(s): {', '.join('--' + m.replace('_', '-') for m in missing)}")
        return cls(**values)


def merge_tables(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``, nested tables merged key by key (a later layer refines a table, never drops it)."""
    merged = dict(base)
    for key, value in update.items():
        old = merged.get(key)
        merged[key] = merge_tables(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def _default(cls: type, name: str) -> Any:
    f = next(f for f in fields(cls) if f.name == name)
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _json_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _required(f: Field) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def base_type(annotation: Any) -> tuple[Any, bool]:
    """``int | None`` -> (int, True); ``list[str]`` -> (list[str], False)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), True
    return annotation, False


def coerce(cls: type, name: str, value: Any, origin: str = "option") -> Any:
    """A value from a file, a flag or ``--set`` (a string) as the field's type; a wrong type names its origin."""
    kind, optional = base_type(field_types(cls)[name])
    where = f"{origin}: option '{name}'"
    if value is None or (optional and isinstance(value, str) and value.lower() in ("none", "null")):
        if optional:
            return None
        raise UserInputError(f"{where}: cannot be empty")
    origin_type = typing.get_origin(kind)
    try:
        if kind is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes", "on")
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if kind is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(value)
        if kind is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if kind is str:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise ValueError(value)
            return str(value)
        if kind is Path:
            if not isinstance(value, str | Path):
                raise ValueError(value)
            return Path(value)
        if origin_type in (list, tuple):
            if isinstance(value, str):
                value = json.loads(value) if value.startswith("[") else [v for v in value.split(",") if v]
            if not isinstance(value, list | tuple):
                raise ValueError(value)
            item = (typing.get_args(kind) or (str,))[0]
            items = [Path(v) if item is Path else item(v) for v in value]
            return items if origin_type is list else tuple(items)
        if origin_type is dict or kind is dict:
            value = json.loads(value) if isinstance(value, str) else value
            if not isinstance(value, dict):
                raise ValueError(value)
            return value
    except (ValueError, TypeError, json.JSONDecodeError):
        raise UserInputError(f"{where}: cannot read {value!r} as {_type_name(kind, optional)}") from None
    return value


def _type_name(kind: Any, optional: bool) -> str:
    name = getattr(kind, "__name__", str(kind))
    return f"{name} or none" if optional else name


def parse_set_options(items: list[str] | None) -> dict[str, str]:
    """``["learning_rate=1e-4", "epochs=3"]`` -> dict; a malformed item is a user error."""
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UserInputError(f"--set expects KEY=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out
