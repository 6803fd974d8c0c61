"""A reward model served by vLLM (``--runner pooling --convert classify``), the twin of the in-process
``darling.core.reward_model.RewardModel``, and ``load_reward_model``, the one way to get either.

Same inputs, same tokens, same number: (prompt, response) pairs are tokenised here by ``RewardEncoder`` (the
model's tokenizer and chat template, exactly as in process) and sent as token ids, so the server never
re-tokenises text. vLLM's classify head applies an activation to a one-output model by default (a sigmoid:
``PoolerClassify`` in vllm/model_executor/layers/pooler/activations.py, ``num_labels < 2``); inverting it would lose
the raw score's precision far from 0 (a float32 sigmoid of 10 inverts to within ~1e-3, one of 18 is 1.0 and
inverts to infinity). So each request asks for ``use_activation: false``
(vllm/entrypoints/pooling/base/protocol.py, ``ClassifyRequestMixin``) and gets the model's raw logit in
``probs``. Requests go through the classifier's client (``PoolingClient``): batches over replicas, timeouts,
retries with backoff, failover. A score no replica gives raises ``RewardServerError``: never a reward.

Requirements on the server: it serves the model ``--reward-model`` names (its tokenizer and config are read
here), with ``--max-model-len`` at least the encoder's ``max_length`` (1024 by default; a longer input is
refused, and that refusal raises), and without a ``--pooler-config`` that rescales logits (``logit_mean``,
``logit_sigma``). A text-pair model that marks the response with token types (BERT) cannot be served this way:
a vLLM request carries token ids only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from darling.classifier.client import ClassifierServerError, PoolingClient
from darling.core.errors import UserInputError
from darling.core.reward_model import RewardEncoder, RewardModel


class RewardServerError(ClassifierServerError):
    """The reward-model server could not give a score after all retries and replicas."""


class RewardScorer(Protocol):
    def scores(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]: ...


class RewardClient(PoolingClient):
    """``/classify`` with the activation off: one raw score per pre-encoded input."""

    path = "/classify"
    extra_payload: ClassVar[dict[str, Any]] = {"use_activation": False}  # the raw logit, not its sigmoid

    def _rows(self, item: dict) -> list[float]:
        if len(item["probs"]) != 1:  # a two-class classifier would give P(class 1), not a reward
            raise ClassifierServerError(
                f"the served model has {len(item['probs'])} outputs; a reward model has one (num_labels=1)"
            )
        return item["probs"]

    def score_ids(self, input_ids: Sequence[Sequence[int]]) -> list[float]:
        """Raw scores of pre-encoded inputs, in input order."""
        return [float(x) for x in self.run_ids(input_ids)[:, 0]] if input_ids else []


def servable_encoder(path: str, max_length: int = 1024) -> RewardEncoder:
    """The encoder of a reward model that vLLM can serve with the scores it has in process; a one-line error for one
    it cannot (not one output; a text-pair encoding that marks the response with token types)."""
    encoder = RewardEncoder(path, max_length)
    if encoder.uses_token_types():
        raise UserInputError(
            f"{path}: its text-pair encoding uses token types, which a vLLM request cannot carry; score it in "
            "process (no --reward-model-url), or use a reward model with a chat template"
        )
    return encoder


class ServedRewardModel:
    """``RewardModel.scores`` over vLLM replicas: the tokenizer (and checks) from ``path``, the weights on the
    servers. ``client_options``: ``PoolingClient``'s timeout, max_retries, backoff, max_concurrency."""

    def __init__(
        self, path: str, urls: Sequence[str], batch_size: int = 64, max_length: int = 1024, **client_options: Any
    ):
        self.encoder = servable_encoder(path, max_length)
        self.client = RewardClient(list(urls), batch_size=batch_size, **client_options)

    def scores(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """The model's raw score per pair; raises ``RewardServerError`` when a score cannot be had."""
        ids = self.encoder.encode(prompts, responses)
        try:
            return self.client.score_ids(ids)
        except ClassifierServerError as exc:
            raise RewardServerError(str(exc)) from exc

    def close(self) -> None:
        self.client.close()


def load_reward_model(
    path: str, urls: Sequence[str] = (), device: str | None = None, **client_options: Any
) -> RewardScorer:
    """The reward model ``path`` served by ``urls`` (vLLM replicas) when given, else in this process on
    ``device`` (default cpu); ``client_options`` go to the served client."""
    if urls:
        return ServedRewardModel(path, urls, **client_options)
    return RewardModel(path, device)
