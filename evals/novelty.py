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

Several models (``--model NAME=PATH``, repeatable) are evaluated in one process, each into ``OUTPUT/NAME/`` as if
alone: each generates in turn (its engine closed before the next), then the classifier partitions all of them and the
reward model scores all of them, each loaded once. Every model draws the same per-request seeds.

Generations are resumable ``ShardStore`` shards in ``OUTPUT/generations`` keyed by (prompt_id, sample_index);
a rerun asks only for missing or failed samples. Their identity (``run.json``) is the generation settings
only: the classifier, threshold, partition and utility can change on a rerun without regenerating. A prompt
with a failed sample is never scored: it is excluded from the metrics and counted (``n_prompts_incomplete``),
and the CLI exits 1 so a rerun retries it.
"""

from __future__ import annotations

import bisect
import dataclasses
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
    partition_with_kernels,
)
from darling.evals.novelty_prompts import NoveltyPrompt, load_prompts
from darling.evals.novelty_report import EMPTY_PER_PROMPT, summarise, write_outputs
from darling.evals.novelty_store import GENERATION_COLUMNS, GENERATION_KEY
from darling.evals.noveltybench_files import import_noveltybench, noveltybench_scores, write_noveltybench_files
from darling.evals.prompt_metrics import PromptAnswers, metric_columns
from darling.evals.vendi import vendi_kernel


# -- definitions ---------------------------------------------------------------------------------------------
def quality_bucket(score: float, cut_points: Sequence[float] = NOVELTYBENCH_CUT_POINTS) -> int:
    """Reward-model score -> 1..len(cut_points)+1 (1..10 by default), as NoveltyBench's transform_raw_reward."""
    return bisect.bisect_left(cut_points, score) + 1


def quality_bucket_or_one(raw: float | None, config: NoveltyConfig) -> int:
    """A response's quality from its raw reward (NoveltyBench's bucket); 1 without a reward model."""
    return 1 if raw is None else quality_bucket(raw, config.quality_cut_points)


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


# -- stage 1: generation -------------------------------------------------------------------------------------
def generate_responses(
    config: NoveltyConfig,
    model: str,
    prompts: list[NoveltyPrompt],
    store: ShardStore,
    engine: Engine | None,
    progress: bool,
) -> dict[str, int]:
    """Ask the engine for ``model``'s every missing or failed sample; rows are flushed every ``shard_size`` rows."""

    existing = store.read()
    done = {tuple(k) for k in existing.filter(pl.col("status") == "ok").select(GENERATION_KEY).iter_rows()}
    requests, pending, reused = [], {}, 0
    for p in prompts:
        missing = [i for i in range(config.k) if (p.prompt_id, i) not in done]
        reused += config.k - len(missing)
        if missing:
            # A seed from stable ids (not the model): a rerun asks for the same samples with the same seed, and every
            # model draws the same seeds, so identical weights would give identical samples (a paired comparison).
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
        task = bar.add_task(f"generate ({model})", total=sum(len(m) for _, m in pending.values()))

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
            engine.run(model, requests, on_result)
        finally:
            store.append(buffer)  # keep what finished, even when interrupted
            if own_engine:
                engine.close()  # free the generator before the next model, the classifier and the reward model
    return counts


@dataclass(frozen=True)
class StoredGenerations:
    """One evaluation's generations as stored: the complete prompts' rows, sorted by (prompt_id, sample_index)."""

    output: Path
    frame: pl.DataFrame
    n_wanted: int  # prompts asked for (with --no-generate: those stored)
    generation: dict[str, Any]  # the generations' identity (run.json)
    counts: dict[str, int]  # this run's generated / failed / reused samples ({} with --no-generate)


def evaluation_folders(config: NoveltyConfig) -> list[tuple[str | None, Path]]:
    """(model, folder) per evaluation: one per ``--model``; with ``--no-generate`` and no ``--model``, OUTPUT itself
    or else each OUTPUT/NAME/ that holds generations."""
    if config.model:
        return [(model, folder) for model, folder in config.model_folders()]
    output = Path(config.output)
    found = sorted(run.parent.parent for run in output.glob(f"*/generations/{RUN_FILE}"))
    if (output / "generations" / RUN_FILE).exists() or not found:
        return [(None, output)]  # none found: the read says what is missing
    return [(None, folder) for folder in found]


def stored_generations(
    config: NoveltyConfig, model: str | None, output: Path, prompts: list[NoveltyPrompt], engine, progress: bool
) -> StoredGenerations:
    """Generate what ``model`` lacks (unless ``--no-generate``), then read its complete prompts back."""
    store_dir = output / "generations"
    if config.generate:
        assert model is not None  # NoveltyConfig.check: generating needs --model
        store = ShardStore(store_dir, GENERATION_COLUMNS, GENERATION_KEY)
        counts = generate_responses(config, model, prompts, store, engine, progress)
        wanted = [p.prompt_id for p in prompts]
        frame = store.read().filter(pl.col("prompt_id").is_in(wanted))
    else:
        if not (store_dir / RUN_FILE).exists():
            raise UserInputError(f"{store_dir}: no stored generations; run once without --no-generate")
        frame, counts = ShardStore(store_dir, GENERATION_COLUMNS, GENERATION_KEY).read(), {}
        wanted = frame["prompt_id"].unique().to_list()
    generation = json.loads((store_dir / RUN_FILE).read_text())
    ok = frame.filter(pl.col("status") == "ok").group_by("prompt_id").agg(pl.len().alias("n_ok"))
    complete_ids = ok.filter(pl.col("n_ok") == int(generation["k"]))["prompt_id"].to_list()
    complete = frame.filter(pl.col("prompt_id").is_in(complete_ids)).sort(GENERATION_KEY)
    return StoredGenerations(output, complete, len(wanted), generation, counts)


# -- stage 2: partition and quality --------------------------------------------------------------------------
def _by_prompt(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by("prompt_id", maintain_order=True).agg(
        pl.col("category").first(), pl.col("prompt").first(), pl.col("response")
    )


def partition_frames(
    config: NoveltyConfig, classifier: ClassifierChoice, frames: list[pl.DataFrame], progress: bool
) -> list[tuple[list[list[int]], dict[str, int], list[np.ndarray]]]:
    """Each frame's class ids per prompt, partition counts and Vendi kernels per prompt; the scorer loaded once."""
    scorer = load_pair_scorer(config, classifier)
    results = []
    groups_of = [_by_prompt(frame)["response"].to_list() for frame in frames]
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task("partition", total=sum(map(len, groups_of)))
        for groups in groups_of:
            classes: list[list[int]] = []
            kernels: list[np.ndarray] = []
            stats = NoveltyPartitionStats()
            for start in range(0, len(groups), 256):  # one scorer call batches a step across many prompts
                chunk, chunk_stats, chunk_kernels = partition_with_kernels(
                    groups[start : start + 256], scorer, config.partition
                )
                kernels += chunk_kernels
                classes += chunk
                stats.add(chunk_stats)
                bar.advance(task, len(chunk))
            results.append((classes, asdict(stats), kernels))
    client = getattr(scorer, "client", None)
    if client is not None:  # served: close its HTTP connections
        client.close()
    del scorer, client  # free the scorer before the reward model loads
    return results


def raw_rewards(config: NoveltyConfig, frames: list[pl.DataFrame]) -> list[list[float | None]]:
    """Each frame's raw reward-model score per response (None without a reward model), the model loaded once."""
    if not config.reward_model or not frames:
        return [[None] * frame.height for frame in frames]
    device = resolve_device(config.device)  # the generator's device: the reward model goes there too
    scores = reward_scores(config.reward_model, config.reward_model_urls, pl.concat(frames), device)
    ends = np.cumsum([frame.height for frame in frames]).tolist()
    return [scores[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def score_tables(
    config: NoveltyConfig,
    frame: pl.DataFrame,
    classes: list[list[int]],
    raw: list[float | None],
    kernels: Sequence[np.ndarray | None] | None = None,
    qualities: Sequence[float] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per response (class id, raw reward, quality, credited quality) and per prompt (every prompt metric) of
    ``frame`` (complete prompts only, sorted by (prompt_id, sample_index)) from its partition and raw rewards.
    ``qualities``: each response's quality as given (a darling quality function's), instead of the reward's bucket."""
    by_prompt = _by_prompt(frame)
    groups, prompts = by_prompt["response"].to_list(), by_prompt["prompt"].to_list()
    quality = list(qualities) if qualities is not None else [quality_bucket_or_one(r, config) for r in raw]
    k = len(groups[0])  # every complete prompt has exactly k responses
    pairs = list(zip(classes, [quality[i : i + k] for i in range(0, len(quality), k)], strict=True))
    scored = frame.with_columns(
        pl.Series("class_id", [c for group in classes for c in group], dtype=pl.Int64),
        pl.Series("raw_reward", raw, dtype=pl.Float64),
        pl.Series("quality", quality, dtype=pl.Float64 if qualities is not None else pl.Int64),
        pl.Series("credited_quality", [x for c, q in pairs for x in credited_quality(c, q)], dtype=pl.Float64),
    )
    utilities = [prompt_utility(c, q, config.utility, config.patience) for c, q in pairs]
    answers = [
        PromptAnswers([t.strip() for t in texts], c, q, utility, prompt, kernel, config.vendi_order)
        for texts, (c, q), utility, prompt, kernel in zip(
            groups, pairs, utilities, prompts, kernels or [None] * len(groups), strict=True
        )
    ]
    columns = metric_columns(answers)  # every per-prompt metric of evals/prompt_metrics.py, computed here once
    per_prompt = by_prompt.drop("response", "prompt").with_columns(
        pl.Series(name, values, dtype=pl.Float64) for name, values in columns.items()
    )
    return scored, per_prompt


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
        "vendi": {
            "order": config.vendi_order,
            "kernel": vendi_kernel(classifier.export.kind if classifier.export else None),
        },
    }


def evaluate_novelty(
    config: NoveltyConfig, engine: Engine | None = None, progress: bool = False
) -> dict[Path, dict[str, Any]]:
    """Per model: generate (resumably) into its folder, then partition and score every model's complete prompts
    (the classifier loaded once, then the reward model once) and write metrics.json, report.md, novelty.png,
    scores.parquet and per_prompt.parquet to each folder. Returns each folder's metrics plus this run's generation
    counts (``run``)."""

    if config.noveltybench is not None:  # NoveltyBench's generations, read into OUTPUT's store: nothing generates
        instances = import_noveltybench(config)
        config = dataclasses.replace(config, generate=False)
    if config.generate and engine is None:
        engine_options(config)  # a bad engine option fails before anything is read or written
    if config.threads:  # the hf engine's threads, and the classifier's and reward model's
        import torch

        torch.set_num_threads(config.threads)
    prompts = load_prompts(str(config.prompts), config.limit) if config.generate else []
    classifier = check_classifier(config)  # before generating: a typo must not cost a generation run
    folders = evaluation_folders(config)
    if config.generate:  # every model's identity before any generates: a mismatch must not cost the others' runs
        for model, folder in folders:
            store = ShardStore(folder / "generations", GENERATION_COLUMNS, GENERATION_KEY)
            store.check_settings(config.identity(model), what="prompts, model or sampling")
    stored = [stored_generations(config, model, folder, prompts, engine, progress) for model, folder in folders]
    scorable = [s for s in stored if s.frame.height]
    partitions = iter(partition_frames(config, classifier, [s.frame for s in scorable], progress) if scorable else [])
    rewards = iter(raw_rewards(config, [s.frame for s in scorable]))
    results: dict[Path, dict[str, Any]] = {}
    for s in stored:
        if s.frame.height:
            classes, stats, kernels = next(partitions)
            scored, per_prompt = score_tables(config, s.frame, classes, next(rewards), kernels)
        else:  # nothing complete: an empty report that says so (the CLI exits 1)
            scored, per_prompt, stats = s.frame, pl.DataFrame(schema=EMPTY_PER_PROMPT), {}
        metrics = {
            **summarise(per_prompt),
            "n_prompts_incomplete": s.n_wanted - per_prompt.height,
            "k": int(s.generation["k"]),
            **run_description(config, classifier, s.generation, stats),
        }
        write_outputs(s.output, scored, per_prompt, metrics)
        if config.noveltybench is not None:
            write_noveltybench_files(s.output, instances, noveltybench_scores(instances, scored, per_prompt), metrics)
        results[s.output] = {**metrics, "run": s.counts}
    return results
