"""The multi-seed figures a one-seed report points to, defined once, as data (``measured/figures.toml``).

"Study" has one meaning in darling: DARLING minus GRPO pooled over seeds (``pipeline --seeds``, ``eval study``, the
``RUN/study*`` folders). This module holds figures such studies measured, quoted by reports, not run by them.

A one-seed comparison's intervals cover prompts, not runs, so the report sets the seeds measured elsewhere beside it.
Each figure there is quoted word for word in ``docs/measurements.md`` under the heading it names (a test checks both),
so a new study changes that file and the doc together, and never only one of them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MeasuredFigure:
    what: str  # the setting, seeds and machine, as a clause
    figure: str  # DARLING minus GRPO, distinct answers per prompt, with its pooled 95% interval
    prompts: str  # "held-out" or "training"
    heading: str  # its section in docs/measurements.md

    def sentence(self) -> str:
        return f'{self.what}: {self.figure} on the {self.prompts} prompts (docs/measurements.md, "{self.heading}")'


MEASURED = Path(__file__).parent / "measured" / "figures.toml"  # the figures, as data: [[figure]] tables


def load_figures(path: Path = MEASURED) -> tuple[MeasuredFigure, ...]:
    with path.open("rb") as fh:
        return tuple(MeasuredFigure(**table) for table in tomllib.load(fh)["figure"])


MEASURED_FIGURES = load_figures()
