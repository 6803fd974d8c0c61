"""A reward model: a Hugging Face sequence classifier with one output scoring (prompt, response).

Shared by ``darling rl-train`` (quality = sigmoid of the score, so that quality x diversity stays in [0, 1])
and ``darling eval novelty`` (scores mapped to 1..10 by NoveltyBench's cut points). ``RewardEncoder`` is the one
place (prompt, response) becomes token ids: the in-process model and the vLLM-served one (``ServedRewardModel``,
below) both use it, so both score the same tokens; ``load_reward_model`` is the one way to get either.

Served: the same inputs, tokens and number: (prompt, response) pairs are tokenised here by ``RewardEncoder`` (the
model's tokenizer and chat template, exactly as in process) and sent as token ids, so the server never re-tokenises
text. vLLM's classify head applies an activation to a one-output model by default (a sigmoid: ``PoolerClassify`` in
vllm/model_executor/layers/pooler/activations.py, ``num_labels < 2``); inverting it would lose the raw score's
precision far from 0 (a float32 sigmoid of 10 inverts to within ~1e-3, one of 18 is 1.0 and inverts to infinity). So
each request asks for ``use_activation: false`` (vllm/entrypoints/pooling/base/protocol.py,
``ClassifyRequestMixin``) and gets the model's raw logit in ``probs``. Requests go through
``darling.core.pooling_client`` (the classifier's client too): batches over replicas, timeouts, retries with
backoff, failover. A score no replica gives raises ``RewardServerError``: never a reward.

Requirements on the server: it serves the model ``--reward-model`` names (its tokenizer and config are read
here), with ``--max-model-len`` at least the encoder's ``max_length`` (1024 by default; a longer input is
refused, and that refusal raises), and without a ``--pooler-config`` that rescales logits (``logit_mean``,
``logit_sigma``). A text-pair model that marks the response with token types (BERT) cannot be served this way:
a vLLM request carries token ids only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer, resolve_model
from darling.core.pooling_client import PoolingClient, PoolingServerError


class RewardEncoder:
    """(prompt, response) -> token ids for a one-output reward model. A tokenizer with a chat template gets the
    user/assistant conversation, as NoveltyBench scores; one without (BERT-like) gets the text pair. Truncated on
    the right to ``max_length`` (at most the tokenizer's own limit)."""

    def __init__(self, path: str, max_length: int = 1024):
        from transformers import AutoConfig

        self.path = resolve_model(path)  # tiny:reward and other aliases
        try:
            labels = AutoConfig.from_pretrained(self.path).num_labels
        except OSError as exc:
            raise UserInputError(f"{path}: cannot load the reward model ({exc})") from None
        if labels != 1:
            raise UserInputError(f"{path}: a reward model needs exactly one output (num_labels=1), it has {labels}")
        self.tokenizer = load_tokenizer(self.path)
        if self.tokenizer.pad_token is None:  # decoder reward models: pad with EOS (the model is told, too)
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_length = min(max_length, self.tokenizer.model_max_length)

    def batch(self, prompts: Sequence[str], responses: Sequence[str], **kwargs: Any):
        """The tokenizer's ``BatchEncoding`` of the pairs; ``kwargs`` (padding, tensors) change only the layout,
        never which tokens an input gets: truncation is per input."""
        kwargs = dict(truncation=True, max_length=self.max_length, **kwargs)
        if self.tokenizer.chat_template:
            convs = [
                [{"role": "user", "content": p}, {"role": "assistant", "content": r}]
                for p, r in zip(prompts, responses, strict=True)
            ]
            texts = self.tokenizer.apply_chat_template(convs, tokenize=False)
            return self.tokenizer(texts, add_special_tokens=False, **kwargs)  # the template has its BOS
        return self.tokenizer(list(prompts), list(responses), **kwargs)

    def encode(self, prompts: Sequence[str], responses: Sequence[str]) -> list[list[int]]:
        """Token ids per pair, unpadded (what a served model is sent)."""
        return [list(ids) for ids in self.batch(prompts, responses)["input_ids"]]

    def uses_token_types(self) -> bool:
        """True when the text-pair encoding marks the response with token types (BERT): token ids alone, all a
        vLLM request carries, would then not be the input the model scores in process."""
        if self.tokenizer.chat_template:
            return False
        types = self.batch(["a"], ["b"]).get("token_type_ids")
        return bool(types and any(any(row) for row in types))


class RewardModel:
    """A one-output HF sequence classifier scoring (prompt, response) in this process (encoding:
    ``RewardEncoder``), in the checkpoint's dtype unless ``dtype`` names another (``serve-reward-model --check``
    scores in the dtype the replicas serve)."""

    def __init__(
        self, path: str, device: str | None = None, batch_size: int = 8, max_length: int = 1024, dtype: str = "auto"
    ):
        from transformers import AutoModelForSequenceClassification

        self.encoder = RewardEncoder(path, max_length)
        self.tokenizer = self.encoder.tokenizer
        self.model = (
            AutoModelForSequenceClassification.from_pretrained(self.encoder.path, dtype=dtype)
            .to(device or "cpu")
            .eval()
        )
        self.model.config.pad_token_id = self.tokenizer.pad_token_id  # where the last real token is, per row
        self.batch_size, self.max_length = batch_size, self.encoder.max_length

    def scores(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """The model's raw score (its one logit) per pair."""
        import torch

        out: list[float] = []
        for start in range(0, len(prompts), self.batch_size):
            ps, rs = prompts[start : start + self.batch_size], responses[start : start + self.batch_size]
            batch = self.encoder.batch(ps, rs, padding=True, return_tensors="pt")
            with torch.inference_mode():
                logits = self.model(**batch.to(self.model.device)).logits
            out.extend(logits[:, 0].float().cpu().tolist())
        return out


def sigmoid_quality(scores: Sequence[float]) -> list[float]:
    """Unbounded reward-model scores -> (0, 1): the multiplicative reward needs a non-negative quality."""
    return [1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x)))) for x in scores]


# -- served by vLLM replicas: the same tokens, the raw score from the server ------------------------------------
class RewardServerError(PoolingServerError):
    """The reward-model server could not give a score after all retries and replicas."""


class RewardScorer(Protocol):
    def scores(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]: ...


class RewardClient(PoolingClient):
    """``/classify`` with the activation off: one raw score per pre-encoded input."""

    path = "/classify"
    extra_payload: ClassVar[dict[str, Any]] = {"use_activation": False}  # the raw logit, not its sigmoid

    def _rows(self, item: dict) -> list[float]:
        if len(item["probs"]) != 1:  # a two-class classifier would give P(class 1), not a reward
            raise PoolingServerError(
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
        except PoolingServerError as exc:
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
