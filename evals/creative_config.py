"""Settings of ``darling eval creative`` (EQ-Bench creative writing v3's rubric scoring): one ``kw_only`` dataclass
whose fields carry their help, so the command line is built from them (``darling.cli.options``).

Kept light (no polars, no torch): the command line imports this module to build its flags. The defaults are the
benchmark's own (github.com/EQ-bench/creative-writing-bench at e7ab009): its file names under ``data/``, writer
temperature 0.7 and 4000 tokens (``core/conversation.py``, ``generate_creative_piece``), a piece shorter than 500
characters retried up to 3 times, judge at temperature 0 with 1000 tokens (``judge``), one iteration
(``creative_writing_bench.py``; the leaderboard runs 3), 500 bootstrap resamples (``core/scoring.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from darling.core.config import option
from darling.core.engine_api import ENGINE_NAMES
from darling.core.engine_config import ENGINE_PANEL, EngineConfig, sampling_option
from darling.core.errors import UserInputError
from darling.datagen.config import GeneratorSpec, parse_model

BENCH_FILES = {  # field -> the benchmark's own path of that file, relative to its checkout
    "prompts_file": "data/creative_writing_prompts_v3.json",
    "criteria_file": "data/creative_writing_criteria.txt",
    "negative_criteria_file": "data/negative_criteria.txt",
    "judge_prompt_file": "data/creative_writing_judging_prompt.txt",
}


@dataclass(kw_only=True, frozen=True)
class CreativeConfig(EngineConfig):
    """Settings of ``darling eval creative``: the benchmark's files, the writers, the judge (and the engines)."""

    output: Path = option(aliases=("-o",), help="Writes pieces/, judgments/, metrics.json, report.md, creative.png.")
    bench_dir: Path = option(
        help="Your checkout of github.com/EQ-bench/creative-writing-bench (not shipped here: it has no licence)."
    )
    prompts_file: str = option(BENCH_FILES["prompts_file"], help="Prompts JSON, relative to --bench-dir.")
    criteria_file: str = option(BENCH_FILES["criteria_file"], help="Criteria, one a line, relative to --bench-dir.")
    negative_criteria_file: str = option(
        BENCH_FILES["negative_criteria_file"], help="Lower-is-better criteria, one a line, relative to --bench-dir."
    )
    judge_prompt_file: str = option(
        BENCH_FILES["judge_prompt_file"], help="Judge prompt template, relative to --bench-dir."
    )
    model: list[str] = option(
        factory=list,
        aliases=("-m",),
        help="Writer: NAME=PATH or PATH (repeatable); smollm2 = packaged. With --no-generate: all found.",
    )
    judge_model: str | None = option(None, help="Judge model: server model name, HF path, or smollm2.")
    judge_engine: str | None = option(
        None, choices=ENGINE_NAMES, help="The judge's engine; default --engine.", panel=ENGINE_PANEL
    )
    judge_base_url: str | None = option(
        None, help="The judge's server URL (--judge-engine openai); default --base-url.", panel=ENGINE_PANEL
    )
    iterations: int = option(1, help="Pieces per prompt and writer; iteration i uses seed modifier i (rotating).")
    limit: int | None = option(None, help="Use the first N prompts of the prompts file.")
    temperature: float = sampling_option(
        "temperature", 0.7, "the writers': the benchmark's 0.7; its min_p 0.1 is not sent"
    )
    max_tokens: int = sampling_option("max_tokens", 4000, "the writers': the benchmark's 4000")
    min_chars: int = option(500, help="A shorter piece is retried (3 attempts), then left out unjudged.")
    judge_max_tokens: int = option(1000, help="Judge max new tokens (the benchmark's 1000; temperature is 0).")
    seed: int = sampling_option("seed", 0, "the id: the prompt's; also the bootstrap's seed")
    versus: str = option(
        "darling:grpo", help="A:B: the criteria on which writer A beats writer B most often (when both ran)."
    )
    bootstrap: int = option(500, help="Bootstrap resamples of prompts for the score's 95% interval.")
    generate: bool = option(True, help="--no-generate: report from the stored pieces and judgments only.")
    shard_size: int = sampling_option("shard_size", 16, "pieces or judgments")

    def check(self) -> None:
        if self.iterations < 1 or self.max_tokens < 1 or self.judge_max_tokens < 1 or self.temperature < 0:
            raise UserInputError(
                "need --iterations >= 1, --max-tokens >= 1, --judge-max-tokens >= 1, --temperature >= 0"
            )
        if self.limit is not None and self.limit < 1:
            raise UserInputError(f"--limit must be at least 1, got {self.limit}")
        if self.min_chars < 0 or self.bootstrap < 1 or self.shard_size < 1:
            raise UserInputError("need --min-chars >= 0, --bootstrap >= 1 and --shard-size >= 1")
        self.versus_pair()
        if self.generate:
            if not self.model:
                raise UserInputError("no writers: give --model NAME=PATH (repeatable), or --no-generate")
            if not self.judge_model:
                raise UserInputError("give --judge-model (or --no-generate to report on stored judgments)")
            names = [s.name for s in self.writer_specs()]
            if len(set(names)) != len(names):
                raise UserInputError(f"--model: two writers share a name ({', '.join(names)})")

    def versus_pair(self) -> tuple[str, str]:
        a, sep, b = self.versus.partition(":")
        if not sep or not a.strip() or not b.strip() or a.strip() == b.strip():
            raise UserInputError(f"--versus {self.versus!r}: expected A:B, two different writer names")
        return a.strip(), b.strip()

    def writer_specs(self) -> list[GeneratorSpec]:
        """One per ``--model`` (NAME=PATH or PATH); no system turn: the benchmark sends the prompt alone."""
        return [parse_model(m, system_prompt=None) for m in self.model]

    def judge_settings(self) -> EngineConfig:
        """The engine settings of the judge: these, with ``--judge-engine`` / ``--judge-base-url`` where given."""
        shared = {f.name: getattr(self, f.name) for f in fields(EngineConfig)}
        return EngineConfig(
            **shared | {"engine": self.judge_engine or self.engine, "base_url": self.judge_base_url or self.base_url}
        )

    def bench_path(self, field: str) -> Path:
        """A benchmark file: relative to ``--bench-dir`` (an absolute path stays as given)."""
        return Path(self.bench_dir) / getattr(self, field)
