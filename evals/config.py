"""Settings of the evaluation commands (``darling eval math | novelty | classifier | compare | study``): one
``kw_only`` dataclass each whose fields carry their help, so the command line is built from them
(``darling.cli.options``). The
generating ones derive from ``EngineConfig`` (the engine's flags, defined once in ``darling.core.engine_config``).
Also the names the settings choose between (partitions, utilities) and NoveltyBench's cut points.

Kept light (no polars, numpy or torch): the command line imports this module to build its flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from darling.core.config import CommandConfig, option
from darling.core.devices import device_option
from darling.core.engine_config import EngineConfig, sampling_option
from darling.core.errors import UserInputError
from darling.core.quality import QUALITIES
from darling.datagen.config import (
    PAIRED_SEEDS_HELP,
    GeneratorSpec,
    check_sampling,
    load_generator_config,
    parse_model,
    system_prompt,
)
from darling.evals.vendi import DEFAULT_ORDER

NOVELTYBENCH = "noveltybench"
UNION_FIND = "union-find"
PARTITIONS = {
    NOVELTYBENCH: "NoveltyBench's greedy partition (src/partition.py): in generation order, each response is "
    "compared with the first member of each earlier class and joins the first one where P(equivalent) > threshold; "
    "when neither response has more than 5 words, shared lower-cased words x 2 >= the longer one's word count "
    "decides instead of the classifier; not transitive",
    UNION_FIND: "DARLING's training partition (union-find): every pair decided at P(equivalent) >= threshold, "
    "classes are the transitive closure; no short-response rule",
}
# NoveltyBench's reward-model score -> 1..10 cut points (Skywork-Reward-Gemma-2-27B-v0.2), src/score.py.
NOVELTYBENCH_CUT_POINTS = (-7.71875, -6.28125, -6.0, -5.71875, -5.5, -5.0, -4.375, -3.4375, -2.046875)
DEFAULT_PATIENCE = 0.8
DARLING_FORK = "darling-fork"
UTILITIES = {
    NOVELTYBENCH: "NoveltyBench's utility (src/score.py): credited qualities averaged with weights patience^i "
    "over positions i = 0..k-1",
    DARLING_FORK: "DARLING's evaluation fork (evals/novelty-bench/src/score.py): credited qualities summed and "
    "divided by k, no patience weighting",
}


# -- eval math -------------------------------------------------------------------------------------------
@dataclass(kw_only=True, frozen=True)
class MathEvalConfig(EngineConfig):
    """Settings of ``darling eval math``: problems, models, sampling, the k reported (and the engine)."""

    output: Path = option(aliases=("-o",), help="Writes generations/, metrics.json, report.md, passk.png.")
    problems: list[str] = option(
        factory=list,
        help="Problems: a file (.jsonl/.parquet), HF dataset, or a built-in set by name: aime24, aime25, amc23, "
        "hmmt, minerva_math, olympiadbench, gsm8k, arithmetic, champ (repeatable). With --no-generate: all found.",
    )
    model: list[str] = option(
        factory=list,
        aliases=("-m",),
        help="Model/checkpoint: PATH or NAME=PATH (repeatable); smollm2 = packaged. With --no-generate: all found.",
    )
    generators: Path | None = option(None, help="TOML/JSON/YAML listing models with their own prompts and sampling.")
    specs: list[GeneratorSpec] = option(
        factory=list, flag=False, help="Models given in Python (GeneratorSpec), before --generators and --model."
    )
    system_prompt: str | None = option(None, help="System prompt ('' for none; default: a math tutor's).")
    n: int = option(8, aliases=("-n",), help="Samples per problem (pass@k for k up to n).")
    temperature: float = sampling_option("temperature", 0.6)
    top_p: float = sampling_option("top_p", 0.95)
    max_tokens: int = sampling_option("max_tokens", 4096)
    seed: int = sampling_option("seed", 0)
    paired_seeds: bool = option(False, help=PAIRED_SEEDS_HELP)
    limit: int | None = option(None, help="Use the first N problems of each file.")
    ks: list[int] | None = option(
        None, aliases=("--k",), help="k to report (repeatable); default 1, 2, 4, ... n; 1 and n always."
    )
    generate: bool = option(True, help="--no-generate: recompute the report from the Parquet already there.")
    shard_size: int = sampling_option("shard_size", 64, "responses")

    def check(self) -> None:
        check_sampling(self.n, self.temperature, self.top_p, self.max_tokens)
        if self.ks is not None and (not self.ks or min(self.ks) < 1):
            raise UserInputError(f"--k must be positive integers, got {self.ks}")
        if self.generate:
            if not self.problems:
                raise UserInputError("give --problems (repeatable), or --no-generate to report on existing generations")
            if not (self.specs or self.generators or self.model):
                raise UserInputError("no models: give --model (repeatable) or --generators FILE")

    def generator_specs(self) -> list[GeneratorSpec]:
        """``specs``, then the ``generators`` file's entries, then one per ``model`` (NAME=PATH or PATH)."""
        specs = [*self.specs, *(load_generator_config(self.generators) if self.generators else [])]
        return specs + [parse_model(m, system_prompt(self.system_prompt)) for m in self.model]


# -- eval novelty ----------------------------------------------------------------------------------------
@dataclass(kw_only=True, frozen=True)
class NoveltyConfig(EngineConfig):
    """Settings of ``darling eval novelty``: generation (and the engine), the partition, quality and utility."""

    output: Path = option(aliases=("-o",), help="Folder for generations, scores and the report.")
    classifier: str = option(
        help="Exported darling classifier, or a 2-label HF pair classifier (then give --threshold)."
    )
    prompts: str | None = option(
        None,
        help="Prompts: JSONL/Parquet (field prompt; id, category if present), a dataset, or a packaged set: "
        "noveltybench-curated (NoveltyBench's 100), naming-heldout, items-heldout or world-heldout (answers "
        "whose item a checker reads: adds distinct items).",
    )
    model: list[str] = option(
        factory=list,
        aliases=("-m",),
        help="Generator: PATH, or NAME=PATH to write OUTPUT/NAME/ (repeatable: several models in one process, the "
        "prompts, classifier and reward model loaded once, the same seeds for each); smollm2 = packaged.",
    )
    k: int = option(10, aliases=("-k",), help="Responses per prompt.")
    temperature: float = sampling_option("temperature", 1.0)
    max_tokens: int = sampling_option("max_tokens", 512)
    limit: int | None = option(None, help="Use the first N prompts (a larger limit later extends the output).")
    seed: int = sampling_option("seed", 0, "the id: the prompt's and the sample's index")
    classifier_urls: list[str] = option(
        factory=list,
        aliases=("--classifier-url",),
        help="Served replica of --classifier (repeatable), e.g. http://127.0.0.1:8000.",
    )
    threshold: float | None = option(None, help="Equivalence threshold; default: the export's calibrated one.")
    partition: str = option(
        NOVELTYBENCH,
        choices=tuple(PARTITIONS),
        help="noveltybench: NoveltyBench's greedy partition (each response vs each class's first member, "
        "P > threshold, its <=5-word rule); union-find: DARLING's training partition (P >= threshold, transitive).",
    )
    utility: str = option(
        NOVELTYBENCH,
        choices=tuple(UTILITIES),
        help="noveltybench: credited qualities weighted patience^i (NoveltyBench's leaderboard); "
        "darling-fork: their sum / k (DARLING's evaluation fork, no patience).",
    )
    reward_model: str | None = option(
        None, help="One-output HF reward model for quality; none: quality = 1 (diversity only)."
    )
    reward_model_urls: list[str] = option(
        factory=list,
        aliases=("--reward-model-url",),
        help="vLLM replica serving --reward-model (`darling serve-reward-model`; repeatable), e.g. "
        "http://127.0.0.1:8200; --reward-model still gives its tokenizer and chat template (inputs are sent as token "
        "ids). Default: in-process.",
    )
    cut_points: str | None = option(
        None, help="Comma-separated reward cut points -> quality 1..n+1; default NoveltyBench's."
    )
    patience: float = option(
        DEFAULT_PATIENCE, help="Utility discount per position (NoveltyBench: 0.8); unused by darling-fork."
    )
    noveltybench: Path | None = option(
        None,
        help="A NoveltyBench eval folder: partition and score its generations.jsonl (nothing is generated; no "
        "--prompts or --model) and write its partitions.jsonl, scores.jsonl and summary.json to OUTPUT as well.",
    )
    vendi_order: float = option(
        DEFAULT_ORDER,
        help="Order q of the Vendi score beside distinct (1: Shannon's, its authors' default; 0.5, 2 or inf: other "
        "orders); its kernel is the classifier's own similarity.",
    )
    generate: bool = option(True, help="--no-generate: rescore the stored generations only.")
    shard_size: int = sampling_option("shard_size", 64, "responses")
    batch_size: int = option(32, help="Pairs per classifier forward pass.")

    @property
    def quality_cut_points(self) -> tuple[float, ...]:
        """``cut_points`` read as numbers; NoveltyBench's when unset."""
        return parse_cut_points(self.cut_points) if self.cut_points else NOVELTYBENCH_CUT_POINTS

    def named_models(self) -> list[tuple[str | None, str]]:
        """(NAME, PATH) per ``--model``: NAME is None for a bare PATH."""
        specs = [(text, parse_model(text, None)) for text in self.model]
        return [(spec.name, spec.model) if spec.model else (None, text) for text, spec in specs]

    def model_folders(self) -> list[tuple[str, Path]]:
        """(model, the folder its evaluation writes) per ``--model``: NAME=PATH writes OUTPUT/NAME/, a bare PATH (the
        only model) OUTPUT itself."""
        return [(path, Path(self.output) / name if name else Path(self.output)) for name, path in self.named_models()]

    def identity(self, model: str | None) -> dict[str, Any]:
        """What defines one model's generations: a rerun with a different identity would mix two experiments."""
        # A local file is named by its absolute path: the same file reached from another cwd is the same run.
        local = self.prompts is not None and Path(self.prompts).exists()
        prompts = str(Path(str(self.prompts)).resolve()) if local else str(self.prompts)
        return {
            "prompts": prompts,
            "model": model,
            "engine": self.engine,
            "k": self.k,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def check(self) -> None:
        if self.k < 1 or self.max_tokens < 1 or self.temperature < 0:
            raise UserInputError("need --k >= 1, --max-tokens >= 1 and --temperature >= 0")
        if not 0 <= self.patience <= 1:
            raise UserInputError(f"--patience must be in [0, 1], got {self.patience}")
        if not self.vendi_order >= 0:  # NaN fails too
            raise UserInputError(f"--vendi-order must be >= 0 (or inf), got {self.vendi_order}")
        if self.cut_points:
            parse_cut_points(self.cut_points)  # checked here, before anything runs
        if self.noveltybench is not None and (self.prompts or self.model):
            raise UserInputError("--noveltybench reads its folder's generations: leave out --prompts and --model")
        if self.generate and self.noveltybench is None and (not self.prompts or not self.model):
            raise UserInputError("give --prompts and --model (or --no-generate to score stored generations)")
        if isinstance(self.model, str):  # the Python API: a bare string would be read letter by letter
            raise UserInputError(f"model must be a list of PATH or NAME=PATH, got the string {self.model!r}")
        names = [name for name, _ in self.named_models()]
        if len(names) > 1 and None in names:
            raise UserInputError("several --model: name each as NAME=PATH (its evaluation goes to OUTPUT/NAME/)")
        twice = sorted({n for n in names if n is not None and names.count(n) > 1})
        if twice:
            raise UserInputError(f"--model: the name {twice[0]!r} is given twice (each names its own folder)")
        if not self.classifier:
            raise UserInputError("give --classifier DIR (a darling export or a HF pair classifier)")
        if self.reward_model_urls and not self.reward_model:
            raise UserInputError("--reward-model-url needs --reward-model (its tokenizer and chat template)")


def check_cut_points(cut_points: Sequence[float]) -> None:
    if not cut_points or any(b <= a for a, b in zip(cut_points, cut_points[1:], strict=False)):
        raise UserInputError(f"cut points must be a non-empty, strictly increasing list, got {list(cut_points)}")


def parse_cut_points(text: str) -> tuple[float, ...]:
    """``"-7.7,-6.3,..."`` -> floats (the CLI's ``--cut-points``)."""
    try:
        points = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UserInputError(f"--cut-points: expected comma-separated numbers, got {text!r}") from None
    check_cut_points(points)
    return points


# -- eval classifier -------------------------------------------------------------------------------------
@dataclass(kw_only=True, frozen=True)
class ClassifierEvalConfig(CommandConfig):
    """Settings of ``darling eval classifier``: what is scored, on which pairs, at which threshold."""

    data: str = option(
        help="Labelled pairs to evaluate on: a file, a dataset, or a packaged check by name (noveltybench-heldout: "
        "NoveltyBench's 100 held-out human pairs; minimal-pairs: meaning over wording)."
    )
    output: Path = option(aliases=("-o",), help="Writes metrics.json, roc.png, reliability.png.")
    model: Path | None = option(None, help="An exported classifier directory (either kind).")
    threshold: float | None = option(None, help="Decision threshold of --model; default: the exported one.")
    symmetric: bool | None = option(
        None, aliases=(" /--one-order",), help="Average both orders (--one-order: not); default: as exported."
    )
    batch_size: int = option(32, help="Pairs per forward pass.")
    threads: int | None = option(None, help="torch CPU threads.")
    device: str = device_option()
    compare: Path | None = option(None, help="A second export scored on the same pairs (at its own threshold).")
    zero_shot: str | None = option(
        None, help="An untrained embedding backbone scored too (packaged:all-MiniLM-L6-v2, a path, a hub name)."
    )
    fit_data: str | None = option(
        None, help="Labelled pairs to fit --zero-shot's a, b and threshold and the baselines' thresholds on."
    )
    baselines: bool = option(
        True, help="Score token Jaccard and ROUGE-1 F beside the classifiers (--no-baselines: not)."
    )
    baseline_objective: str = option(
        "balanced_accuracy",
        choices=("accuracy", "balanced_accuracy", "f1"),
        help="What a baseline's threshold maximises on --fit-data (balanced: it carries across equivalent shares).",
    )

    def check(self) -> None:
        if self.model is None and self.zero_shot is None:
            raise UserInputError("give --model (an export) or --zero-shot (a backbone), or both")
        if self.zero_shot is not None and self.fit_data is None:
            raise UserInputError("--zero-shot needs --fit-data: labelled pairs to fit a, b and the threshold on")


EVAL_QUALITY = "eval"  # the quality eval novelty scored (a reward model's bucket, or 1 without one)
DEFAULT_PAIR = "darling-rl - grpo-rl"  # the pipeline's DARLING minus its GRPO baseline


@dataclass(kw_only=True, frozen=True)
class CompareConfig(CommandConfig):
    """Settings of ``darling eval compare``."""

    output: Path = option(aliases=("-o",), help="Writes compare.json, report.md and curves.png.")
    novelty: list[str] = option(
        factory=list, help="NAME=DIR: a policy's `eval novelty` output (repeatable; all on the same prompts)."
    )
    math: list[str] = option(factory=list, help="NAME=DIR: the same policy's `eval math` output (repeatable).")
    training: list[str] = option(factory=list, help="NAME=DIR: its `rl-train` output, for training curves.")
    pairs: list[str] = option(
        factory=list,
        help="A:B: report A minus B (repeatable); default every pair, in the order the policies are named.",
    )
    quality: str = option(
        EVAL_QUALITY,
        help="Quality per response: eval (what eval novelty scored), short-answer, relevant-short-answer, "
        "item-sentence, item-phrase or world (recomputed from the texts, as darling.core.quality defines them).",
    )
    max_words: int = option(4, help="The longest answer that counts as short (and short-answer's full score).")
    strict_length: bool = option(
        False, help="The open-ended quality scores an answer over --max-words words 0 (as rl-train --strict-length)."
    )
    ks: list[int] = option(factory=lambda: [1], aliases=("--k",), help="pass@k differences for these k (repeatable).")
    seed: int = option(0, help="Seed of the bootstrap.")
    device: str = device_option(
        "Where --quality relevant-short-answer's encoder runs: auto (GPU when present), cpu, cuda:N."
    )

    def check(self) -> None:

        if not (self.novelty or self.math):
            raise UserInputError("give --novelty NAME=DIR and/or --math NAME=DIR for at least two policies")
        allowed = (EVAL_QUALITY, *[q for q in QUALITIES if q != "math"])
        if self.quality not in allowed:
            raise UserInputError(f"--quality must be one of {', '.join(allowed)}, got {self.quality!r}")
        for flag in ("novelty", "math", "training"):
            named(getattr(self, flag), f"--{flag}", must_exist=False)
        names = self.policy_names()
        if len(names) < 2:
            raise UserInputError(f"need at least two policies to compare, got {names}")
        for a, b in self.difference_pairs():
            if a not in names or b not in names:
                raise UserInputError(f"--pairs {a}:{b}: both must be named by --novelty or --math ({names})")

    def policy_names(self) -> list[str]:
        both = [*named(self.novelty, "--novelty", must_exist=False), *named(self.math, "--math", must_exist=False)]
        return list(dict.fromkeys(both))

    def difference_pairs(self) -> list[tuple[str, str]]:
        """``--pairs A:B`` as (A, B); by default every pair, in the order the policies are named."""
        if not self.pairs:
            names = self.policy_names()
            return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        out = []
        for item in self.pairs:
            a, sep, b = item.partition(":")
            if not sep or not a.strip() or not b.strip():
                raise UserInputError(f"--pairs expects A:B, got {item!r}")
            out.append((a.strip(), b.strip()))
        return out


def named(items: list[str], flag: str, must_exist: bool = True) -> dict[str, Path]:
    """``["darling=runs/a", ...]`` -> ``{"darling": Path("runs/a")}``; a malformed item, or (``must_exist``) a
    folder that is not there, is one line."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, folder = item.partition("=")
        if not sep or not name.strip() or not folder.strip():
            raise UserInputError(f"{flag} {item!r}: expected NAME=DIR")
        if must_exist and not Path(folder).is_dir():
            raise UserInputError(f"{flag} {item!r}: {folder} is not a folder")
        out[name.strip()] = Path(folder)
    return out


@dataclass(kw_only=True, frozen=True)
class StudyConfig(CommandConfig):
    """Settings of ``darling eval study``."""

    compare: list[str] = option(help="One seed's `eval compare` folder as SEED=DIR (repeat: one per seed).")
    output: Path = option(aliases=("-o",), help="Writes study.json and study.md.")
    pair: str = option(DEFAULT_PAIR, help="The difference to pool, as compare.json names it (A - B).")
    seed: int = option(0, help="Seed of the bootstrap.")

    def check(self) -> None:
        if len(self.compare) < 2:
            raise UserInputError("a study needs at least two seeds' compare folders (--compare SEED=DIR, repeated)")
