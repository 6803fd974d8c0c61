"""``darling eval novelty``: NoveltyBench's diversity and utility of any generator.

Per prompt, k responses come from a datagen engine (hf, openai, vllm); an equivalence classifier partitions
them (``darling.evals.novelty_partition``: NoveltyBench's greedy first-member partition by default, or DARLING's
union-find); ``distinct`` is the number of classes. Only the first response of each class (in generation
order) is credited with its quality, repeats count 0. ``utility`` averages the credited qualities, by one of:

- ``noveltybench`` (default; github.com/novelty-bench/novelty-bench, ``src/score.py`` at 5b22b53): weights
  ``patience ** i`` over generation positions i = 0..k-1,
  ``utility = (1 - p) / (1 - p**k) * sum_i p**i * q_i * [response i opens a new class]``
  (``np.average(credited, weights=p ** np.arange(k))``; the plain mean when p = 1);
- ``darling-fork`` (DARLING's evaluation fork, github.com/facebookresearch/darling,
  ``evals/novelty-bench/src/score.py``): ``sum(credited) / k``, no patience weighting.

Quality is a one-output reward model's score bucketed to 1..10 by NoveltyBench's cut points for
Skywork-Reward-Gemma-2-27B-v0.2 (``bisect_left(cut_points, score) + 1``: a score equal to a cut point falls in
the lower bucket); the model scores in process, or on its vLLM replicas (``--reward-model-url``,
``darling.core.reward_model``: a score no replica gives stops the evaluation); without a reward model every
response has quality 1, so utility measures diversity only.

Generations are resumable ``ShardStore`` shards in ``OUTPUT/generations`` keyed by (prompt_id, sample_index);
a rerun asks only for missing or failed samples. Their identity (``run.json``) is the generation settings
only: the classifier, threshold, partition and utility can change on a rerun without regenerating. A prompt
with a failed sample is never scored: it is excluded from the metrics and counted (``n_prompts_incomplete``),
and the CLI exits 1 so a rerun retries it.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from darling.core.devices import resolve_device
from darling.core.engine_api import ChatRequest, ChatResult, Engine, Sampling
from darling.core.engine_config import engine_options
from darling.core.engines import build_engine
from darling.core.errors import UserInputError
from darling.core.progress import progress_bar
from darling.core.reward_model import load_reward_model
from darling.core.schemas import RUN_FILE, stable_id
from darling.core.shards import ShardStore
from darling.datagen.problems import PACKAGED_PROMPT_SETS, packaged_problem_file, problem_records
from darling.evals.config import (
    DARLING_FORK,
    DEFAULT_PATIENCE,
    NOVELTYBENCH,
    NOVELTYBENCH_CUT_POINTS,
    PARTITIONS,
    UTILITIES,
    NoveltyConfig,
)
from darling.evals.novelty_partition import (
    DECISIONS,
    ClassifierChoice,
    NoveltyPartitionStats,
    check_classifier,
    load_pair_scorer,
    partition_responses,
)
from darling.evals.novelty_report import EMPTY_PER_PROMPT, summarise, write_outputs
from darling.evals.prompt_metrics import PromptAnswers, metric_columns

GENERATION_KEY = ("prompt_id", "sample_index")
GENERATION_COLUMNS = {
    "prompt_id": "String",
    "prompt": "String",
    "category": "String",  # null when the prompt set has none
    "sample_index": "Int64",
    "response": "String",  # null when status == "failed"
    "finish_reason": "String",
    "num_tokens": "Int64",
    "status": "String",  # ok | failed (failed samples are retried by a rerun, never scored)
    "error": "String",
}


@dataclass(frozen=True)
class NoveltyPrompt:
    prompt_id: str
    prompt: str
    category: str | None = None


# -- definitions ---------------------------------------------------------------------------------------------
def quality_bucket(score: float, cut_points: Sequence[float] = NOVELTYBENCH_CUT_POINTS) -> int:
    """Reward-model score -> 1..len(cut_points)+1 (1..10 by default), as NoveltyBench's transform_raw_reward."""
    return bisect.bisect_left(cut_points, score) + 1


def credited_quality(classes: Sequence[int], quality: Sequence[float]) -> list[float]:
    """Quality of each response that opens a new class (in generation order); 0 for repeats."""
    seen: set[int] = set()
    credited = []
    for label, q in zip(classes, quality, strict=True):
        credited.append(0.0 if label in seen else float(q))
        seen.add(label)
    return credited


def novelty_utility(classes: Sequence[int], quality: Sequence[float], patience: float = DEFAULT_PATIENCE) -> float:
    """NoveltyBench utility: the patience-weighted average over positions of the credited qualities."""
    credited = credited_quality(classes, quality)
    weights = patience ** np.arange(len(credited), dtype=np.float64)  # 0.0 ** 0 == 1: patience 0 is valid
    return float(np.average(credited, weights=weights))


def darling_fork_utility(classes: Sequence[int], quality: Sequence[float]) -> float:
    """DARLING's evaluation fork: the credited qualities summed and divided by k (no patience weighting)."""
    credited = credited_quality(classes, quality)
    return float(sum(credited) / len(credited))


def prompt_utility(classes: Sequence[int], quality: Sequence[float], method: str, patience: float) -> float:
    """One prompt's utility by ``method`` (UTILITIES); ``patience`` only weighs NoveltyBench's."""
    if method == DARLING_FORK:
        return darling_fork_utility(classes, quality)
    return novelty_utility(classes, quality, patience)


# -- prompts -------------------------------------------------------------------------------------------------
# NoveltyBench's 100 curated prompts (MIT, evals/resources/NOVELTYBENCH-LICENSE), loadable by name.
PACKAGED_NOVELTY_PROMPTS = {
    "noveltybench-curated": Path(__file__).parent / "resources" / "noveltybench-curated.jsonl.gz"
}


def load_prompts(source: str | Path, limit: int | None = None) -> list[NoveltyPrompt]:
    """Prompts (field ``prompt``; ``id`` if present, else a content hash; optional ``category``) from a
    .jsonl[.gz] file, a .parquet file or folder, a ``save_to_disk`` folder, a hub name ``owner/name[:split]`` or
    a packaged prompt set by name (``noveltybench-curated``, ``naming-heldout``, ``naming-train``)."""

    spec = str(source)
    if limit is not None and limit < 1:
        raise UserInputError(f"--limit must be at least 1, got {limit}")
    path = Path(spec)
    if spec in PACKAGED_NOVELTY_PROMPTS and not path.exists():
        path = PACKAGED_NOVELTY_PROMPTS[spec]
        spec = str(path)
    elif spec in PACKAGED_PROMPT_SETS and not path.exists():
        path = packaged_problem_file(spec) or path
        spec = str(path)
    if not path.exists() and not ("/" in spec and not spec.startswith((".", "/")) and not path.suffix):
        raise UserInputError(f"{spec}: prompt file not found")
    records, _ = problem_records(spec)
    prompts: list[NoveltyPrompt] = []
    seen: dict[str, str] = {}
    for where, record in records:
        if not isinstance(record, dict):
            raise UserInputError(f"{where}: expected an object with field 'prompt', got {type(record).__name__}")
        text = record.get("prompt")
        if not isinstance(text, str) or not text.strip():
            problem = "missing field 'prompt'" if text is None else "field 'prompt' must be a non-empty string"
            raise UserInputError(f"{where}: {problem}")
        raw_id, category = record.get("id"), record.get("category")
        if raw_id is not None and not isinstance(raw_id, str | int):
            raise UserInputError(f"{where}: field 'id' must be a string or integer, got {type(raw_id).__name__}")
        if category is not None and not isinstance(category, str):
            raise UserInputError(f"{where}: field 'category' must be a string, got {type(category).__name__}")
        prompt_id = str(raw_id) if raw_id not in (None, "") else stable_id(text)  # reordering keeps ids
        if prompt_id in seen:
            raise UserInputError(f"{where}: duplicate prompt id '{prompt_id}' (also at {seen[prompt_id]})")
        seen[prompt_id] = where
        prompts.append(NoveltyPrompt(prompt_id, text, category))
        if limit is not None and len(prompts) >= limit:
            break
    if not prompts:
        raise UserInputError(f"{spec}: no prompts found")
    return prompts


# -- stage 1: generation -------------------------------------------------------------------------------------
def generate_responses(
    config: NoveltyConfig, prompts: list[NoveltyPrompt], store: ShardStore, engine: Engine | None, progress: bool
) -> dict[str, int]:
    """Ask the engine for every missing or failed sample; rows are flushed every ``shard_size`` rows."""

    existing = store.read()
    done = {tuple(k) for k in existing.filter(pl.col("status") == "ok").select(GENERATION_KEY).iter_rows()}
    requests, pending, reused = [], {}, 0
    for p in prompts:
        missing = [i for i in range(config.k) if (p.prompt_id, i) not in done]
        reused += config.k - len(missing)
        if missing:
            # A seed from stable ids: a rerun asks for the same samples with the same seed.
            seed = int(stable_id(config.seed, p.prompt_id, missing[0]), 16) % 2**31
            sampling = Sampling(len(missing), config.temperature, 1.0, config.max_tokens, seed)
            messages = ({"role": "user", "content": p.prompt},)  # NoveltyBench: the bare prompt, no system turn
            requests.append(ChatRequest(p.prompt_id, messages, sampling))
            pending[p.prompt_id] = (p, missing)
    counts = {"generated": 0, "failed": 0, "reused": reused}
    if not requests:
        return counts
    own_engine = engine is None
    engine = engine or build_engine(config)
    buffer: list[dict[str, Any]] = []
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task("generate", total=sum(len(m) for _, m in pending.values()))

        def on_result(result: ChatResult) -> None:
            prompt, indices = pending.pop(cast(str, result.request.key))  # keyed by prompt_id
            if result.ok and len(result.completions) != len(indices):
                result = ChatResult(
                    result.request, error=f"engine returned {len(result.completions)} of {len(indices)}"
                )
            for n, i in enumerate(indices):
                row = {
                    "prompt_id": prompt.prompt_id,
                    "prompt": prompt.prompt,
                    "category": prompt.category,
                    "sample_index": i,
                    "status": "ok" if result.ok else "failed",
                    "error": result.error,
                }
                if result.ok:
                    c = result.completions[n]
                    row.update(response=c.text, finish_reason=c.finish_reason, num_tokens=c.num_tokens)
                buffer.append(row)
            counts["generated" if result.ok else "failed"] += len(indices)
            bar.advance(task, len(indices))
            if len(buffer) >= config.shard_size:
                store.append(buffer)
                buffer.clear()

        try:
            engine.run(config.model or "", requests, on_result)
        finally:
            store.append(buffer)  # keep what finished, even when interrupted
            if own_engine:
                engine.close()  # free the generator before the classifier and reward model load
    return counts


# -- stage 2: partition and quality --------------------------------------------------------------------------
def score_generations(
    config: NoveltyConfig, classifier: ClassifierChoice, frame: pl.DataFrame, progress: bool
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    """Per response (class id, raw reward, quality, credited quality) and per prompt (distinct, utility) for
    ``frame`` (complete prompts only, sorted by (prompt_id, sample_index)), and the partition's counts."""

    by_prompt = frame.group_by("prompt_id", maintain_order=True).agg(pl.col("category").first(), pl.col("response"))
    groups = by_prompt["response"].to_list()
    device = resolve_device(config.device)  # the generator's device: classifier and reward model go there too
    scorer = load_pair_scorer(config, classifier)
    classes: list[list[int]] = []
    stats = NoveltyPartitionStats()
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task("partition", total=len(groups))
        for start in range(0, len(groups), 256):  # one scorer call batches a step across many prompts
            chunk, chunk_stats = partition_responses(groups[start : start + 256], scorer, config.partition)
            classes += chunk
            stats.add(chunk_stats)
            bar.advance(task, len(chunk))
    client = getattr(scorer, "client", None)
    if client is not None:  # served: close its HTTP connections
        client.close()
    del scorer, client  # free the scorer before the reward model loads
    raw: list[float | None] = [None] * frame.height
    if config.reward_model:
        raw = reward_scores(config.reward_model, config.reward_model_urls, frame, device)
    quality = [1 if r is None else quality_bucket(r, config.quality_cut_points) for r in raw]
    k = len(groups[0])  # every complete prompt has exactly k responses
    pairs = list(zip(classes, [quality[i : i + k] for i in range(0, len(quality), k)], strict=True))
    scored = frame.with_columns(
        pl.Series("class_id", [c for group in classes for c in group], dtype=pl.Int64),
        pl.Series("raw_reward", raw, dtype=pl.Float64),
        pl.Series("quality", quality, dtype=pl.Int64),
        pl.Series("credited_quality", [x for c, q in pairs for x in credited_quality(c, q)], dtype=pl.Float64),
    )
    answers = [
        PromptAnswers([t.strip() for t in texts], c, q, prompt_utility(c, q, config.utility, config.patience))
        for texts, (c, q) in zip(groups, pairs, strict=True)
    ]
    columns = metric_columns(answers)  # every per-prompt metric of evals/prompt_metrics.py, computed here once
    per_prompt = by_prompt.drop("response").with_columns(
        pl.Series(name, values, dtype=pl.Float64) for name, values in columns.items()
    )
    return scored, per_prompt, asdict(stats)


def reward_scores(path: str, urls: Sequence[str], frame: pl.DataFrame, device: str) -> list[float | None]:
    """The reward model's raw score per response: from its replicas at ``urls`` or in this process. A served score
    that cannot be had raises ``RewardServerError``: no score, no quality, no utility."""

    model = load_reward_model(path, urls, device)
    try:
        return list(model.scores(frame["prompt"].to_list(), frame["response"].to_list()))
    finally:
        if hasattr(model, "close"):  # served: its HTTP connections
            model.close()


# -- the whole evaluation ------------------------------------------------------------------------------------
def run_description(
    config: NoveltyConfig, classifier: ClassifierChoice, generation: dict[str, Any], stats: dict[str, Any]
) -> dict[str, Any]:
    """What metrics.json says of how its figures were made: utility, classifier, quality, generation, partition."""
    quality = f"reward model, bucketed 1..{len(config.quality_cut_points) + 1}" if config.reward_model else None
    weighted = config.utility == NOVELTYBENCH  # the darling-fork mean has no patience: none is reported
    return {
        "utility": {
            "method": config.utility,
            "patience": config.patience if weighted else None,
            "definition": UTILITIES[config.utility],
        },
        **classifier.describe(),
        "reward_model": config.reward_model,
        "cut_points": list(config.quality_cut_points) if config.reward_model else None,
        "quality": quality or "none: quality = 1 for every response, so utility measures diversity only",
        "generation": generation,
        "partition": {
            "method": config.partition,
            "decision": DECISIONS[config.partition],
            "definition": PARTITIONS[config.partition],
            **stats,
        },
    }


def evaluate_novelty(config: NoveltyConfig, engine: Engine | None = None, progress: bool = False) -> dict[str, Any]:
    """Generate (resumably), partition, score, and write metrics.json, report.md, novelty.png, scores.parquet
    and per_prompt.parquet to ``config.output``. Returns the metrics plus this run's generation counts."""

    if config.generate and engine is None:
        engine_options(config)  # a bad engine option fails before anything is read or written
    if config.threads:  # the hf engine's threads, and the classifier's and reward model's
        import torch

        torch.set_num_threads(config.threads)
    prompts = load_prompts(str(config.prompts), config.limit) if config.generate else []
    classifier = check_classifier(config)  # before generating: a typo must not cost a generation run
    store_dir = Path(config.output) / "generations"
    if config.generate:
        store = ShardStore(store_dir, GENERATION_COLUMNS, GENERATION_KEY)
        store.check_settings(config.identity(), what="prompts, model or sampling")
        counts = generate_responses(config, prompts, store, engine, progress)
        wanted = [p.prompt_id for p in prompts]
        frame = store.read().filter(pl.col("prompt_id").is_in(wanted))
    else:
        if not (store_dir / RUN_FILE).exists():
            raise UserInputError(f"{store_dir}: no stored generations; run once without --no-generate")
        frame, counts = ShardStore(store_dir, GENERATION_COLUMNS, GENERATION_KEY).read(), {}
        wanted = frame["prompt_id"].unique().to_list()
    generation = json.loads((store_dir / RUN_FILE).read_text())
    k = int(generation["k"])
    ok = frame.filter(pl.col("status") == "ok").group_by("prompt_id").agg(pl.len().alias("n_ok"))
    complete_ids = ok.filter(pl.col("n_ok") == k)["prompt_id"].to_list()
    complete = frame.filter(pl.col("prompt_id").is_in(complete_ids)).sort(GENERATION_KEY)
    if complete.height:
        scored, per_prompt, stats = score_generations(config, classifier, complete, progress)
    else:  # nothing complete: an empty report that says so (the CLI exits 1)
        scored, per_prompt, stats = complete, pl.DataFrame(schema=EMPTY_PER_PROMPT), {}
    metrics = {
        **summarise(per_prompt),
        "n_prompts_incomplete": len(wanted) - len(complete_ids),
        "k": k,
        **run_description(config, classifier, generation, stats),
    }
    write_outputs(Path(config.output), scored, per_prompt, metrics)
    return {**metrics, "run": counts}
