"""The multi-seed figures a one-seed report points to, defined once.

A one-seed comparison's intervals cover prompts, not runs, so the report sets the seeds measured elsewhere beside it.
Each figure here is quoted word for word in ``docs/measurements.md`` under the heading it names (a test checks both), so
a new study changes this file and the doc together, and never only one of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Study:
    what: str  # the setting, seeds and machine, as a clause
    figure: str  # DARLING minus GRPO, distinct answers per prompt, with its pooled 95% interval
    prompts: str  # "held-out" or "training"
    heading: str  # its section in docs/measurements.md

    def sentence(self) -> str:
        return f'{self.what}: {self.figure} on the {self.prompts} prompts (docs/measurements.md, "{self.heading}")'


GPU_STUDY = Study(
    what="pooled over 6 seeds of 64 steps on one H100 (bench/darling_levers.py at 086ed3e)",
    figure="+1.06 [+0.58, +1.58]",
    prompts="held-out",
    heading="DARLING against GRPO on one GPU",
)

CPU_BUDGET = Study(
    what="at the cpu preset's budget, 3 seeds on 2 CPU cores, each seed's interval above 0 (bench/darling_levers.py)",
    figure="+0.40 [+0.15, +0.70]",
    prompts="training",
    heading="The main job's budget",
)

STUDIES = (CPU_BUDGET, GPU_STUDY)
