"""EQ-Bench creative writing v3 (github.com/EQ-bench/creative-writing-bench, read at commit e7ab009): reading the
user's checkout, and the benchmark's rubric rules, reproduced as its code does them.

Its repository carries no licence, so nothing of it ships here: the user points ``--bench-dir`` at their own
checkout and these functions read its files (tests write their own files in the same format).

- Prompts (``data/creative_writing_prompts_v3.json``): an object ``{id: {"writing_prompt", "seed_modifiers",
  ...}}``; a prompt without seed modifiers is skipped (``core/benchmark.py``, ``run_eq_bench_creative``).
  Iteration ``i`` (1-based) writes ``writing_prompt.replace("<SEED>", seed_modifiers[(i - 1) % len])``, sent as
  the only (user) message (``core/conversation.py``, ``generate_creative_piece``; ``utils/api.py``, ``generate``).
- Criteria and negative criteria: one per line, stripped, blank lines skipped (``run_eq_bench_creative``).
- The judge prompt is the template filled by ``str.format`` with ``writing_prompt`` = the prompt *before* its
  seed modifier is put in (``<SEED>`` still there: ``CreativeWritingTask.judge`` passes ``self.base_prompt``),
  ``test_model_response``, ``creative_writing_criteria`` = ``"- " + c`` per line, ``lower_is_better_criteria``
  = the negative criteria joined by ``", "``.
- Answers of writer and judge lose everything up to ``</think>`` (or ``</reasoning>``) when both tags are there
  (``utils/api.py``, ``generate``); the piece is stored stripped of surrounding white space.
- Parsing (``core/scoring.py``, ``parse_judge_scores_creative``): every ``name: number`` (optionally ``name:
  Score number``) and every ``name: [number]`` anywhere in the answer, the name being the text before the colon
  on its line, stripped; a later match of a name replaces an earlier one (the bracket pattern's after the plain
  one's); a value over 20 is dropped. Every parsed name counts, listed criterion or not, exactly as named.
- Scoring (``core/scoring.py``, ``invert_if_negative`` and ``compute_creative_scores``): a name in the negative
  list (exact match) scores ``20 - x``; values still over 20 after that are dropped; a piece's score is the mean
  of its values (0-20); the overall score is the mean over scored pieces; ``eqbench_creative_score`` is it x 5
  (``compute_single_benchmark_score_creative``, 0-100). A piece without any parsed score is not scored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.readers import one_line, read_structured, read_text

SEED = "<SEED>"
SCORE_MAX = 20.0
# core/scoring.py, parse_judge_scores_creative: "Metric: Score" (or "Metric: Score 12") and "Metric: [12]".
SCORE_PATTERNS = (
    re.compile(r"(.*?):\s*(?:Score\s+)?(-?\d+(?:\.\d+)?)"),
    re.compile(r"(.*?):\s*\[(-?\d+(?:\.\d+)?)\]"),
)
TEMPLATE_FIELDS = ("writing_prompt", "test_model_response", "creative_writing_criteria", "lower_is_better_criteria")
REASONING_TAGS = (("<think>", "</think>"), ("<reasoning>", "</reasoning>"))


@dataclass(frozen=True)
class BenchPrompt:
    prompt_id: str
    writing_prompt: str  # with its <SEED> placeholder
    seed_modifiers: tuple[str, ...]
    category: str | None = None

    def seed_modifier(self, iteration: int) -> str:
        """The modifier of 1-based ``iteration``: they rotate (``seed_mods[(i - 1) % len(seed_mods)]``)."""
        return self.seed_modifiers[(iteration - 1) % len(self.seed_modifiers)]

    def text(self, iteration: int) -> str:
        """What the writer is asked, for 1-based ``iteration``."""
        return self.writing_prompt.replace(SEED, self.seed_modifier(iteration))


@dataclass(frozen=True)
class Bench:
    prompts: tuple[BenchPrompt, ...]
    criteria: tuple[str, ...]
    negative_criteria: tuple[str, ...]
    judge_template: str
    skipped: tuple[str, ...] = ()  # prompt ids without seed modifiers (the benchmark skips them too)
    files: Mapping[str, Any] = field(default_factory=dict)  # field -> {"path", "sha256"}: what was read

    def judge_prompt(self, prompt: BenchPrompt, piece: str) -> str:
        return fill_template(self.judge_template, prompt.writing_prompt, piece, self.criteria, self.negative_criteria)


def fill_template(
    template: str, writing_prompt: str, piece: str, criteria: tuple[str, ...], negative: tuple[str, ...]
) -> str:
    return template.format(
        writing_prompt=writing_prompt,
        test_model_response=piece,
        creative_writing_criteria="\n".join("- " + c for c in criteria),
        lower_is_better_criteria=", ".join(negative),
    )


# -- reading the checkout ------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_lines(path: Path, what: str) -> tuple[str, ...]:
    """Stripped non-blank lines of a text file; none at all is an error."""
    lines = tuple(line.strip() for line in read_text(path, what).splitlines() if line.strip())
    if not lines:
        raise UserInputError(f"{path}: no {what.removesuffix(' file')} in it (one a line)")
    return lines


def read_prompts(path: Path, limit: int | None = None) -> tuple[list[BenchPrompt], list[str]]:
    """The prompts (the first ``limit`` in file order) and the ids skipped for having no seed modifiers."""
    data = read_structured(path, "prompts file")
    if not isinstance(data, dict) or not data:
        raise UserInputError(f"{path}: expected a JSON object {{id: {{writing_prompt, seed_modifiers}}}}")
    prompts, skipped = [], []
    for key, record in data.items():
        where = f"{path}: prompt {key!r}"
        if not isinstance(record, dict):
            raise UserInputError(f"{where}: expected an object, got {type(record).__name__}")
        text = record.get("writing_prompt")
        if not isinstance(text, str) or not text.strip():
            problem = "missing field 'writing_prompt'" if text is None else "field 'writing_prompt' must be a string"
            raise UserInputError(f"{where}: {problem}" + ("" if text is None else " with text"))
        mods = record.get("seed_modifiers", [])
        if not isinstance(mods, list) or not all(isinstance(m, str) for m in mods):
            raise UserInputError(f"{where}: field 'seed_modifiers' must be a list of strings")
        category = record.get("category")
        if category is not None and not isinstance(category, str):
            raise UserInputError(f"{where}: field 'category' must be a string, got {type(category).__name__}")
        if not mods:
            skipped.append(str(key))
            continue
        prompts.append(BenchPrompt(str(key), text, tuple(mods), category))
        if limit is not None and len(prompts) >= limit:
            break
    if not prompts:
        raise UserInputError(f"{path}: no prompt has seed modifiers")
    return prompts, skipped


def check_template(path: Path, template: str) -> None:
    """The template must fill with the benchmark's four fields and show the judge the piece."""
    if "{test_model_response}" not in template:
        raise UserInputError(f"{path}: the judge prompt has no {{test_model_response}}: the judge would not see it")
    try:
        fill_template(template, "p", "r", ("c",), ("n",))
    except (KeyError, IndexError, ValueError) as exc:
        reason = f"unknown field {{{exc.args[0]}}}" if isinstance(exc, KeyError) else one_line(exc)
        raise UserInputError(
            f"{path}: not a template for str.format ({reason}); its fields are {', '.join(TEMPLATE_FIELDS)} "
            "and a literal brace is written {{ or }}"
        ) from None


def load_bench(config: Any) -> Bench:
    """Every file of the checkout ``config`` names (``CreativeConfig``), checked before anything runs."""
    root = Path(config.bench_dir)
    if not root.is_dir():
        raise UserInputError(f"--bench-dir {root}: no such folder (your checkout of creative-writing-bench)")
    paths = {f: config.bench_path(f) for f in ("prompts_file", "criteria_file", "negative_criteria_file")}
    paths["judge_prompt_file"] = config.bench_path("judge_prompt_file")
    prompts, skipped = read_prompts(paths["prompts_file"], config.limit)
    criteria = read_lines(paths["criteria_file"], "criteria file")
    negative = read_lines(paths["negative_criteria_file"], "negative criteria file")
    template = read_text(paths["judge_prompt_file"], "judge prompt file")
    check_template(paths["judge_prompt_file"], template)
    files = {f: {"path": str(p.resolve()), "sha256": _sha256(p)} for f, p in paths.items()}
    return Bench(tuple(prompts), criteria, negative, template, tuple(skipped), files)


# -- the rubric ----------------------------------------------------------------------------------------------
def strip_reasoning(text: str) -> str:
    """Everything up to the closing tag goes when both tags of a reasoning block are there (utils/api.py)."""
    for start, end in REASONING_TAGS:
        if start in text and end in text:
            text = text[text.find(end) + len(end) :]
    return text


def parse_judge_scores(answer: str) -> dict[str, float]:
    """Every ``name: score`` of a judge's answer, as ``parse_judge_scores_creative`` finds them (values > 20
    dropped; a later match of a name wins)."""
    scores: dict[str, float] = {}
    for pattern in SCORE_PATTERNS:
        for name, value in pattern.findall(answer):
            score = float(value)
            if score <= SCORE_MAX:
                scores[name.strip()] = score
    return scores


def oriented(metric: str, score: float, negative: tuple[str, ...] | list[str]) -> float:
    """Higher is better: a negative criterion (exact name) scores ``20 - x`` (``invert_if_negative``)."""
    return SCORE_MAX - score if metric in negative else score


def piece_score(scores: Mapping[str, float], negative: tuple[str, ...] | list[str]) -> float | None:
    """Mean of the oriented values that stay <= 20 (0-20 scale); None when none does (the piece is unscored)."""
    values = [v for v in (oriented(m, s, negative) for m, s in scores.items()) if v <= SCORE_MAX]
    return sum(values) / len(values) if values else None
