"""Quality signals that need no judge, for open-ended prompts on a CPU.

- ``short-answer``: the format a naming prompt asks for ("Name a fruit. Answer with the name only."): 1 for
  an answer of at most ``max_words`` words, ``max_words / words`` for a longer one, 0 for an empty one. Format
  only: a made-up word scores 1. Measured, SmolLM2-135M learns it in about five steps and then every group
  scores 1, so GRPO has nothing left to sharpen and never collapses. With ``strict`` (``--strict-length``) a
  longer answer scores 0: a padded answer ("Red is my favourite colour", a class of its own for a weak classifier)
  is then no cheap way to a new answer, and a policy that drifts to long answers loses their reward at once
  instead of keeping ``max_words / words`` of it.
- ``relevant-short-answer``: the format score times the answer's *relevance* to the prompt, the cosine of
  their mean-pooled all-MiniLM-L6-v2 embeddings (the packaged, untrained encoder; clipped at 0). Measured on
  "Name a fruit.": Strawberry 0.59, Banana 0.57, Apple 0.41, made-up words 0.16-0.33. An answer that repeats a
  word of four or more letters of the prompt ("Fruit", "The fruit is an apple") scores 0: echoing the prompt
  would otherwise score highest. A proxy for "a real answer", not a check of one; maximising it favours the
  few most typical answers, the pressure under which plain GRPO narrows its answers.
- ``item-sentence``: for the item prompts (``items-train``, ``items-heldout``: "Name a planet of the solar system.
  Answer with one full sentence."): 1 for one or two sentences that name a member of the prompt's category, else 0
  (``darling.core.items``: membership and format by rule, no model).
- ``world``: for the world's prompts (``world-train``, ``world-heldout``: "name a fruit :"): 1 for a well-formed
  answer (a template of the world filled with one member) naming a member of the category, else 0
  (``darling.core.world``: by rule, no model).
- ``item-phrase``: for the phrase form (``items-phrase-train``, ``items-phrase-heldout``: "... Answer with a short
  phrase of a few words."): 1 for 2 to 8 words on one line naming a member of the category, else 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from darling.core.encoders import load_backbone_encoder, pool, resolve_backbone
from darling.core.items import item_phrase_qualities, item_sentence_qualities
from darling.core.world import world_qualities

QUALITIES = ("math", "short-answer", "relevant-short-answer", "item-sentence", "item-phrase", "world")
RELEVANCE_ENCODER = "packaged:all-MiniLM-L6-v2"
_PUNCTUATION = re.compile(r"[^\w\s]")


def short_answer_quality(text: str, max_words: int = 4, strict: bool = False) -> float:
    """1 for a non-empty answer of at most ``max_words`` words, ``max_words / words`` beyond (``strict``: 0 beyond),
    0 when empty."""
    words = text.split()
    if not words or (strict and len(words) > max_words):
        return 0.0
    return min(1.0, max_words / len(words))


def short_answer_qualities(completions: Sequence[str], max_words: int = 4, strict: bool = False) -> list[float]:
    return [short_answer_quality(text, max_words, strict) for text in completions]


def normalised_answer(text: str) -> str:
    """Lower-cased words without punctuation: "The Nile." and "the nile" are one answer."""
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def distinct_answers(texts: Sequence[str]) -> int:
    """Distinct normalised answers: a classifier-free count of a group's different answers."""
    return len({normalised_answer(t) for t in texts})


def echoes_prompt(prompt: str, answer: str) -> bool:
    """True when the answer repeats a word of at least four letters of the prompt."""
    words = {w for w in normalised_answer(prompt).split() if len(w) >= 4}
    return any(w in words for w in normalised_answer(answer).split())


class Relevance:
    """Cosine of mean-pooled, normalised embeddings of the prompt and the answer (clipped at 0), 0 for an
    answer that echoes the prompt; embedded with the packaged untrained MiniLM (``RELEVANCE_ENCODER``)."""

    def __init__(self, encoder: str = RELEVANCE_ENCODER, batch_size: int = 64, device: str | None = None):
        from transformers import AutoTokenizer

        path = resolve_backbone(encoder)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = load_backbone_encoder(path).to(device or "cpu").eval()
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]):
        import torch

        chunks = []
        with torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(
                    list(texts[start : start + self.batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=128,
                    return_tensors="pt",
                )
                batch = batch.to(self.model.device)
                hidden = self.model(**batch).last_hidden_state
                pooled = pool(hidden, batch["attention_mask"], "mean").float().cpu()
                chunks.append(torch.nn.functional.normalize(pooled, dim=-1))
        return torch.cat(chunks)

    def __call__(self, prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
        unique = sorted(set(prompts))
        prompt_vectors = self.embed(unique)
        row = {p: i for i, p in enumerate(unique)}
        answer_vectors = self.embed([a.strip() or " " for a in answers])
        scores = []
        for i, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
            cos = float(answer_vectors[i] @ prompt_vectors[row[prompt]])
            scores.append(0.0 if not answer.strip() or echoes_prompt(prompt, answer) else max(0.0, min(1.0, cos)))
        return scores


class RelevantShortAnswer:
    """``relevant-short-answer``: format score x relevance (see the module docstring)."""

    def __init__(self, max_words: int = 4, relevance: Relevance | None = None, strict: bool = False):
        self.max_words = max_words
        self.strict = strict
        self.relevance = relevance or Relevance()

    def __call__(self, prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
        relevance = self.relevance(prompts, answers)
        format_scores = short_answer_qualities(answers, self.max_words, self.strict)
        return [f * r for f, r in zip(format_scores, relevance, strict=True)]


def open_ended_quality(name: str, max_words: int = 4, device: str | None = None, strict: bool = False):
    """``(prompts, answers) -> qualities`` for an open-ended quality by name (not ``math``); ``device``: where
    relevant-short-answer's encoder runs (default cpu); ``strict``: an answer over ``max_words`` words scores 0."""
    if name == "relevant-short-answer":
        return RelevantShortAnswer(max_words, Relevance(device=device), strict)
    if name == "short-answer":
        return lambda prompts, answers: short_answer_qualities(answers, max_words, strict)
    if name == "item-sentence":
        return item_sentence_qualities
    if name == "item-phrase":
        return item_phrase_qualities
    if name == "world":
        return world_qualities
    raise ValueError(f"{name!r} is not an open-ended quality (choose {', '.join(QUALITIES[1:])})")
