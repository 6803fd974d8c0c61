"""A stage's record and a run's plan.

A ``Stage`` holds everything the pipeline does per stage: its name (its folder under RUN, its block in
``commands.sh``, its record in ``stages.json``, its table in a preset with ``-`` as ``_``), whether a config runs
it, how its block of commands is built, what its summary reads, how its section of ``report.md`` renders it, the
input files it writes and where a cluster launcher places it. Each stage is defined in its own room,
``pipeline/stages/<stage>.py``, with its steps, block, summary and section; ``pipeline/stages/__init__.py`` lists them
in order.

A ``Plan`` is one run's steps, each built once: the blocks of ``commands.sh``, the summaries, the report, the SLURM
and Ray launchers and the checks all read their commands' settings from it, never rebuilding a config. A step builder
marked ``@memoised`` is kept by the plan under the builder and its arguments.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from darling.pipeline.config import PipelineConfig

if TYPE_CHECKING:
    from darling.pipeline.script import Block

Records = dict[str, dict[str, Any]]
# Where a cluster launcher runs a stage: on CPU only (math-verify, tables), on one node's devices, or on every node
# (the training stages: torchrun / accelerate across nodes).
Placement = Literal["cpu", "node", "nodes"]
T = TypeVar("T")
P = ParamSpec("P")


class Plan:
    """One run's steps, each built the first time something asks for it and kept: a command's config is made (and
    so checked) once per run, however many blocks, summaries and checks read it.

    A ``--seeds`` study with ``shared_stages`` makes two kinds of plan beside the whole chain's: the shared run's
    (``only``: the stages it runs, the chain's first ones) and each seed's (``shared``: the folder where those stages
    ran once for every seed; the seed's chain reads their output there and runs the rest)."""

    def __init__(self, config: PipelineConfig, only: tuple[str, ...] | None = None, shared: Path | None = None):
        self.config = config
        self.only = only
        self.shared = shared
        self._built: dict[tuple[Any, ...], Any] = {}

    def is_shared(self, stage: str) -> bool:
        """The stage ran once for every seed, in ``shared`` (a seed's chain does not run it)."""
        return self.shared is not None and stage in self.config.shared_stages

    @property
    def run(self) -> Path:
        return self.config.run

    def _once(self, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        if key not in self._built:
            self._built[key] = build()
        return self._built[key]


def memoised(build: Callable[Concatenate[Plan, P], T]) -> Callable[Concatenate[Plan, P], T]:
    """A step builder whose result the plan keeps: built once per plan and arguments, keyed by the builder itself and
    its arguments as bound (``rl_step(plan)`` and ``rl_step(plan, grpo=False)`` are one step), never by a name picked
    by hand, so every room, summary and launcher that asks gets the same step."""
    signature = inspect.signature(build)

    @functools.wraps(build)
    def built(plan: Plan, *args: P.args, **kwargs: P.kwargs) -> T:
        bound = signature.bind(plan, *args, **kwargs)
        bound.apply_defaults()
        key = (build, *list(bound.arguments.values())[1:])
        return plan._once(key, lambda: build(plan, *args, **kwargs))

    return built


def _always(plan: Plan) -> bool:
    return True


def _no_note(records: Records) -> list[str]:
    return []


def _no_inputs(plan: Plan) -> dict[Path, str]:
    return {}


def _no_check(plan: Plan) -> None:
    return None


def _no_problems(plan: Plan) -> list[str]:
    return []


def _no_design_notes(plan: Plan) -> list[str]:
    return []


def _no_files_read(plan: Plan, records: Records) -> list[dict[str, Any]]:
    return []


@dataclass(frozen=True)
class Stage:
    name: str
    title: str  # of its report section, numbered there within the chain that runs
    block: Callable[[Plan], Block]
    summary: Callable[[Plan], dict[str, Any]]
    report: Callable[[dict[str, Any]], list[str]]  # its report section's lines, from its summary
    links: tuple[tuple[str, str], ...] = ()  # (text, path under RUN) shown under the section's title
    placement: Placement = "node"
    runs: Callable[[Plan], bool] = _always
    note: Callable[[Records], list[str]] = _no_note  # a line citing another stage's figures, after the section
    inputs: Callable[[Plan], dict[Path, str]] = _no_inputs  # files under RUN/inputs its commands read
    problems: Callable[[Plan], list[str]] = _no_problems  # the problem sets its commands read, for the manifest
    # what its tables need of one another (and of the chain's fields), in one line (UserInputError) before any runs
    check: Callable[[Plan], None] = _no_check
    # a few lines from its summary for the report's opening section (what the run shows); none: it has none
    lead: Callable[[dict[str, Any]], list[str]] = lambda summary: []
    # the tables its commands read (``darling.pipeline.schema.TABLES``: each declared there, once), its own first
    tables: tuple[str, ...] = ()
    # what it does by design that a reader could mistake for a rescue, said (``note:``) before the chain starts
    design_notes: Callable[[Plan], list[str]] = _no_design_notes
    # files its commands read from outside RUN (a package's dataset file), for the manifest: {"role", "path", ...}
    files_read: Callable[[Plan, Records], list[dict[str, Any]]] = _no_files_read

    @property
    def table(self) -> str:
        """Its table in a preset and in ``--set TABLE.KEY=VALUE``."""
        return self.name.replace("-", "_")

    def folder(self, run: Path) -> Path:
        """Its folder under RUN."""
        return run / self.name

    def render(self, summary: dict[str, Any], records: Records) -> list[str]:
        return [*self.report(summary), *self.note(records)]


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def prompts_link(prompts: str) -> str:
    """A prompt set as the report names it: a link to its copy in RUN/inputs, else its name."""
    path = Path(prompts)
    return f"[`{path.name}`](inputs/{path.name})" if path.parent.name == "inputs" else f"`{prompts}`"
