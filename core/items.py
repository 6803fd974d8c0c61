"""Item-sentence prompts: an answer is a sentence around one item of a closed, listable category.

"Name a planet of the solar system. Answer with one full sentence." The prompt asks for a name, so the name is the
answer's meaning; the sentence around it is wording ("Mars is the fourth planet.", "I would pick Mars, the red
one."). The item, read off by rule, gives a count of distinct answers that no classifier decides
(``distinct_items``), while the wording gives an n-gram rule something to be fooled by: two sentences naming Mars
share few 4-grams. (A prompt that also asks for a fact about the item would make two facts two answers.) Each
category's members are listed with their aliases, so both the extraction and the membership check are exact
(``item_of``).

The prompts ship as the packaged sets ``items-train`` and ``items-heldout`` (datagen/resources/prompts), split once
by category; ``ITEM_PROMPT`` is their template (``ITEM_FORMS`` holds both forms'), so a prompt's category is read
back from its text.

The *phrase* form (``items-phrase-train``, ``items-phrase-heldout``: the same categories, the same split) asks for
the member in a short phrase ("Mars, the red planet"): 2 to 8 words, few enough for RL to move at CPU budget, enough
for the wording around the member to vary (``item_phrase_quality``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from darling.core.item_categories import FIRST_CATEGORIES, HELDOUT_CATEGORIES

ITEM_PROMPT = "Name {phrase}. Answer with one full sentence."
ITEM_PHRASE_PROMPT = "Name {phrase}. Answer with a short phrase of a few words."
ITEM_FORMS = {"sentence": ITEM_PROMPT, "phrase": ITEM_PHRASE_PROMPT}  # form -> template; a set's name says its form

# key -> (the phrase the prompt names it by, its members; a member is "Name" or ("Name", "alias", ...)). Names match
# in any case ("the earth"), except those that are also common words in lower case: "may", "march", "cancer".
CATEGORIES = {**FIRST_CATEGORIES, **HELDOUT_CATEGORIES}
# A sentence or two, as the prompt asks: fewer words is a bare name, more is an essay.
MIN_WORDS, MAX_WORDS, MAX_SENTENCES = 5, 40, 2
# A phrase: a bare name leaves no wording to vary (an n-gram rule would then be the checker), a sentence is the
# other form.
PHRASE_MIN_WORDS, PHRASE_MAX_WORDS = 2, 8


@dataclass(frozen=True)
class Category:
    key: str
    phrase: str
    members: tuple[tuple[str, ...], ...]  # each: the canonical name first, then its aliases

    @property
    def prompt(self) -> str:
        return self.prompt_in("sentence")

    def prompt_in(self, form: str) -> str:
        return ITEM_FORMS[form].format(phrase=self.phrase)


@cache
def categories() -> dict[str, Category]:
    return {
        key: Category(key, phrase, tuple((m,) if isinstance(m, str) else tuple(m) for m in members))
        for key, (phrase, members) in CATEGORIES.items()
    }


@cache
def _category_by_prompt() -> dict[str, Category]:
    return {c.prompt_in(form): c for c in categories().values() for form in ITEM_FORMS}


def category_of(prompt: str) -> Category | None:
    """The category an item prompt names (its text is one of ``ITEM_FORMS``'), None for any other prompt."""
    return _category_by_prompt().get(prompt.strip())


def required_category(prompt: str) -> Category:
    """``category_of``, for the rules that have no answer on any other prompt (ValueError naming the forms)."""
    category = category_of(prompt)
    if category is None:
        raise ValueError(f"not an item prompt (expected one of {list(ITEM_FORMS.values())!r}): {prompt[:80]!r}")
    return category


CASE_SENSITIVE = frozenset({"May", "March", "Cancer", "Io", "Lear", "Sept", "UK", "USA", "Mark"})


@cache
def _pattern(name: str) -> re.Pattern:
    flags = 0 if name in CASE_SENSITIVE else re.IGNORECASE
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", flags)


def items_named(category: Category, answer: str) -> list[str]:
    """Every member the answer names (canonical names), in the order of their first mention; at one place a longer
    name before a shorter one ("Lake Superior" before "Superior")."""
    first: dict[str, tuple[int, int]] = {}
    for member in category.members:
        for name in member:
            m = _pattern(name).search(answer)
            if m:
                at = (m.start(), -len(name))
                first[member[0]] = min(first.get(member[0], at), at)
    return sorted(first, key=first.__getitem__)


def item_of(category: Category, answer: str) -> str | None:
    """The member the answer names first (its canonical name), None when it names none. "Mars is smaller than
    Earth" is about Mars: the earliest mention wins, a longer name at the same place before a shorter one."""
    named = items_named(category, answer)
    return named[0] if named else None


def sentence_count(text: str) -> int:
    return len([s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()])


def _item_form_quality(prompt: str, answer: str, words: tuple[int, int], max_sentences: int) -> float:
    """1 for an answer of ``words`` (min, max) words in at most ``max_sentences`` sentences that names a member of
    the prompt's category, else 0: the one rule of both forms, format and membership, no model."""
    category = required_category(prompt)
    low, high = words
    if not low <= len(answer.split()) <= high or sentence_count(answer) > max_sentences:
        return 0.0
    return 1.0 if item_of(category, answer) else 0.0


def item_sentence_quality(prompt: str, answer: str) -> float:
    """1 for an answer that names a member of the prompt's category in one or two sentences of ``MIN_WORDS`` to
    ``MAX_WORDS`` words, else 0. No classifier and no model: format and membership by rule."""
    return _item_form_quality(prompt, answer, (MIN_WORDS, MAX_WORDS), MAX_SENTENCES)


def item_sentence_qualities(prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
    return [item_sentence_quality(p, a) for p, a in zip(prompts, answers, strict=True)]


def item_phrase_quality(prompt: str, answer: str) -> float:
    """1 for an answer of ``PHRASE_MIN_WORDS`` to ``PHRASE_MAX_WORDS`` words on one line, at most one sentence,
    that names a member of the prompt's category, else 0."""
    text = answer.strip()
    if "\n" in text:
        return 0.0
    return _item_form_quality(prompt, text, (PHRASE_MIN_WORDS, PHRASE_MAX_WORDS), 1)


def item_phrase_qualities(prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
    return [item_phrase_quality(p, a) for p, a in zip(prompts, answers, strict=True)]


def distinct_items(prompt: str, answers: Sequence[str]) -> int:
    """Distinct category members the answers name: a count of different answers that no classifier decides.
    Answers naming no member add nothing (they are not a new item)."""
    category = required_category(prompt)
    return len({item for a in answers if (item := item_of(category, a)) is not None})


def item_prompt_sets(heldout: int = 8, seed: int = 13) -> dict[str, list[dict]]:
    """The packaged ``items-train`` / ``items-heldout`` records and their phrase forms ``items-phrase-train`` /
    ``items-phrase-heldout`` (the shipped files are this function's output; a test keeps them so): issue 49's
    categories split once by a seeded shuffle (``heldout`` of them held out), and every category added since held
    out, so no category is in both and the training prompts never change."""
    import random

    keys = sorted(FIRST_CATEGORIES)
    random.Random(seed).shuffle(keys)
    # the first held-out categories first, as shipped before: a run that read the first 8 reads the same 8
    split = {
        "items-heldout": [*sorted(keys[:heldout]), *sorted(HELDOUT_CATEGORIES)],
        "items-train": sorted(keys[heldout:]),
    }
    sets = {}
    for form in ITEM_FORMS:
        for part, chosen in split.items():
            name = part if form == "sentence" else part.replace("items-", f"items-{form}-")
            sets[name] = [
                {"id": f"{name}-{key}", "category": key, "prompt": categories()[key].prompt_in(form)} for key in chosen
            ]
    return sets
