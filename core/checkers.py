"""Checkers: rules that read a *key* off an answer where the task has one (an item prompt's member, a world
prompt's member; a math final answer could be another), so that two answers with the same key are the same answer
whatever their wording.

Where a task has a checker, it is the truth a pair classifier is measured against and the CPU stand-in for the
paper's 70B judge: ``datagen pairs --checker`` pairs a policy's answers by key, ``datagen label --checker`` labels
them (same key: equivalent; different keys: not; an answer with no key is never paired), an LLM judge run on the same
pairs is scored against it, and the ``checker-ceiling`` arm rewards with its exact partition (the most a classifier
could give on the task, not the method).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from darling.core import world
from darling.core.errors import UserInputError
from darling.core.items import ITEM_FORMS, category_of, items_named


@dataclass(frozen=True)
class Checker:
    name: str
    about: str  # one line, for --help and reports
    prompts: str  # which prompts it reads keys for, for the error on the others
    applies: Callable[[str], bool]  # prompt -> whether its answers carry a key this rule reads
    read_keys: Callable[[str, str], list[str]]  # (prompt, answer) -> every key it names, the first-named first

    def named(self, prompt: str, answer: str) -> list[str]:
        """Every key the answer names, in order of first mention (none: an empty list)."""
        if not self.applies(prompt):
            raise UserInputError(f"the {self.name} checker reads no key on {prompt[:80]!r}: it takes {self.prompts}")
        return self.read_keys(prompt, answer)

    def key(self, prompt: str, answer: str) -> str | None:
        """The answer's key: the first it names (an answer naming several is read by its first, a convention), None
        when it names none."""
        named = self.named(prompt, answer)
        return named[0] if named else None

    def keys(self, prompt: str, answers: Sequence[str]) -> list[str | None]:
        return [self.key(prompt, a) for a in answers]

    def single_key(self, prompt: str, answer: str) -> str | None:
        """The key of an answer that names exactly one, else None: the answers whose pairs carry a label a reader
        would give (two answers each listing three lakes differ or not only by the first-mention convention)."""
        named = self.named(prompt, answer)
        return named[0] if len(named) == 1 else None

    def require(self, prompts: Sequence[str], where: str) -> None:
        """One line naming the first prompt the checker has no key for (``where``: what the prompts are)."""
        for i, prompt in enumerate(prompts):
            if not self.applies(prompt):
                raise UserInputError(
                    f"{where}: prompt {i + 1} ({prompt[:60]!r}) has no {self.name} checker: it takes {self.prompts}"
                )


def _item_keys(prompt: str, answer: str) -> list[str]:
    category = category_of(prompt)
    assert category is not None  # Checker.named asked ``applies`` first
    return items_named(category, answer)


ITEMS = Checker(
    "items",
    "the member of the item prompt's category an answer names (darling.core.items)",
    f"item prompts ({' or '.join(map(repr, ITEM_FORMS.values()))}: items-train, items-heldout, items-phrase-*)",
    lambda prompt: category_of(prompt) is not None,
    _item_keys,
)


def _world_keys(prompt: str, answer: str) -> list[str]:
    category = world.category_of(prompt)
    assert category is not None  # Checker.named asked ``applies`` first
    return world.members_named(category, answer)


WORLD = Checker(
    "world",
    "the member of the world prompt's category an answer names (darling.core.world)",
    f"world prompts ({world.WORLD_PROMPT!r}: {', '.join(world.WORLD_SETS)})",
    lambda prompt: world.category_of(prompt) is not None,
    _world_keys,
)
CHECKERS: dict[str, Checker] = {c.name: c for c in (ITEMS, WORLD)}
CHECKER_NAMES = tuple(CHECKERS)


def get_checker(name: str) -> Checker:
    if name not in CHECKERS:
        raise UserInputError(f"unknown checker {name!r}: choose {', '.join(CHECKER_NAMES)}")
    return CHECKERS[name]


def key_classes(keys: Sequence[str | None]) -> list[int]:
    """The checker's partition of one group: answers with the same key share a class; an answer with no key is a
    class of its own (it is not the same answer as any other). Classes are numbered by first appearance, as the
    union-find partition numbers them."""
    label: dict[object, int] = {}
    return [label.setdefault(key if key is not None else ("no key", i), len(label)) for i, key in enumerate(keys)]
