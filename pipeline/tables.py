"""The shape of a stage table of ``darling pipeline`` (``Section``: the command config its keys are fields of, the
keys the pipeline wires itself, the pipeline's own keys, what the table configures), the check of a table's entries,
and the check of what a step wires. The tables themselves are ``StageTables``' fields in ``pipeline/schema.py``, each
with its ``Section`` (``darling.pipeline.schema.TABLES``), which ``PipelineConfig`` derives from; a stage's room
names the tables it reads (``Stage.tables``). Imports run one way: this module <- schema <- the config <- the
rooms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from darling.core.config import CommandConfig, coerce
from darling.core.errors import UserInputError
from darling.datagen.config import generator_spec
from darling.pipeline.resources import INPUT_FILES

INPUTS_PREFIX = "inputs:"
SECTION = "section"  # a table field's metadata key: its Section


@dataclass(frozen=True)
class Section:
    """One stage's table: the config class its keys are fields of, and the fields the pipeline sets itself."""

    config: type[CommandConfig]
    wired: tuple[str, ...]
    extra: tuple[str, ...] = ()  # keys that are the pipeline's, not the config's (``preset``, ``generators``)
    command: str = ""  # what the table configures, as `darling pipeline --help` names it
    generates: bool = False  # its command generates with an engine: on Ray with --launcher ray

    def check_wired(self, table: str, wired: Mapping[str, Any], also: tuple[str, ...] = ()) -> None:
        """What a room wires into a step built from ``[table]`` must be declared here (or, ``also``, refused by the
        config where it is wired): a key wired but not declared would be a table value silently replaced."""
        undeclared = sorted(set(wired) - set(self.wired) - set(self.extra) - set(also))
        if undeclared:
            raise ValueError(f"[{table}]: wired {undeclared}, not declared in its Section (pipeline/schema.py)")


def checked_table(name: str, section: Section, values: dict[str, Any]) -> dict[str, Any]:
    """A stage's table with every value read as its field's type; an unknown key, a key the pipeline sets, an
    unknown stage preset or an unknown ``inputs:`` file is one line naming the table and the key."""

    known = {f.name for f in fields(section.config)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        where = f"[{name}] {key}"
        base = key.split(".", 1)[0]
        if base in section.wired:
            raise UserInputError(f"{where}: set by the pipeline (it wires the stages together); leave it out")
        if key == "preset" and "preset" in section.extra:
            if value not in section.config.preset_names():
                raise UserInputError(
                    f"{where}: unknown preset {value!r}; choose {', '.join(section.config.preset_names())}"
                )
            out[key] = value
        elif key == "generators" and "generators" in section.extra:
            if not isinstance(value, list) or not value:
                raise UserInputError(f"{where}: expected a list of tables with name and model")
            for i, entry in enumerate(value):
                generator_spec(entry, f"{where}[{i}]")  # checked here; written to RUN/inputs/generators.json
            out[key] = value
        elif key in section.extra:  # the pipeline's own key of this table (import_classifier's source)
            out[key] = value
        elif base not in known:
            raise UserInputError(f"{where}: unknown option (not a field of {section.config.__name__})")
        elif isinstance(value, str) and value.startswith(INPUTS_PREFIX):
            if value.removeprefix(INPUTS_PREFIX) not in INPUT_FILES:
                raise UserInputError(f"{where}: unknown pipeline input {value!r}; choose {', '.join(INPUT_FILES)}")
            out[key] = value
        else:
            out[key] = value if "." in key else coerce(section.config, key, value, f"[{name}]")
    return out
