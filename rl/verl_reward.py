"""The DARLING reward for verl users: a batch ``compute_score`` and a group-aware reward manager.

verl computes rewards for a whole generation batch whose rows are each prompt's ``n`` responses, one
after another (``actor_rollout_ref.rollout.n``). Two ways in, both loadable from config lines alone
(README "verl"):

* ``compute_score`` for verl's ``batch`` reward manager (``reward_model.reward_manager=batch`` with
  ``custom_reward_function.path=<this file>``): verl passes lists of responses, ground truths and
  ``extra_info`` dicts; a group is a contiguous run of rows with the same ``extra_info[group_key]``
  (``index`` by default, which verl's data preprocessing scripts write per prompt).
* ``DarlingRewardManager``: the legacy ``AbstractRewardManager`` interface (``__call__(data,
  return_dict)``), grouping by the ``uid`` verl assigns to each prompt before repeating it ``n`` times.

Settings come as keyword arguments (``reward_model.reward_kwargs`` / ``custom_reward_function.reward_kwargs``):
``classifier`` (exported classifier dir, required), ``classifier_urls`` (vLLM replicas; empty: in process),
``threshold``, ``combine``, ``correct_only``, ``floor``, ``num_generations`` (checked when given).

Errors are never turned into rewards: a scorer failure, a split or interleaved group, or a missing
setting raises. (Some reward managers wrap scoring in ``try/except`` and write 0.0; this module does not,
and verl's ``batch`` manager of 0.4-0.6 propagates the error.) verl >= 0.7 computes rewards per sample
while rollouts stream ("agent reward loop"), which cannot host a group reward; use 0.4-0.6 or the TRL path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from darling.rl.darling import darling_rewards, math_quality
from darling.rl.reward import DarlingConfig

_SCORERS: dict[tuple, Any] = {}  # one classifier per process: verl calls the reward every step


@dataclass(frozen=True)
class VerlSettings:
    classifier: str | None = None
    classifier_urls: tuple[str, ...] = ()
    threshold: float | None = None
    combine: str = "multiply"
    correct_only: bool = False
    floor: float = 0.0
    num_generations: int | None = None
    group_key: str = "index"

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> VerlSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown DARLING reward setting(s) {unknown}; known: {sorted(known)}")
        values = dict(kwargs)
        urls = values.get("classifier_urls") or ()
        values["classifier_urls"] = (urls,) if isinstance(urls, str) else tuple(urls)
        return cls(**values)

    @property
    def darling(self) -> DarlingConfig:
        return DarlingConfig(combine=self.combine, correct_only=self.correct_only, floor=self.floor)


def scorer(settings: VerlSettings):
    """The exported classifier (either kind, in-process or served), loaded once per process."""
    if settings.combine == "quality":
        return None
    if not settings.classifier:
        raise ValueError("the DARLING reward needs `classifier=<exported classifier dir>` in its reward kwargs")
    key = (settings.classifier, settings.classifier_urls, settings.threshold)
    if key not in _SCORERS:
        from darling.classifier.loading import load_scorer

        _SCORERS[key] = load_scorer(settings.classifier, settings.classifier_urls, threshold=settings.threshold)
    return _SCORERS[key]


def contiguous_groups(keys: Sequence[Any], num_generations: int | None = None) -> list[slice]:
    """Row ranges of each group; a key that comes back after another key means rows were reordered."""
    spans: list[slice] = []
    seen: set[Any] = set()
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            if keys[start] in seen:
                raise ValueError(f"group {keys[start]!r} is not contiguous (rows {start}..{i - 1} repeat it)")
            seen.add(keys[start])
            spans.append(slice(start, i))
            start = i
    if num_generations is not None:
        for span in spans:
            if span.stop - span.start != num_generations:
                raise ValueError(
                    f"group {keys[span.start]!r} has {span.stop - span.start} responses, expected "
                    f"num_generations={num_generations}: a group was split or padded"
                )
    return spans


def score_groups(
    texts: Sequence[str], keys: Sequence[Any], ground_truths: Sequence[Any], settings: VerlSettings
) -> list[dict[str, float]]:
    """Per response: ``score`` (the DARLING reward), ``quality``, ``diversity`` and its group's ``distinct``."""
    if not (len(texts) == len(keys) == len(ground_truths)):
        raise ValueError("responses, group keys and ground truths must have the same length")
    spans = contiguous_groups(list(keys), settings.num_generations)
    answers = [None if g is None else str(g) for g in ground_truths]
    quality = math_quality(list(texts), answers)
    result = darling_rewards(
        [list(texts[s]) for s in spans], [quality[s] for s in spans], scorer(settings), settings.darling
    )
    scores: list[dict[str, float]] = []
    for span, rewards, div, distinct in zip(spans, result.rewards, result.diversity, result.distinct, strict=True):
        for offset, (r, d) in enumerate(zip(rewards, div, strict=True)):
            q = quality[span.start + offset]
            scores.append({"score": float(r), "quality": float(q), "diversity": float(d), "distinct": float(distinct)})
    return scores


def compute_score(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None],
    **reward_kwargs: Any,
) -> list[dict[str, float]]:
    """verl ``batch`` reward manager entry point: one dict per response, ``score`` is the reward."""
    settings = VerlSettings.from_kwargs(reward_kwargs)
    missing = [i for i, info in enumerate(extra_infos) if not info or settings.group_key not in info]
    if missing:
        raise ValueError(
            f"rows {missing[:5]} have no extra_info[{settings.group_key!r}]: the DARLING reward groups the n "
            "responses of a prompt by it (set group_key= to another per-prompt field)"
        )
    keys = [info[settings.group_key] for info in extra_infos]
    return score_groups(solution_strs, keys, ground_truths, settings)


class DarlingRewardManager:
    """verl's legacy reward-manager interface; groups by ``non_tensor_batch["uid"]`` (one uid per prompt)."""

    def __init__(self, tokenizer, num_examine: int = 0, compute_score=None, reward_fn_key: str = "data_source",
                 **reward_kwargs: Any):  # fmt: skip
        self.tokenizer = tokenizer
        self.settings = VerlSettings.from_kwargs(reward_kwargs)
        scorer(self.settings)  # load (or fail on) the classifier when verl builds the manager, not mid-run

    def __call__(self, data, return_dict: bool = False):
        import torch

        if "rm_scores" in data.batch.keys():  # noqa: SIM118 - TensorDict refuses `in` without .keys()
            tensor = data.batch["rm_scores"]
            return {"reward_tensor": tensor, "reward_extra_info": {}} if return_dict else tensor
        responses = data.batch["responses"]
        prompt_len = data.batch["prompts"].shape[-1]
        lengths = data.batch["attention_mask"][:, prompt_len:].sum(dim=-1).tolist()
        texts = [self.tokenizer.decode(responses[i][:n], skip_special_tokens=True) for i, n in enumerate(lengths)]
        truths = [rm.get("ground_truth") for rm in data.non_tensor_batch["reward_model"]]
        scores = score_groups(texts, list(data.non_tensor_batch["uid"]), truths, self.settings)
        reward = torch.zeros_like(responses, dtype=torch.float32)
        for i, (n, s) in enumerate(zip(lengths, scores, strict=True)):
            reward[i, max(n, 1) - 1] = s["score"]  # verl reads the reward at the last response token
        if not return_dict:
            return reward
        extra = {key: [s[key] for s in scores] for key in ("quality", "diversity", "distinct")}
        return {"reward_tensor": reward, "reward_extra_info": extra}


try:  # register under "darling" for verl versions with the legacy registry (when this module is imported)
    from verl.workers.reward_manager import register as _register

    _register("darling")(DarlingRewardManager)
except (ImportError, ValueError):  # verl absent, or an older registry: the class stays usable directly
    pass
