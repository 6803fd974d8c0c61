"""The DARLING reward as one group-aware TRL reward function (``GRPOTrainer(reward_funcs=[...])``).

TRL (1.16) calls a reward function with ``prompts, completions, completion_ids``, every dataset column
(here ``answer``), ``trainer_state``, ``log_extra`` and ``log_metric``, on this process's slice of the
generation batch, where each prompt's ``num_generations`` completions are contiguous. A group split across
processes would get a wrong partition, so ``rl-train`` refuses settings that could split one, and this
function checks every block it receives (same prompt, whole groups) and raises otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from darling.classifier.partition import Scorer
from darling.core.checkers import Checker
from darling.core.quality import distinct_answers, open_ended_quality
from darling.core.reward_model import load_reward_model, sigmoid_quality
from darling.core.training_log import (
    ADVANTAGE_CHANGE,
    ALL_DISTINCT,
    CLASSIFIER_PAIRS,
    DISTINCT,
    DISTINCT_ANSWERS,
    DISTINCT_KEYS,
    DIVERSITY,
    GROUPS_CHANGED,
    PAIRS_SAVED,
    QUALITY,
    QUALITY_ADVANTAGE,
    REWARD,
    REWARD_SECONDS,
    TEXTS_EMBEDDED,
    WITHOUT_SIGNAL,
    WOULD_CHANGE,
)
from darling.rl.batch_reward import BatchReward, darling_rewards, math_quality
from darling.rl.reward import RewardConfig

QualityFn = Callable[[Sequence[str], Sequence[str], dict[str, list[Any]]], list[float]]  # prompts, completions, columns


def completion_text(completion: Any) -> str:
    """TRL passes plain strings, or for conversational data a list of messages (the assistant's turn)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if isinstance(m, dict))


def prompt_text(prompt: Any) -> str:
    """TRL passes a plain string, or for conversational data the list of messages (the last user turn)."""
    if isinstance(prompt, str):
        return prompt
    return next((m.get("content") or "" for m in reversed(prompt) if m.get("role") == "user"), "")


def answer_quality(prompts: Sequence[str], completions: Sequence[str], columns: dict[str, list[Any]]) -> list[float]:
    """Default quality: math-verify correctness against the dataset's ``answer`` column."""
    if "answer" not in columns:
        raise KeyError("the math quality needs an 'answer' column in the training dataset")
    return math_quality(completions, columns["answer"])


class OpenEndedQuality:
    """Quality for open-ended prompts by name (``darling.core.quality``): ``short-answer`` (format),
    ``relevant-short-answer`` (format x relevance to the prompt) or ``item-sentence`` (a sentence naming a member of
    the item prompt's category, by rule)."""

    def __init__(self, name: str, max_words: int = 4, device: str | None = None, strict: bool = False):
        self.score = open_ended_quality(name, max_words, device, strict)

    def __call__(self, prompts: Sequence[str], completions: Sequence[str], columns: dict[str, Any]) -> list[float]:
        return self.score(prompts, [c.strip() for c in completions])


class RewardModelQuality:
    """Quality from a reward model (HF sequence classifier with one output), squashed to (0, 1) by a sigmoid:
    in process on ``device``, or served by vLLM replicas at ``urls`` (``client_options``: their timeouts and
    retries). A served score that cannot be had raises (``RewardServerError``): no score, no reward."""

    def __init__(self, path: str, device: str | None = None, urls: Sequence[str] = (), **client_options: Any):

        self.model = load_reward_model(path, urls, device, **client_options)

    def __call__(self, prompts: Sequence[str], completions: Sequence[str], columns: dict[str, Any]) -> list[float]:

        return sigmoid_quality(self.model.scores(list(prompts), list(completions)))


class DarlingRewardFunction:
    """``reward(prompts, completions, **columns) -> list[float]``: quality x normalised diversity per group."""

    def __init__(
        self,
        num_generations: int,
        scorer: Scorer | None,
        config: RewardConfig | None = None,
        quality: QualityFn = answer_quality,
        scale: str = "none",
        term: RewardConfig | None = None,
        checker: Checker | None = None,
    ):
        self.num_generations = num_generations
        self.scorer = scorer
        self.config = config or RewardConfig()
        self.quality = quality
        self.scale = scale  # the trainer's scale_rewards: the term's effect is measured on its advantages
        self.term = term  # the GRPO baseline: the DARLING reward whose would-be effect is logged
        self.checker = checker  # reads each answer's key where it applies: distinct keys per group, for the logs
        # TRL logs rewards/<name>: the DARLING reward, quality alone, or pass@k advantages
        self.__name__ = {"quality": "quality", "passk": "passk"}.get(self.config.combine, "darling")
        self.last: BatchReward | None = None  # the last BatchReward, for tests and callbacks
        self.last_groups: list[list[str]] = []  # ... and the texts and prompt of each of its groups
        self.last_prompts: list[str] = []

    def groups(self, prompts: Sequence[Any], texts: list[str]) -> list[list[str]]:
        n = self.num_generations
        if len(texts) % n:
            raise ValueError(f"{len(texts)} completions is not a whole number of groups of {n}: a group was split")
        blocks = [texts[k : k + n] for k in range(0, len(texts), n)]
        for b in range(len(blocks)):
            if any(prompts[b * n + i] != prompts[b * n] for i in range(n)):
                raise ValueError(f"completions {b * n}..{b * n + n - 1} do not share one prompt: a group was split")
        return blocks

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        start = time.perf_counter()
        log_metric = kwargs.pop("log_metric", None)
        kwargs.pop("trainer_state", None), kwargs.pop("log_extra", None), kwargs.pop("completion_ids", None)
        texts = [completion_text(c) for c in completions]
        groups = self.groups(prompts, texts)
        quality = self.quality([prompt_text(p) for p in prompts], texts, kwargs)
        n = self.num_generations
        per_group = [quality[k : k + n] for k in range(0, len(quality), n)]
        heads = [prompt_text(prompts[k]) for k in range(0, len(prompts), n)]  # each group's prompt: a checker reads it
        result = darling_rewards(groups, per_group, self.scorer, self.config, self.scale, self.term, heads)
        self.last, self.last_groups, self.last_prompts = result, groups, heads
        if log_metric is not None:
            log_effect(log_metric, result)
            flat = lambda rows: [x for row in rows for x in row]  # noqa: E731
            log_metric(QUALITY.key, sum(quality) / len(quality))
            log_metric(DIVERSITY.key, _mean(flat(result.diversity)))
            log_metric(REWARD.key, _mean(flat(result.rewards)))
            log_metric(DISTINCT.key, _mean(result.distinct))  # classes of the classifier
            log_metric(DISTINCT_ANSWERS.key, _mean([distinct_answers(g) for g in groups]))  # no classifier
            keys = distinct_keys(self.checker, heads, groups)
            if keys:
                log_metric(DISTINCT_KEYS.key, _mean(keys))
            log_metric(WITHOUT_SIGNAL.key, float(result.groups_without_signal))
            log_metric(CLASSIFIER_PAIRS.key, float(result.stats.pairs_decided))
            log_metric(PAIRS_SAVED.key, float(result.stats.pairs_saved))
            log_metric(TEXTS_EMBEDDED.key, float(result.stats.texts_embedded))
            log_metric(REWARD_SECONDS.key, time.perf_counter() - start)
        return [r for row in result.rewards for r in row]


def distinct_keys(checker: Checker | None, prompts: Sequence[str], groups: Sequence[Sequence[str]]) -> list[int]:
    """Per group whose prompt the checker reads, the different keys its answers name (an answer with none adds none)."""
    if checker is None:
        return []
    return [
        len({key for key in checker.keys(prompt, group) if key is not None})
        for prompt, group in zip(prompts, groups, strict=True)
        if checker.applies(prompt)
    ]


def log_effect(log_metric: Callable[[str, float], None], result: BatchReward) -> None:
    """Whether the diversity term acted (``darling.rl.reward.TermEffect``): the share of this batch's groups whose
    advantages it changed against quality alone, the mean absolute change, and the scale to read it against. The
    GRPO baseline changes none; with a classifier it logs the share DARLING's term would have changed."""
    effect = result.effect
    if effect is None:
        return
    log_metric(GROUPS_CHANGED.key, effect.share_changed if result.term_applied else 0.0)
    if not result.term_applied:
        log_metric(WOULD_CHANGE.key, effect.share_changed)
    log_metric(ADVANTAGE_CHANGE.key, effect.mean_abs_change if result.term_applied else 0.0)
    log_metric(QUALITY_ADVANTAGE.key, effect.mean_abs_quality_advantage)
    log_metric(ALL_DISTINCT.key, effect.all_distinct / effect.groups if effect.groups else 0.0)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
