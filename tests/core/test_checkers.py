"""Checkers (darling.core.checkers): the key a rule reads off an answer, the exact partition it gives, and the one-line
refusal on prompts it reads no key on."""

import pytest

from darling.classifier.partition import KeyPartition, partition_texts
from darling.core.checkers import get_checker, key_classes
from darling.core.errors import UserInputError
from darling.core.items import categories

PLANET = categories()["planet"].prompt


def test_the_item_checker_reads_the_member_and_partitions_by_it():
    items = get_checker("items")
    answers = ["Mars is red.", "The red planet is Mars.", "I like cats.", "Venus is hot.", "Cats again, sorry."]
    assert items.keys(PLANET, answers) == ["Mars", "Mars", None, "Venus", None]
    # same key one class; no key: a class of its own each (never "the same answer"); numbered by first appearance
    assert key_classes(items.keys(PLANET, answers)) == [0, 0, 1, 2, 3]
    classes, stats = partition_texts([answers], KeyPartition(items), prompts=[PLANET])
    assert classes == [[0, 0, 1, 2, 3]] and stats.pairs_decided == 0 and stats.pairs_total == 10
    with pytest.raises(ValueError, match="reads each group's prompt"):
        partition_texts([answers], KeyPartition(items))


def test_prompts_without_a_key_are_refused_in_one_line():
    items = get_checker("items")
    with pytest.raises(UserInputError, match=r"naming-train: prompt 2 \('Name a fruit.*has no items checker"):
        items.require([PLANET, "Name a fruit. Answer with the name only."], "naming-train")
    with pytest.raises(UserInputError, match="reads no key"):
        items.key("Name a fruit.", "Apple.")
    with pytest.raises(UserInputError, match="unknown checker 'math'"):
        get_checker("math")
