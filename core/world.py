"""The world: a small language where the truth is known. A prompt names a category ("name a fruit :"); an answer
names one of its 12 invented members in one of a few templates ("i pick vopi .", "vopi , of course ."). Which
member an answer names is its meaning, read off by rule (``members_named``: the ``world`` checker); the template is its
wording, independent of the member. So a partition of a prompt's answers can be scored against the exact one, and a
policy small enough to train to the end on two cores (``darling world pretrain``) can be born in it.

The data (categories, members, each wording's templates) is ``darling.core.world_data``. The prompts ship as the
packaged sets ``world-train`` (32 categories) and ``world-heldout`` (16), split once by a seeded shuffle
(``world_prompt_sets``): the held-out categories are in the pretraining corpus, never in RL.

Quality (``world_quality``): 1 for a well-formed answer (one template of any wording, filled with one member)
naming a member of the prompt's category, else 0; an answer naming another category's member is well formed and
wrong. No model reads anything here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache

from darling.core.lexical import NGRAM_ORDER, NGRAM_THRESHOLD, ngram_jaccard
from darling.core.world_data import CATEGORIES, WORDINGS

WORLD_PROMPT = "name {article} {category} :"
SLOT = "{member}"
DEFAULT_WORDING = "plain"
HELDOUT_CATEGORIES, SPLIT_SEED = 16, 82  # the split of the packaged prompt sets, made once
WORLD_SETS = ("world-train", "world-heldout")


def world_prompt(category: str) -> str:
    article = "an" if category[0] in "aeiou" else "a"
    return WORLD_PROMPT.format(article=article, category=category)


@cache
def _category_by_prompt() -> dict[str, str]:
    return {world_prompt(category): category for category in CATEGORIES}


def category_of(prompt: str) -> str | None:
    """The category a world prompt names, None for any other prompt."""
    return _category_by_prompt().get(" ".join(prompt.split()))


@cache
def member_category() -> dict[str, str]:
    """Every member -> its category (each name belongs to one category)."""
    return {member: category for category, members in CATEGORIES.items() for member in members}


def world_members_named(answer: str) -> list[str]:
    """Every member of any category the answer names, in order of first mention."""
    owner = member_category()
    return list(dict.fromkeys(word for word in answer.split() if word in owner))


def members_named(category: str, answer: str) -> list[str]:
    """The members of ``category`` the answer names, in order of first mention (the ``world`` checker's keys)."""
    return [m for m in world_members_named(answer) if member_category()[m] == category]


@cache
def all_templates() -> frozenset[str]:
    return frozenset(template for templates in WORDINGS.values() for template in templates)


def template_of(answer: str) -> str | None:
    """The template an answer fills (its member replaced by the slot), None unless it names exactly one member once
    and is a template of some wording, word for word."""
    words = answer.split()
    owner = member_category()
    places = [i for i, word in enumerate(words) if word in owner]
    if len(places) != 1:
        return None
    words[places[0]] = SLOT
    template = " ".join(words)
    return template if template in all_templates() else None


def world_quality(prompt: str, answer: str) -> float:
    """1 for a well-formed answer naming a member of the prompt's category, else 0 (ValueError on a prompt that is
    not a world prompt: the rule has no answer there)."""
    category = category_of(prompt)
    if category is None:
        raise ValueError(f"not a world prompt (expected {WORLD_PROMPT!r}): {prompt[:80]!r}")
    if template_of(answer) is None:
        return 0.0
    return 1.0 if members_named(category, answer) else 0.0


def world_qualities(prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
    return [world_quality(p, a) for p, a in zip(prompts, answers, strict=True)]


def fill(template: str, member: str) -> str:
    return template.replace(SLOT, member)


def hides_member(template: str, n: int = NGRAM_ORDER, threshold: float = NGRAM_THRESHOLD) -> bool:
    """Whether the word n-gram rule (DARLING's lexical ablation) calls two answers of this template the same answer
    when they name different members: most of the template's n-grams leave the member out."""
    a, b = fill(template, "member"), fill(template, "other")
    return ngram_jaccard(a, b, n) >= threshold


def hidden_share(wording: str) -> float:
    """The share of a wording's templates that hide the member from the 4-gram rule."""
    templates = WORDINGS[wording]
    return sum(hides_member(t) for t in templates) / len(templates)


def world_split(heldout: int = HELDOUT_CATEGORIES, seed: int = SPLIT_SEED) -> dict[str, list[str]]:
    """The categories of each packaged set: a seeded shuffle, ``heldout`` of them held out from RL."""
    keys = sorted(CATEGORIES)
    random.Random(seed).shuffle(keys)
    return {"world-heldout": sorted(keys[:heldout]), "world-train": sorted(keys[heldout:])}


def world_prompt_sets() -> dict[str, list[dict[str, str]]]:
    """The packaged ``world-train`` / ``world-heldout`` records (the shipped files are this function's output; a test
    keeps them so)."""
    return {
        name: [{"id": f"{name}-{key}", "category": key, "prompt": world_prompt(key)} for key in keys]
        for name, keys in world_split().items()
    }
