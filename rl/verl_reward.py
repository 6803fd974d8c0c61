"""The DARLING reward for verl users: a batch ``compute_score`` and a group-aware reward manager.

verl computes rewards for a whole generation batch holding each prompt's ``n`` responses
(``actor_rollout_ref.rollout.n``), but not in prompt order: with ``trainer.balance_batch=True`` (the default)
``RayPPOTrainer._balance_batch`` reorders the rows into sequence-length-balanced partitions
(``get_seqlen_balanced_partitions`` + ``DataProto.reorder``) before the reward hook runs. So rows are grouped
by key wherever they sit, and each result goes back to its own row. Two ways in, both loadable from config
lines alone (README "verl"):

* ``compute_score`` for verl's ``batch`` reward manager (``reward_model.reward_manager=batch`` with
  ``custom_reward_function.path=<this file>``): verl passes lists of data sources, responses, ground truths and
  ``extra_info`` dicts; a group is the rows sharing ``(data_source, extra_info[group_key])`` (``index`` by
  default, which verl's data preprocessing scripts write per prompt).
* ``DarlingRewardManager``: the legacy ``AbstractRewardManager`` interface (``__call__(data,
  return_dict)``), grouping by the ``uid`` verl's trainer gives each prompt before repeating it ``n`` times
  (validation batches of verl 0.4-0.6 have no ``uid``: they group like ``compute_score``).

Validation (``RayPPOTrainer._validate``) calls a reward manager built from the same settings on batches of
``actor_rollout_ref.rollout.val_kwargs.n`` responses per prompt, 1 by default. A group of one is defined: with
nothing to compare it with, a response is maximally distinct (diversity 1), so its reward is its quality.

Settings come as keyword arguments (``reward_model.reward_kwargs`` / ``custom_reward_function.reward_kwargs``):
``classifier`` (exported classifier dir, required), ``classifier_urls`` (vLLM replicas; empty: in process, on
``classifier_device``, default the worker's GPU when it has one), ``threshold``, ``combine``, ``norm``,
``correct_only``, ``floor`` (``correct_only`` needs ``floor`` > 0), ``group_key``, and ``num_generations`` with
``val_num_generations`` (default 1): when ``num_generations`` is given, every group of a batch must hold
``num_generations`` responses (training) or ``val_num_generations`` (validation). ``compute_score`` cannot see
which kind of batch verl passes, so it accepts either size but never a mix; the manager reads verl's
``meta_info["validate"]`` and expects exactly one.

Errors are never turned into rewards: a scorer failure, a group of the wrong size, or a missing setting raises.
(Some reward managers wrap scoring in ``try/except`` and write 0.0; this module does not, and verl's ``batch``
manager of 0.4-0.6 propagates the error.)

verl >= 0.7.1 has no batch reward hook: each rollout is scored alone as it finishes (``AgentLoopWorker.
_compute_score`` sends one sample to a ``RewardLoopWorker`` picked by ``random.choice``), and a reward that
waited there for the rest of its group could deadlock. On those versions ``darling.rl.verl_agent_loop``'s
agent-loop manager applies the reward where a prompt's whole group is in one place; it scores with this module's
``group_scores`` and refuses a wrong trainer config with ``check_trainer_config``. The hooks above serve verl
0.4-0.7.0 (0.7.0 with ``reward_model.use_reward_loop=False``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, cast

from darling.classifier.export import ClassifierExport
from darling.classifier.scoring import load_scorer
from darling.core.devices import resolve_device
from darling.rl.batch_reward import darling_rewards, math_quality
from darling.rl.reward import PARTITIONED, RewardConfig

_SCORERS: dict[tuple, Any] = {}  # one classifier per process: verl calls the reward every step


@dataclass(frozen=True)
class VerlSettings:
    classifier: str | None = None
    classifier_urls: tuple[str, ...] = ()
    threshold: float | None = None
    classifier_device: str | None = None  # in-process classifier: default this worker's accelerator
    darling: RewardConfig = field(default_factory=RewardConfig)  # the reward's own settings, as rl-train's
    num_generations: int | None = None
    val_num_generations: int = 1  # verl's default val_kwargs.n
    group_key: str = "index"

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> VerlSettings:
        """Flat settings (verl's reward kwargs, ``+darling.KEY=VALUE``): the reward's own (``RewardConfig``'s
        fields) go into ``darling``, the rest are where the classifier is and how groups are checked."""
        reward = {f.name for f in fields(RewardConfig)}
        known = ({f.name for f in fields(cls)} - {"darling"}) | reward
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown DARLING reward setting(s) {unknown}; known: {sorted(known)}")
        values = {k: v for k, v in kwargs.items() if k not in reward}
        urls = values.get("classifier_urls") or ()
        values["classifier_urls"] = (urls,) if isinstance(urls, str) else tuple(urls)
        return cls(**values, darling=RewardConfig(**{k: v for k, v in kwargs.items() if k in reward}))

    @classmethod
    def from_config(cls, config: Any) -> VerlSettings:
        """The ``darling`` node of a verl trainer config (``+darling.classifier=DIR`` and the other fields as
        ``+darling.KEY=VALUE`` overrides): how the agent-loop managers of verl >= 0.7.1 get their settings."""
        node = config.get("darling") if config is not None else None
        if not node:
            raise ValueError(
                "the DARLING agent-loop manager needs its settings in the trainer config: add "
                "+darling.classifier=<exported classifier dir> (and, if served, '+darling.classifier_urls=[URL,...]')"
            )
        if isinstance(node, dict):
            values = dict(node)
        else:  # an OmegaConf node (verl's configs are): resolved into plain values, lists for ListConfig
            from omegaconf import OmegaConf

            values = cast("dict[str, Any]", OmegaConf.to_container(node, resolve=True))
        try:
            return cls.from_kwargs(values)
        except TypeError as error:
            raise ValueError(f"darling.*: {error}") from None

    def __post_init__(self) -> None:
        self.darling.check_learning_signal()  # RewardConfig's checks: fail when verl builds the reward, not mid-run

    def group_sizes(self, validate: bool | None) -> tuple[int, ...]:
        """Allowed responses per group: none checked without ``num_generations``; ``validate=None``: unknown."""
        if self.num_generations is None:
            return ()
        if validate is None:
            return (self.num_generations, self.val_num_generations)
        return (self.val_num_generations,) if validate else (self.num_generations,)


def scorer(settings: VerlSettings):
    """The exported classifier (either kind, in-process or served), loaded once per process."""
    if settings.darling.combine not in PARTITIONED:  # quality alone, or pass@k: the reward reads no partition
        return None
    if not settings.classifier:
        raise ValueError("the DARLING reward needs `classifier=<exported classifier dir>` in its reward kwargs")
    key = (settings.classifier, settings.classifier_urls, settings.threshold, settings.classifier_device)
    if key not in _SCORERS:
        served = bool(settings.classifier_urls)
        device = None if served else resolve_device(settings.classifier_device)
        _SCORERS[key] = load_scorer(
            settings.classifier, settings.classifier_urls, threshold=settings.threshold, device=device
        )
    return _SCORERS[key]


def group_rows(keys: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Row indices of each group, wherever they sit; groups in order of first appearance."""
    groups: dict[Hashable, list[int]] = {}
    for row, key in enumerate(keys):
        groups.setdefault(key, []).append(row)
    return groups


def rows_to_score(uids: Sequence[str], n: int, validate: bool) -> list[list[int]]:
    """Each prompt's rows: all ``n`` of them in training (any other count is an error); in validation its first
    ``n``: verl's ``_validate`` pads a batch with copies of its first rows (same uid), cut off after generation."""
    groups = group_rows(uids)
    if not validate:
        odd = [(uid, len(rows)) for uid, rows in groups.items() if len(rows) != n]
        if odd:
            uid, size = odd[0]
            raise ValueError(
                f"prompt uid {uid} has {size} responses, rollout.n is {n}: the DARLING reward needs each "
                "prompt's whole group in one step"
            )
    return [[int(i) for i in rows[:n]] for rows in groups.values()]


def check_group_sizes(groups: dict[Hashable, list[int]], allowed: tuple[int, ...]) -> None:
    """Every group of a batch holds the same number of responses, one of ``allowed`` (nothing checked if empty)."""
    sizes = Counter(len(rows) for rows in groups.values())
    if not allowed or not sizes or (len(sizes) == 1 and next(iter(sizes)) in allowed):
        return
    usual = sizes.most_common(1)[0][0]
    odd = [(key, len(rows)) for key, rows in groups.items() if len(rows) != usual or usual not in allowed]
    shown = ", ".join(f"group {key!r} has {size}" for key, size in odd[:3])
    raise ValueError(
        f"{shown} responses; every group of a batch must have {' or '.join(map(str, sorted(set(allowed))))} "
        "(num_generations for training, val_num_generations for validation): responses were lost or duplicated, "
        "two prompts share a group key, or val_num_generations differs from val_kwargs.n"
    )


def group_scores(
    groups: Sequence[Sequence[str]], quality: Sequence[Sequence[float]], settings: VerlSettings
) -> list[list[dict[str, float]]]:
    """The DARLING reward of whole groups (one per prompt) whose qualities are known: per response ``score`` (the
    reward), ``quality``, ``diversity`` and its group's ``distinct``. Every verl hook ends here, so the reward is the
    same function of (texts, qualities) whichever verl version or trainer calls it."""
    result = darling_rewards(
        [list(g) for g in groups], [[float(q) for q in qs] for qs in quality], scorer(settings), settings.darling
    )
    return [
        [
            {"score": float(r), "quality": float(q), "diversity": float(d), "distinct": float(distinct)}
            for r, q, d in zip(rewards, qs, div, strict=True)
        ]
        for rewards, qs, div, distinct in zip(
            result.rewards, result.quality, result.diversity, result.distinct, strict=True
        )
    ]


def score_groups(
    texts: Sequence[str],
    keys: Sequence[Hashable],
    quality: Sequence[float],
    settings: VerlSettings,
    validate: bool | None = None,
) -> list[dict[str, float]]:
    """``group_scores`` of rows grouped by ``keys`` wherever they sit, returned in the rows' own order."""
    if not (len(texts) == len(keys) == len(quality)):
        raise ValueError("responses, group keys and qualities must have the same length")
    grouped = group_rows(keys)
    check_group_sizes(grouped, settings.group_sizes(validate))
    groups = list(grouped.values())
    scored = group_scores(
        [[texts[i] for i in rows] for rows in groups], [[quality[i] for i in rows] for rows in groups], settings
    )
    scores: list[dict[str, float]] = [{} for _ in texts]
    for rows, group in zip(groups, scored, strict=True):
        for row, score in zip(rows, group, strict=True):
            scores[row] = score
    return scores


def compute_quality(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None, **kwargs: Any
) -> float:
    """The paper's math quality for verl's per-sample reward loop (``reward.custom_reward_function``, verl >= 0.7.1):
    1.0 when math-verify finds ``ground_truth`` in the response, else 0.0. The DARLING agent-loop manager
    (``darling.rl.verl_agent_loop``) multiplies it, or any other reward function's score, by the group's diversity."""
    return math_quality([solution_str], [None if ground_truth is None else str(ground_truth)])[0]


def prompt_keys(data_sources: Sequence[Any], extra_infos: Sequence[dict[str, Any] | None], group_key: str) -> list:
    """``(data_source, extra_info[group_key])`` per row: verl's preprocessing numbers ``index`` per dataset, so
    prompts of two training files can share an index; their data sources tell them apart."""
    missing = [i for i, info in enumerate(extra_infos) if not info or group_key not in info]
    if missing:
        raise ValueError(
            f"rows {missing[:5]} have no extra_info[{group_key!r}]: the DARLING reward groups the n "
            "responses of a prompt by it (set group_key= to another per-prompt field)"
        )
    infos = cast("Sequence[dict[str, Any]]", extra_infos)  # every one a dict: rows without one were refused above
    return [(source, info[group_key]) for source, info in zip(data_sources, infos, strict=True)]


def compute_score(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None],
    **reward_kwargs: Any,
) -> list[dict[str, float]]:
    """verl ``batch`` reward manager entry point: one dict per response, ``score`` is the reward."""
    settings = VerlSettings.from_kwargs(reward_kwargs)
    keys = prompt_keys(data_sources, extra_infos, settings.group_key)
    quality = math_quality(list(solution_strs), [None if g is None else str(g) for g in ground_truths])
    return score_groups(solution_strs, keys, quality, settings)


class DarlingRewardManager:
    """verl's legacy reward-manager interface; groups by ``non_tensor_batch["uid"]`` (one uid per prompt)."""

    def __init__(
        self,
        tokenizer,
        num_examine: int = 0,
        compute_score=None,
        reward_fn_key: str = "data_source",
        **reward_kwargs: Any,
    ):
        self.tokenizer = tokenizer
        self.reward_fn_key = reward_fn_key
        self.settings = VerlSettings.from_kwargs(reward_kwargs)
        scorer(self.settings)  # load (or fail on) the classifier when verl builds the manager, not mid-run

    def group_keys(self, data) -> list:
        if "uid" in data.non_tensor_batch:
            return list(data.non_tensor_batch["uid"])
        # verl 0.4-0.6 `_validate` assigns no uid; its batches keep the dataset's fields.
        extra = data.non_tensor_batch.get("extra_info", [None] * len(data))
        return prompt_keys(data.non_tensor_batch[self.reward_fn_key], extra, self.settings.group_key)

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
        validate = bool(data.meta_info.get("validate", False))
        quality = math_quality(texts, [None if g is None else str(g) for g in truths])
        scores = score_groups(texts, self.group_keys(data), quality, self.settings, validate)
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


EXTRA_KEYS = ("quality", "diversity", "distinct")  # per response, in verl's reward extra info


def check_trainer_config(config: Any, reward_loop_worker_handles: Any) -> VerlSettings:
    """Refuse, when verl builds the manager, what would make the DARLING reward wrong rather than fail mid-run."""
    settings = VerlSettings.from_config(config)
    if settings.darling.combine in PARTITIONED:  # a missing or wrong export fails here, not in the first group's worker
        if not settings.classifier:
            raise ValueError("the DARLING reward needs +darling.classifier=<exported classifier dir>")
        ClassifierExport(settings.classifier)
    if config.algorithm.get("adv_estimator") == "remax":
        raise ValueError("DARLING with adv_estimator=remax: its greedy baseline rows would join the prompts' groups")
    if reward_loop_worker_handles is None:
        raise ValueError(
            "DARLING needs each response's quality from verl's streaming reward loop: a reward model colocated with "
            "the actor (reward.reward_model.enable without enable_resource_pool) scores only after generation"
        )
    return settings
