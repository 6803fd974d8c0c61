"""A reward model: a Hugging Face sequence classifier with one output scoring (prompt, response).

Shared by ``darling rl-train`` (quality = sigmoid of the score, so that quality x diversity stays in [0, 1])
and ``darling eval novelty`` (scores mapped to 1..10 by NoveltyBench's cut points).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from darling.core.errors import UserInputError


class RewardModel:
    """A one-output HF sequence classifier scoring (prompt, response). A tokenizer with a chat template gets
    the user/assistant conversation, as NoveltyBench scores; one without (BERT-like) gets the text pair."""

    def __init__(self, path: str, device: str | None = None, batch_size: int = 8, max_length: int = 1024):
        from transformers import AutoConfig, AutoModelForSequenceClassification

        from darling.core.local_models import load_tokenizer

        try:
            labels = AutoConfig.from_pretrained(path).num_labels
        except OSError as exc:
            raise UserInputError(f"{path}: cannot load the reward model ({exc})") from None
        if labels != 1:
            raise UserInputError(f"{path}: a reward model needs exactly one output (num_labels=1), it has {labels}")
        self.tokenizer = load_tokenizer(path)
        self.model = AutoModelForSequenceClassification.from_pretrained(path, dtype="auto").to(device or "cpu").eval()
        if self.tokenizer.pad_token is None:  # decoder reward models: pad with EOS, and tell the model
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model.config.pad_token_id = self.tokenizer.pad_token_id
        self.batch_size, self.max_length = batch_size, min(max_length, self.tokenizer.model_max_length)

    def scores(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        import torch

        out: list[float] = []
        for start in range(0, len(prompts), self.batch_size):
            ps, rs = prompts[start : start + self.batch_size], responses[start : start + self.batch_size]
            kwargs = dict(padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
            if self.tokenizer.chat_template:
                convs = [
                    [{"role": "user", "content": p}, {"role": "assistant", "content": r}]
                    for p, r in zip(ps, rs, strict=True)
                ]
                texts = self.tokenizer.apply_chat_template(convs, tokenize=False)
                batch = self.tokenizer(texts, add_special_tokens=False, **kwargs)  # the template has its BOS
            else:
                batch = self.tokenizer(list(ps), list(rs), **kwargs)
            with torch.inference_mode():
                logits = self.model(**batch.to(self.model.device)).logits
            out.extend(logits[:, 0].float().cpu().tolist())
        return out


def sigmoid_quality(scores: Sequence[float]) -> list[float]:
    """Unbounded reward-model scores -> (0, 1): the multiplicative reward needs a non-negative quality."""
    return [1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x)))) for x in scores]
