"""darling's NoveltyBench in Inspect (``pip install darling[inspect]``): a task and a scorer that partition each
prompt's k answers with a darling export, registered under the ``darling/`` namespace through Inspect's entry point
(pyproject: ``[project.entry-points.inspect_ai] darling``).

    inspect eval darling/novelty_bench -T classifier=EXPORT --model openai-api/local/NAME
    inspect score LOG --scorer darling/novelty -S classifier=OTHER_EXPORT

The task generates k answers per prompt as ``inspect_evals``' novelty_bench does (k forks of ``generate()``, the
answers kept in the sample's metadata under ``all_completions``), on NoveltyBench's 100 curated prompts (packaged) or
any prompt set ``eval novelty --prompts`` reads. The scorer is ``eval novelty``'s scoring, one sample at a time: the
same partition (NoveltyBench's greedy one by default), threshold, Vendi kernel, utility and quality, so a log scored
here and the same answers scored by ``eval novelty --noveltybench`` agree. It reads ``all_completions``, so it also
re-scores logs of ``inspect_evals/novelty_bench``: two classifiers compared on identical generations.

Quality: a reward model (in process, or its replicas' URLs: NoveltyBench's buckets, as eval novelty) or one of
darling's rule qualities by name (``short-answer``, ``relevant-short-answer``, ``item-sentence``: their 0-1 values);
neither: every answer's quality is 1 (diversity only).
"""

from __future__ import annotations

import threading
from dataclasses import fields
from pathlib import Path
from typing import Any

import polars as pl
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, fork, solver
from inspect_ai.solver import generate as generation

from darling.core.devices import resolve_device
from darling.core.errors import UserInputError
from darling.core.quality import QUALITIES, open_ended_quality
from darling.core.reward_model import load_reward_model
from darling.evals.config import NoveltyConfig
from darling.evals.novelty import credited_quality, score_tables
from darling.evals.novelty_partition import (
    ClassifierChoice,
    check_classifier,
    load_pair_scorer,
    partition_with_kernels,
)
from darling.evals.novelty_prompts import PACKAGED_NOVELTY_PROMPTS, load_prompts
from darling.evals.noveltybench_files import first_appearance, generation_rows

ANSWERS = "all_completions"  # inspect_evals' metadata key for a sample's k answers: its logs re-score here
# The Score's value, each with its mean and standard error: inspect_evals' novelty_bench names (distinct_k: the
# classes, utility_k) for eval novelty's per-prompt metrics, and the Vendi score beside them.
SCORED = {"distinct_k": "distinct", "utility_k": "utility", "vendi": "vendi"}
RULE_QUALITIES = QUALITIES[1:]  # every open-ended one (math needs a reference answer, which these prompts lack)
# eval novelty's defaults, the task's and scorer's too: each setting is declared once, in NoveltyConfig.
DEFAULT: dict[str, Any] = {f.name: f.default for f in fields(NoveltyConfig)}


@task
def novelty_bench(
    classifier: str,
    prompts: str = next(iter(PACKAGED_NOVELTY_PROMPTS)),
    limit: int | None = None,
    k: int = DEFAULT["k"],
    temperature: float = DEFAULT["temperature"],
    max_tokens: int = DEFAULT["max_tokens"],
    threshold: float | None = None,
    partition: str = DEFAULT["partition"],
    quality: str | None = None,
    reward_model: str | None = None,
    reward_model_url: str | None = None,
    cut_points: str | list[float] | None = None,
    utility: str = DEFAULT["utility"],
    patience: float = DEFAULT["patience"],
    vendi_order: float = DEFAULT["vendi_order"],
    device: str = DEFAULT["device"],
) -> Task:
    """NoveltyBench's diversity and utility of k answers per prompt, partitioned by a darling export.

    Args:
        classifier: A darling export folder (or a HF pair classifier with ``threshold``).
        prompts: A prompt file or packaged set, as ``darling eval novelty --prompts`` (default NoveltyBench's
            curated 100).
        limit: The first N prompts.
        k: Answers per prompt.
        temperature: Sampling temperature (eval novelty's default).
        max_tokens: Max new tokens per answer.
        threshold: Equivalence threshold; default the export's calibrated one.
        partition: ``noveltybench`` (greedy, NoveltyBench's) or ``union-find`` (DARLING's training partition).
        quality: A darling rule quality by name (short-answer, relevant-short-answer, item-sentence).
        reward_model: A one-output HF reward model for quality (NoveltyBench's buckets).
        reward_model_url: Its served replicas, comma-separated (needs ``reward_model`` for its tokenizer).
        cut_points: The reward model's cut points to quality 1..n+1 (a list or comma-separated); default
            NoveltyBench's, made for Skywork-Reward-Gemma-2-27B: give your reward model's own.
        utility: ``noveltybench`` (patience-weighted) or ``darling-fork`` (sum / k).
        patience: Utility discount per position (NoveltyBench's 0.8).
        vendi_order: Order q of the Vendi score.
        device: Where the classifier and quality models run (auto, cpu, cuda).
    """
    samples = [
        Sample(input=p.prompt, id=p.prompt_id, metadata={"category": p.category}) for p in load_prompts(prompts, limit)
    ]
    return Task(
        dataset=MemoryDataset(samples, name=Path(prompts).name),
        solver=k_answers(k),
        scorer=novelty(
            classifier,
            threshold=threshold,
            partition=partition,
            quality=quality,
            reward_model=reward_model,
            reward_model_url=reward_model_url,
            cut_points=cut_points,
            utility=utility,
            patience=patience,
            vendi_order=vendi_order,
            device=device,
        ),
        config=GenerateConfig(temperature=temperature, max_tokens=max_tokens),
    )


@solver
def k_answers(k: int = 10) -> Solver:
    """k independent answers to the prompt (forks of one state, none seeing another), kept in the sample's
    metadata; the first is the sample's output."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:  # Solver's protocol names it generate
        states = await fork(state, [generation()] * k)
        result = states[0]
        result.metadata[ANSWERS] = [s.output.completion for s in states]
        return result

    return solve


@scorer(metrics={name: [mean(), stderr()] for name in SCORED})
def novelty(
    classifier: str,
    threshold: float | None = None,
    partition: str = DEFAULT["partition"],
    quality: str | None = None,
    reward_model: str | None = None,
    reward_model_url: str | None = None,
    cut_points: str | list[float] | None = None,
    utility: str = DEFAULT["utility"],
    patience: float = DEFAULT["patience"],
    vendi_order: float = DEFAULT["vendi_order"],
    device: str = DEFAULT["device"],
) -> Scorer:
    """eval novelty's scores of a sample's k answers (``metadata["all_completions"]``), named as inspect_evals'
    novelty_bench names them: ``distinct_k`` (the partition's classes), ``utility_k``, and the Vendi score; the
    metadata holds ``equivalence_classes`` and ``generation_scores`` (its names) and the qualities and every other
    prompt metric. The task's arguments of the same names are this scorer's."""
    urls = [u for u in (reward_model_url or "").split(",") if u]
    if isinstance(cut_points, list | tuple):  # -S cut_points=[...] arrives as a list
        cut_points = ",".join(str(c) for c in cut_points)
    config = NoveltyConfig(
        output=Path("."),  # never written: the scores go to Inspect's log
        classifier=classifier,
        threshold=threshold,
        partition=partition,
        reward_model=reward_model,
        reward_model_urls=urls,
        cut_points=cut_points,
        utility=utility,
        patience=patience,
        vendi_order=vendi_order,
        device=device,
        generate=False,
    )
    config.check()
    if quality is not None and quality not in RULE_QUALITIES:
        raise UserInputError(f"quality={quality!r}: choose one of {', '.join(RULE_QUALITIES)}")
    if quality is not None and reward_model:
        raise UserInputError("give quality or reward_model, not both")
    choice = check_classifier(config)  # a typo fails before any answer is generated
    models = Models(config, choice, quality)

    async def score(state: TaskState, target: Target) -> Score:
        answers = [str(a) for a in state.metadata.get(ANSWERS) or [state.output.completion]]
        return models.score(str(state.sample_id), state.input_text, answers)

    return score


class Models:
    """The classifier and the quality model, each loaded once, on the first sample scored (Inspect builds the
    scorer before generating; a model loaded then would sit idle through generation)."""

    def __init__(self, config: NoveltyConfig, choice: ClassifierChoice, quality: str | None) -> None:
        self.config, self.choice, self.quality_name = config, choice, quality
        self.lock = threading.Lock()
        self.scorer: Any = None
        self.quality: Any = None

    def load(self) -> None:
        with self.lock:
            if self.scorer is not None:
                return
            self.scorer = load_pair_scorer(self.config, self.choice)
            device = resolve_device(self.config.device)
            if self.quality_name is not None:
                self.quality = open_ended_quality(self.quality_name, device=device)
            elif self.config.reward_model:
                reward = load_reward_model(self.config.reward_model, self.config.reward_model_urls, device)
                self.quality = reward.scores

    def score(self, sample_id: str, prompt: str, answers: list[str]) -> Score:
        self.load()
        rows = generation_rows([{"id": sample_id, "prompt": prompt, "generations": answers}])
        frame = pl.DataFrame(rows)
        classes, _, kernels = partition_with_kernels([answers], self.scorer, self.config.partition)
        given = None
        raw: list[float | None] = [None] * len(answers)
        if self.quality_name is not None:
            given = [float(q) for q in self.quality([prompt] * len(answers), answers)]
        elif self.quality is not None:
            raw = [float(r) for r in self.quality([prompt] * len(answers), answers)]
        scored, per_prompt = score_tables(self.config, frame, classes, raw, kernels, given)
        metrics = per_prompt.drop("prompt_id", "category").row(0, named=True)
        partition = first_appearance(classes[0])
        return Score(
            value={name: float(metrics[ours]) for name, ours in SCORED.items()},
            answer="\n------\n".join(f"answer {i}: {a}" for i, a in enumerate(answers)),
            explanation=f"equivalence_classes= {partition}, quality {scored['quality'].to_list()}",
            metadata={
                "equivalence_classes": partition,
                "generation_scores": credited_quality(partition, scored["quality"].to_list()),
                "quality": scored["quality"].to_list(),
                "metrics": metrics,
                "classifier": self.choice.describe(),
            },
        )
