"""Item-sentence prompts: an answer is a sentence around one item of a closed, listable category.

"Name a planet of the solar system. Answer with one full sentence." The prompt asks for a name, so the name is the
answer's meaning; the sentence around it is wording ("Mars is the fourth planet.", "I would pick Mars, the red
one."). The item, read off by rule, gives a count of distinct answers that no classifier decides
(``distinct_items``), while the wording gives an n-gram rule something to be fooled by: two sentences naming Mars
share few 4-grams. (A prompt that also asks for a fact about the item would make two facts two answers.) Each
category's members are listed with their aliases, so both the extraction and the membership check are exact
(``item_of``).

The prompts ship as the packaged sets ``items-train`` and ``items-heldout`` (datagen/resources/prompts), split once
by category; ``ITEM_PROMPT`` is their one template, so a prompt's category is read back from its text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

ITEM_PROMPT = "Name {phrase}. Answer with one full sentence."

# key -> (the phrase the prompt names it by, its members; a member is "Name" or ("Name", "alias", ...)). Names match
# in any case ("the earth"), except those that are also common words in lower case: "may", "march", "cancer".
CATEGORIES: dict[str, tuple[str, tuple]] = {
    "planet": (
        "a planet of the solar system",
        ("Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"),
    ),
    "month": (
        "a month of the year",
        (
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            ("September", "Sept"),
            "October",
            "November",
            "December",
        ),
    ),
    "weekday": ("a day of the week", ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")),
    "zodiac": (
        "a sign of the zodiac",
        (
            "Aries",
            "Taurus",
            "Gemini",
            "Cancer",
            "Leo",
            "Virgo",
            "Libra",
            "Scorpio",
            "Sagittarius",
            "Capricorn",
            "Aquarius",
            "Pisces",
        ),
    ),
    "continent": (
        "a continent",
        ("Africa", "Antarctica", "Asia", ("Australia", "Oceania"), "Europe", "North America", "South America"),
    ),
    "ocean": ("an ocean", ("Pacific", "Atlantic", "Indian Ocean", "Arctic", ("Southern Ocean", "Antarctic Ocean"))),
    "rainbow": ("a colour of the rainbow", ("red", "orange", "yellow", "green", "blue", "indigo", "violet")),
    "noble-gas": ("a noble gas", ("helium", "neon", "argon", "krypton", "xenon", "radon", "oganesson")),
    "olympian": (
        "one of the Olympian gods",
        (
            "Zeus",
            "Hera",
            "Poseidon",
            "Demeter",
            "Athena",
            "Apollo",
            "Artemis",
            "Ares",
            "Aphrodite",
            "Hephaestus",
            "Hermes",
            ("Dionysus", "Dionysos"),
            "Hestia",
        ),
    ),
    "beatle": (
        "a member of the Beatles",
        (
            ("John Lennon", "Lennon"),
            ("Paul McCartney", "McCartney"),
            ("George Harrison", "Harrison"),
            ("Ringo Starr", "Ringo"),
        ),
    ),
    "great-lake": (
        "one of the Great Lakes of North America",
        ("Lake Superior", "Lake Michigan", "Lake Huron", "Lake Erie", "Lake Ontario"),
    ),
    "chess-piece": ("a chess piece", ("king", "queen", ("rook", "castle"), "bishop", "knight", "pawn")),
    "sense": ("one of the five senses", (("sight", "vision"), "hearing", "smell", "taste", "touch")),
    "season": ("a season of the year", ("spring", "summer", ("autumn", "fall"), "winter")),
    "south-america": (
        "a country in South America",
        (
            "Argentina",
            "Bolivia",
            "Brazil",
            "Chile",
            "Colombia",
            "Ecuador",
            "Guyana",
            "Paraguay",
            "Peru",
            "Suriname",
            "Uruguay",
            "Venezuela",
        ),
    ),
    "wonder": (
        "one of the Seven Wonders of the Ancient World",
        (
            ("Great Pyramid of Giza", "Great Pyramid", "Pyramid of Giza", "Pyramids of Giza"),
            ("Hanging Gardens of Babylon", "Hanging Gardens"),
            ("Statue of Zeus",),
            ("Temple of Artemis",),
            ("Mausoleum at Halicarnassus", "Mausoleum"),
            ("Colossus of Rhodes", "Colossus"),
            ("Lighthouse of Alexandria", "Pharos"),
        ),
    ),
    "alkali-metal": (
        "an alkali metal",
        ("lithium", "sodium", "potassium", "rubidium", ("caesium", "cesium"), "francium"),
    ),
    "card-suit": (
        "a suit of playing cards",
        (("hearts", "heart"), ("diamonds", "diamond"), ("clubs", "club"), ("spades", "spade")),
    ),
    "pacific-state": ("a US state on the Pacific coast", ("California", "Oregon", "Washington", "Alaska", "Hawaii")),
    "nordic": ("a Nordic country", ("Denmark", "Finland", "Iceland", "Norway", "Sweden")),
    "g7": (
        "a member country of the G7",
        (
            "Canada",
            "France",
            "Germany",
            "Italy",
            "Japan",
            ("United Kingdom", "UK", "Britain"),
            ("United States", "USA", "America"),
        ),
    ),
    "galilean-moon": ("one of Jupiter's Galilean moons", ("Io", "Europa", "Ganymede", "Callisto")),
    "tragedy": (
        "a tragedy by Shakespeare",
        (
            "Hamlet",
            "Macbeth",
            ("King Lear", "Lear"),
            "Othello",
            "Romeo and Juliet",
            "Julius Caesar",
            "Antony and Cleopatra",
            "Coriolanus",
            "Titus Andronicus",
        ),
    ),
    "hogwarts": ("a house of Hogwarts", ("Gryffindor", "Hufflepuff", "Ravenclaw", "Slytherin")),
    "light-element": (
        "one of the first ten chemical elements",
        ("hydrogen", "helium", "lithium", "beryllium", "boron", "carbon", "nitrogen", "oxygen", "fluorine", "neon"),
    ),
    "polygon": (
        "a polygon with three to eight sides",
        (
            "triangle",
            ("square", "quadrilateral", "rectangle"),
            "pentagon",
            "hexagon",
            ("heptagon", "septagon"),
            "octagon",
        ),
    ),
}
# A sentence or two, as the prompt asks: fewer words is a bare name, more is an essay.
MIN_WORDS, MAX_WORDS, MAX_SENTENCES = 5, 40, 2


@dataclass(frozen=True)
class Category:
    key: str
    phrase: str
    members: tuple[tuple[str, ...], ...]  # each: the canonical name first, then its aliases

    @property
    def prompt(self) -> str:
        return ITEM_PROMPT.format(phrase=self.phrase)


@cache
def categories() -> dict[str, Category]:
    return {
        key: Category(key, phrase, tuple((m,) if isinstance(m, str) else tuple(m) for m in members))
        for key, (phrase, members) in CATEGORIES.items()
    }


@cache
def _category_by_prompt() -> dict[str, Category]:
    return {c.prompt: c for c in categories().values()}


def category_of(prompt: str) -> Category | None:
    """The category an item prompt names (its text is ``ITEM_PROMPT``'s), None for any other prompt."""
    return _category_by_prompt().get(prompt.strip())


CASE_SENSITIVE = frozenset({"May", "March", "Cancer", "Io", "Lear", "Sept", "UK", "USA"})


@cache
def _pattern(name: str) -> re.Pattern:
    flags = 0 if name in CASE_SENSITIVE else re.IGNORECASE
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", flags)


def item_of(category: Category, answer: str) -> str | None:
    """The member the answer names first (its canonical name), None when it names none. "Mars is smaller than
    Earth" is about Mars: the earliest mention wins, a longer name at the same place before a shorter one."""
    found = []
    for member in category.members:
        for name in member:
            m = _pattern(name).search(answer)
            if m:
                found.append((m.start(), -len(name), member[0]))
    return min(found)[2] if found else None


def sentence_count(text: str) -> int:
    return len([s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()])


def item_sentence_quality(prompt: str, answer: str) -> float:
    """1 for an answer that names a member of the prompt's category in one or two sentences of ``MIN_WORDS`` to
    ``MAX_WORDS`` words, else 0. No classifier and no model: format and membership by rule."""
    category = category_of(prompt)
    if category is None:
        raise ValueError(f"not an item prompt (expected {ITEM_PROMPT!r}): {prompt[:80]!r}")
    words = len(answer.split())
    if not MIN_WORDS <= words <= MAX_WORDS or sentence_count(answer) > MAX_SENTENCES:
        return 0.0
    return 1.0 if item_of(category, answer) else 0.0


def item_sentence_qualities(prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
    return [item_sentence_quality(p, a) for p, a in zip(prompts, answers, strict=True)]


def distinct_items(prompt: str, answers: Sequence[str]) -> int:
    """Distinct category members the answers name: a count of different answers that no classifier decides.
    Answers naming no member add nothing (they are not a new item)."""
    category = category_of(prompt)
    if category is None:
        raise ValueError(f"not an item prompt (expected {ITEM_PROMPT!r}): {prompt[:80]!r}")
    return len({item for a in answers if (item := item_of(category, a)) is not None})


def item_prompt_sets(heldout: int = 8, seed: int = 13) -> dict[str, list[dict]]:
    """The packaged ``items-train`` / ``items-heldout`` records: the categories split once by a seeded shuffle, so
    no category is in both (the shipped files are this function's output; a test keeps them so)."""
    import random

    keys = sorted(CATEGORIES)
    random.Random(seed).shuffle(keys)
    split = {"items-heldout": sorted(keys[:heldout]), "items-train": sorted(keys[heldout:])}
    return {
        name: [{"id": f"{name}-{key}", "category": key, "prompt": categories()[key].prompt} for key in chosen]
        for name, chosen in split.items()
    }
