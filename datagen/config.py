"""Settings of the data-generation commands (``darling datagen rollouts | pairs | label``): one ``kw_only``
dataclass each whose fields carry their help, so the command line is built from them (``darling.cli.options``).
The generating commands derive from ``EngineConfig`` (the engine's flags, defined once in
``darling.core.engine_config``). Also the generator specs (``GeneratorSpec``) and their ``--generators`` files.

Kept light (no polars, no torch): the command line imports this module to build its flags.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from darling.core.checkers import CHECKER_NAMES, get_checker
from darling.core.config import CommandConfig, option
from darling.core.engine_api import Sampling
from darling.core.engine_config import ENGINE_OVERRIDES, EngineConfig, engine_option, sampling_option
from darling.core.errors import UserInputError
from darling.core.readers import read_structured

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant that solves math problems step by step."
DEFAULT_USER_TEMPLATE = "{problem}\n\nReason step by step, and put your final answer within \\boxed{}."


@dataclass(frozen=True)
class GeneratorSpec:
    """One generator model: its name in the output, what the engine loads, its prompts and sampling, and (vllm)
    its own parallelism and memory: a 7B model with 28 attention heads cannot be split 8 ways, a 32B one needs
    several GPUs; each is served by its own process with its own settings."""

    name: str
    model: str = ""  # engine-side name/path; defaults to ``name``
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    user_template: str = DEFAULT_USER_TEMPLATE  # ``{problem}`` is replaced by the problem text
    prompt_setting: str = "default"
    n: int | None = None  # None: the run's default
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    tensor_parallel_size: int | None = None  # None: the run's (--tensor-parallel-size)
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None

    def __post_init__(self):
        if "{problem}" not in self.user_template:
            raise UserInputError(f"generator {self.name!r}: user_template must contain {{problem}}")

    def engine_overrides(self) -> dict[str, Any]:
        """This model's own engine settings (``ENGINE_OVERRIDES`` it sets)."""
        return {k: getattr(self, k) for k in ENGINE_OVERRIDES if getattr(self, k) is not None}

    def sample_settings(self) -> dict[str, Any]:
        """What defines this generator's rows (engine settings do not: a rerun may serve it differently)."""
        return {k: v for k, v in asdict(self).items() if k not in ENGINE_OVERRIDES}

    @property
    def engine_model(self) -> str:
        return self.model or self.name

    def messages(self, problem: str) -> tuple[dict[str, str], ...]:
        # str.replace, not str.format: templates and problems are LaTeX, full of braces.
        user = self.user_template.replace("{problem}", problem)
        system = ({"role": "system", "content": self.system_prompt},) if self.system_prompt else ()
        return (*system, {"role": "user", "content": user})


# Field -> (types accepted, what the error says): a file is checked here, before any folder or model exists.
_SPEC_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a non-empty string"),
    "model": ((str,), "a non-empty string"),
    "system_prompt": ((str, type(None)), "a string or null"),
    "user_template": ((str,), "a string"),
    "prompt_setting": ((str,), "a string"),
    "n": ((int,), "an integer >= 1"),
    "temperature": ((int, float), "a number >= 0"),
    "top_p": ((int, float), "a number in (0, 1]"),
    "max_tokens": ((int,), "an integer >= 1"),
    "tensor_parallel_size": ((int,), "an integer >= 1"),
    "data_parallel_size": ((int,), "an integer >= 1"),
    "max_model_len": ((int,), "an integer >= 1"),
    "gpu_memory_utilization": ((int, float), "a number in (0, 1]"),
}
_SPEC_RANGES = {
    "name": lambda v: bool(v.strip()),
    "model": lambda v: bool(v.strip()),
    "n": lambda v: v >= 1,
    "temperature": lambda v: v >= 0,
    "top_p": lambda v: 0 < v <= 1,
    "max_tokens": lambda v: v >= 1,
    "tensor_parallel_size": lambda v: v >= 1,
    "data_parallel_size": lambda v: v >= 1,
    "max_model_len": lambda v: v >= 1,
    "gpu_memory_utilization": lambda v: 0 < v <= 1,
}


def generator_spec(entry: Any, where: str) -> GeneratorSpec:
    if not isinstance(entry, dict):
        raise UserInputError(f"{where}: expected a table/object with fields name and model")
    unknown = sorted(set(entry) - set(_SPEC_TYPES))
    if unknown:
        raise UserInputError(f"{where}: unknown field '{unknown[0]}'")
    # A file entry names its model: without one the name would be loaded as a model (a hub download).
    for required in ("name", "model"):
        if required not in entry:
            raise UserInputError(f"{where}: missing field '{required}'")
    for key, value in entry.items():
        types, expected = _SPEC_TYPES[key]
        bad_type = not isinstance(value, types) or isinstance(value, bool)
        if bad_type or (value is not None and not _SPEC_RANGES.get(key, lambda v: True)(value)):
            raise UserInputError(f"{where}: field '{key}' must be {expected}, got {value!r}")
    if "{problem}" not in entry.get("user_template", "{problem}"):
        raise UserInputError(f"{where}: field 'user_template' must contain {{problem}}")
    return GeneratorSpec(**entry)


def load_generator_config(path: Path) -> list[GeneratorSpec]:
    """``[[generators]]`` (TOML) or ``{"generators": [...]}`` (JSON/YAML), each with ``name`` and ``model``
    and optionally prompts and sampling. Every entry is checked here, naming the file, entry and field."""
    data = read_structured(path, "generator config")
    entries = data.get("generators") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise UserInputError(f"{path}: expected a non-empty list 'generators'")
    specs = [generator_spec(entry, f"{path}: generators[{i}]") for i, entry in enumerate(entries)]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UserInputError(f"{path}: generator names must be unique, got {names}")
    return specs


PROBLEMS_HELP = (
    "JSONL/Parquet file or folder, HF dataset (name[:split]), or a built-in set: champ, arithmetic, aime24, aime25, "
    "amc23, hmmt, minerva_math, olympiadbench, gsm8k."
)
GENERATORS_HELP = "TOML/JSON/YAML listing generators with their own prompts and sampling."


PAIRED_SEEDS_HELP = (
    "Every generator draws the same per-request seeds (from the problem and sample alone, not the generator's name): "
    "identical weights give identical samples, so two models' difference is paired."
)


@dataclass(kw_only=True, frozen=True)
class RolloutConfig(EngineConfig):
    """Settings of ``darling datagen rollouts``: which problems, which generators, how to sample (and the engine)."""

    problems: str | None = option(None, help=PROBLEMS_HELP)
    output: Path = option(aliases=("-o",), help="Folder of Parquet shards (rerun to resume).")
    model: list[str] = option(
        factory=list, aliases=("-m",), help="Generator: PATH or NAME=PATH (repeatable); smollm2 = packaged."
    )
    generators: Path | None = option(None, help=GENERATORS_HELP)
    specs: list[GeneratorSpec] = option(
        factory=list, flag=False, help="Generators given in Python (GeneratorSpec), before --generators and --model."
    )
    system_prompt: str | None = option(
        None, help="System prompt for --model generators ('' for none; default: a math tutor's)."
    )
    user_template: str | None = option(
        None,
        help="User message of --model generators, {problem} in it (default: the problem, then 'Reason step by "
        "step...\\boxed{}'); '{problem}' alone asks the prompt as it is.",
    )
    n: int = option(4, aliases=("-n",), help="Samples per model per problem.")
    temperature: float = sampling_option("temperature", 1.0)
    top_p: float = sampling_option("top_p", 1.0)
    max_tokens: int = sampling_option("max_tokens", 512)
    seed: int = sampling_option("seed", 0)
    paired_seeds: bool = option(False, help=PAIRED_SEEDS_HELP)
    limit: int | None = option(None, help="Use the first N problems (a larger limit later extends the output).")
    problem_field: str | None = option(None, help="Problem column (default: auto-detected).")
    answer_field: str | None = option(None, help="Reference-answer column (default: auto).")
    id_field: str | None = option(None, help="Problem-id column (default: auto).")
    shard_size: int = sampling_option("shard_size", 64, "responses")

    def check(self) -> None:
        check_sampling(self.n, self.temperature, self.top_p, self.max_tokens)
        if self.user_template is not None and "{problem}" not in self.user_template:
            raise UserInputError("--user-template must contain {problem}")

    def generator_specs(self) -> list[GeneratorSpec]:
        """``specs``, then the ``generators`` file's entries, then one per ``model`` (with ``system_prompt``)."""
        specs = [*self.specs, *(load_generator_config(self.generators) if self.generators else [])]
        template = self.user_template or DEFAULT_USER_TEMPLATE
        return specs + [parse_model(m, system_prompt(self.system_prompt), template) for m in self.model]

    def sampling_for(self, spec: GeneratorSpec) -> Sampling:
        pick = lambda own, default: default if own is None else own  # noqa: E731
        return Sampling(
            n=pick(spec.n, self.n),
            temperature=pick(spec.temperature, self.temperature),
            top_p=pick(spec.top_p, self.top_p),
            max_tokens=pick(spec.max_tokens, self.max_tokens),
            seed=self.seed,
        )

    def identity(self, specs: list[GeneratorSpec] | None = None) -> dict[str, Any]:
        """What defines the rows: a rerun with a different identity would mix two experiments. ``specs``: the
        generators already read (default: ``generator_specs()``)."""
        specs = self.generator_specs() if specs is None else specs
        return {
            "problems": str(self.problems),
            "fields": [self.problem_field, self.answer_field, self.id_field],
            "engine": self.engine,
            "seed": self.seed,
            **({"paired_seeds": True} if self.paired_seeds else {}),  # absent when off: older runs keep their identity
            "generators": [{**s.sample_settings(), **asdict(self.sampling_for(s))} for s in specs],
        }


def parse_model(
    text: str, system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, user_template: str = DEFAULT_USER_TEMPLATE
) -> GeneratorSpec:
    """``--model NAME=PATH`` (a checkpoint shown as NAME) or ``--model PATH`` (shown as itself), prompted with
    ``system_prompt`` and ``user_template``."""
    name, sep, path = text.partition("=")
    sep = sep if "/" not in name else ""  # "runs/lr=1e-5/ckpt" is a path, not NAME=PATH
    if sep and (not name.strip() or not path.strip()):
        raise UserInputError(f"--model {text!r}: expected NAME=PATH or PATH")
    return (
        GeneratorSpec(name=name.strip(), model=path.strip(), system_prompt=system_prompt, user_template=user_template)
        if sep
        else GeneratorSpec(name=text, system_prompt=system_prompt, user_template=user_template)
    )


def system_prompt(given: str | None) -> str | None:
    """``--system-prompt``: unset -> the default math prompt; '' -> none."""
    return DEFAULT_SYSTEM_PROMPT if given is None else given or None


def check_sampling(n: int, temperature: float, top_p: float, max_tokens: int) -> None:
    if n < 1:
        raise UserInputError(f"--n must be at least 1, got {n}")
    if max_tokens < 1 or temperature < 0 or not 0 < top_p <= 1:
        raise UserInputError("need --max-tokens >= 1, --temperature >= 0 and 0 < --top-p <= 1")


@dataclass(kw_only=True, frozen=True)
class PairConfig(CommandConfig):
    """Settings of ``darling datagen pairs``."""

    rollouts: Path = option(help="Rollouts folder (from `darling datagen rollouts`).")
    output: Path = option(aliases=("-o",), help="Writes pairs.parquet and summary.json.")
    correct_only: bool = option(False, help="Only responses math-verify marks correct.")
    cross_model_only: bool = option(False, help="Only pairs of two different models.")
    max_pairs_per_problem: int | None = option(
        16, help="Sample at most this many pairs per problem (0 = all); with --checker, this many of each label."
    )
    checker: str | None = option(
        None,
        help=f"Pair by a rule's keys instead of math answers ({', '.join(CHECKER_NAMES)}): two answers with a key, "
        "the same key or not, both labels equally many; answers without a key are never paired.",
    )
    one_key_only: bool = option(
        False,
        help="With --checker: pair only answers that name exactly one key. An answer naming several (a list of three "
        "lakes) is read by its first, a convention: its pairs carry no label a reader would give.",
    )
    seed: int = option(0, help="Seed of the per-problem sampling.")
    workers: int = option(0, help="Processes comparing answers (math-verify is CPU-bound); 0 = one per core, up to 8.")

    def __post_init__(self) -> None:
        if self.max_pairs_per_problem == 0:  # 0 and None both mean all (summary.json records None)
            object.__setattr__(self, "max_pairs_per_problem", None)  # frozen: set while it is being made
        super().__post_init__()

    def check(self) -> None:
        if self.max_pairs_per_problem is not None and self.max_pairs_per_problem < 0:
            raise UserInputError("--max-pairs-per-problem must be >= 1 (or 0 for all)")
        if self.one_key_only and self.checker is None:
            raise UserInputError("--one-key-only reads keys: it needs --checker")
        if self.checker is not None:
            get_checker(self.checker)
            if self.correct_only:
                raise UserInputError("--correct-only is math-verify's: with --checker the keys decide the pairs")


STRUCTURED = ("none", "choice", "regex")


@dataclass(kw_only=True, frozen=True)
class JudgeConfig(EngineConfig):
    """Settings of ``darling datagen label``: the pairs, the judge and how it votes (and the engine)."""

    pairs: Path = option(help="pairs.parquet or its folder (from `darling datagen pairs`).")
    output: Path = option(aliases=("-o",), help="Writes records/ and labelled.parquet.")
    judge_model: str | None = option(
        None, help="Judge model: server model name, HF path, or smollm2 (none with --checker: the checker labels)."
    )
    checker: str | None = option(
        None,
        help=f"A rule reading each answer's key ({', '.join(CHECKER_NAMES)}): alone, it labels the pairs (same key: "
        "equivalent); with --judge-model, the judge's labels are scored against it (summary.json: agreement).",
    )
    engine: str = engine_option("openai")
    prompt_file: Path | None = option(None, help="Your template with {problem}, {solution_1}, {solution_2}.")
    both_orders: bool = option(
        True, aliases=(" /--one-order",), help="Judge both orders; label only when they agree (--one-order: not)."
    )
    votes: int = option(1, help="Calls per order (majority); > 1 needs --temperature > 0.")
    temperature: float = sampling_option("temperature", 0.0, "the judge's")
    max_tokens: int = sampling_option("max_tokens", 512, "a judge answer's")
    structured: str = option(
        "none", choices=STRUCTURED, help="none, choice ([[yes]]/[[no]] only) or regex (rationale, then verdict)."
    )
    max_chars_per_solution: int | None = option(None, help="Truncate solutions to fit a small judge's context.")
    seed: int = sampling_option("seed", 0, "the id: the pair's")
    limit: int | None = option(None, help="Judge the first N pairs.")
    shard_size: int = sampling_option("shard_size", 32, "judged pairs")

    def check(self) -> None:
        if self.judge_model is None and self.checker is None:
            raise UserInputError("give --judge-model (an LLM judge), --checker (labels by rule), or both")
        if self.checker is not None:
            get_checker(self.checker)  # an unknown name, refused in one line
        if self.votes < 1:
            raise UserInputError("--votes must be >= 1")
        if self.votes > 1 and self.temperature <= 0:
            raise UserInputError("--votes > 1 needs --temperature > 0 (identical greedy votes add nothing)")
        if self.engine == "hf" and self.structured == "regex":
            raise UserInputError(
                "the hf engine cannot follow a regex: use --structured choice (or a vllm/openai engine)"
            )
