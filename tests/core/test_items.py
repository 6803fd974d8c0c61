"""The item prompts (darling.core.items): a sentence around one member of a closed category, the member read off by
rule. The extraction, the quality that needs no model, the classifier-free count, and the packaged prompt sets."""

import gzip
import json

import pytest
from helpers import REPO

from darling.core.item_categories import FIRST_CATEGORIES, HELDOUT_CATEGORIES
from darling.core.items import (
    CATEGORIES,
    categories,
    category_of,
    distinct_items,
    item_of,
    item_phrase_quality,
    item_prompt_sets,
    item_sentence_quality,
)
from darling.core.quality import open_ended_quality
from darling.datagen.problems import load_problems
from darling.evals.novelty_prompts import load_prompts

PLANET = categories()["planet"].prompt


def test_the_item_is_the_first_member_named_by_any_of_its_names():
    planet, month, wonder = (categories()[k] for k in ("planet", "month", "wonder"))
    assert item_of(planet, "Mars is smaller than Earth, and redder.") == "Mars"
    assert item_of(planet, "Unlike Mars, the earth has liquid oceans.") == "Mars"
    assert item_of(planet, "The earth has liquid oceans.") == "Earth"  # any case for a name that is no common word
    assert item_of(planet, "Pluto used to be counted.") is None
    assert item_of(month, "You may like the spring.") is None  # "may" in lower case is the verb
    assert item_of(month, "In Sept the leaves turn.") == "September"  # an alias gives the canonical name
    # a longer name at the same place wins over a shorter one inside it
    assert item_of(wonder, "The Great Pyramid of Giza is the oldest.") == "Great Pyramid of Giza"
    assert item_of(wonder, "Ptolemy built the Pharos.") == "Lighthouse of Alexandria"
    assert item_of(categories()["noble-gas"], "Neonatal care") is None  # whole words only


def test_quality_is_format_and_membership_by_rule():
    assert item_sentence_quality(PLANET, "Jupiter is the largest planet in the solar system.") == 1.0
    assert item_sentence_quality(PLANET, "Jupiter.") == 0.0  # a bare name is not a sentence about it
    assert item_sentence_quality(PLANET, "Pluto is a small icy world far beyond the others.") == 0.0
    long = "Saturn has rings. " * 3
    assert item_sentence_quality(PLANET, long.strip()) == 0.0  # three sentences
    assert item_sentence_quality(PLANET, "Saturn " + "and its rings " * 15) == 0.0  # over 40 words
    score = open_ended_quality("item-sentence")  # the name rl-train and eval compare take
    assert score([PLANET, PLANET], ["Venus is the hottest planet of all.", "A nice day."]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="not an item prompt"):
        item_sentence_quality("Name a fruit. Answer with the name only.", "Apple is a fruit.")


def test_distinct_items_counts_members_not_wordings():
    answers = [
        "Mars is red because of iron oxide on its surface.",
        "The planet Mars has two small moons.",  # another wording, the same item
        "Venus spins backwards compared with most planets.",
        "My favourite thing is the sky.",  # names no member: no new item
    ]
    assert distinct_items(PLANET, answers) == 2
    assert category_of(PLANET).key == "planet" and category_of("Name a planet.") is None


def test_the_phrase_form_asks_for_a_member_in_a_few_words_and_is_read_as_its_category():
    """items-phrase-*: the same categories and split, another form; its quality wants 2-8 words naming a member (a
    bare name leaves no wording to vary, a sentence is the other form)."""
    phrase = categories()["planet"].prompt_in("phrase")
    assert phrase == "Name a planet of the solar system. Answer with a short phrase of a few words."
    assert category_of(phrase).key == "planet" and distinct_items(phrase, ["Mars, the red one", "red Mars"]) == 1
    assert item_phrase_quality(phrase, "Mars, the red planet") == 1.0
    assert item_phrase_quality(phrase, "  the ringed giant Saturn\n") == 1.0  # surrounding whitespace is no line
    for answer in (
        "Mars",
        "Pluto, the small one",
        "Mars is the fourth planet from the sun in our solar system.",
        "Mars.\nVenus.",
        "Mars. It is red.",
    ):
        assert item_phrase_quality(phrase, answer) == 0.0, answer
    assert open_ended_quality("item-phrase")([phrase], ["Mars, the red planet"]) == [1.0]
    with pytest.raises(ValueError, match="not an item prompt"):
        item_phrase_quality("Name a fruit.", "an apple")
    sets = item_prompt_sets()
    for part in ("train", "heldout"):
        sentence, short = sets[f"items-{part}"], sets[f"items-phrase-{part}"]
        assert [r["category"] for r in short] == [r["category"] for r in sentence]
        assert all(r["prompt"].endswith("a short phrase of a few words.") for r in short)
    assert [p.problem for p in load_problems("items-phrase-train")] == [r["prompt"] for r in sets["items-phrase-train"]]


def test_packaged_prompt_sets_are_the_categories_split_once():
    sets = item_prompt_sets()
    for name, rows in sets.items():
        path = REPO / "datagen" / "resources" / "prompts" / f"{name}.jsonl.gz"
        with gzip.open(path, "rt") as fh:
            assert [json.loads(line) for line in fh] == rows  # the shipped file is the split
    train, heldout = ({r["category"] for r in sets[n]} for n in ("items-train", "items-heldout"))
    assert not train & heldout and train | heldout == set(CATEGORIES)
    # issue 49's split kept (18 training, its 8 held out first), every category added since held out: >= 24 held out
    assert len(train) == 18 and len(heldout) >= 24
    assert [r["category"] for r in sets["items-heldout"][:8]] == sorted(set(FIRST_CATEGORIES) - train)
    assert HELDOUT_CATEGORIES.keys() <= heldout
    # loadable by name where prompts are read: rl-train's problems and eval novelty's prompts
    assert [p.problem for p in load_problems("items-train")] == [r["prompt"] for r in sets["items-train"]]
    loaded = load_prompts("items-heldout")
    assert [(p.prompt_id, p.category) for p in loaded] == [(r["id"], r["category"]) for r in sets["items-heldout"]]
    assert all(category_of(p.prompt) is not None for p in loaded)


def test_every_name_of_every_member_is_read_back_as_that_member():
    """No member is shadowed by another's name or alias, in any category (the added ones included)."""
    for category in categories().values():
        for member in category.members:
            for name in member:
                assert item_of(category, f"I would pick {name} here.") == member[0], (category.key, name)
