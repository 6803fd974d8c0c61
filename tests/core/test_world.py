"""The world (darling.core.world): its vocabulary, the member read off by rule (the ``world`` checker), its quality,
how much of each wording a 4-gram rule sees, and the packaged prompt sets."""

import gzip
import json

import pytest
from helpers import REPO

from darling.core.checkers import get_checker, key_classes
from darling.core.lexical import ngram_jaccard
from darling.core.quality import open_ended_quality
from darling.core.world import (
    SLOT,
    category_of,
    fill,
    hidden_share,
    hides_member,
    members_named,
    template_of,
    world_prompt,
    world_prompt_sets,
    world_quality,
)
from darling.core.world_data import CATEGORIES, WORDINGS
from darling.datagen.problems import load_problems
from darling.evals.novelty_prompts import load_prompts
from darling.evals.prompt_metrics import PromptAnswers, metric_columns

FRUIT = world_prompt("fruit")


def test_the_vocabulary_keeps_members_apart_from_every_other_word():
    members = [m for ms in CATEGORIES.values() for m in ms]
    assert len(CATEGORIES) == 48 and {len(ms) for ms in CATEGORIES.values()} == {12}
    assert len(set(members)) == len(members)  # a name belongs to one category
    template_words = {w for ts in WORDINGS.values() for t in ts for w in t.split()}
    prompt_words = {w for c in CATEGORIES for w in world_prompt(c).split()}
    assert not set(members) & (template_words | prompt_words)
    for templates in WORDINGS.values():
        assert len(set(templates)) == len(templates) == 10
        assert all(t.split().count(SLOT) == 1 for t in templates)
        # an answer ends where its template does: no template of a wording is the start of another
        assert not any(a != b and b.startswith(a + " ") for a in templates for b in templates)


def test_the_member_is_read_off_by_rule_and_quality_needs_form_and_category():
    fruit, river = CATEGORIES["fruit"][0], CATEGORIES["river"][0]
    assert category_of(FRUIT) == "fruit" and category_of(world_prompt("island")) == "island"
    assert world_prompt("island") == "name an island :"
    assert category_of("Name a fruit. Answer with the name only.") is None
    assert members_named("fruit", f"i pick {fruit} .") == [fruit]
    assert members_named("fruit", f"i pick {river} .") == []  # another category's member is no key here
    assert template_of(f"i pick {fruit} .") == "i pick {member} ."
    assert world_quality(FRUIT, f"i pick {fruit} .") == 1.0
    assert world_quality(FRUIT, f"{fruit} is the one that i like the most .") == 1.0  # another wording's template
    assert world_quality(FRUIT, f"i pick {river} .") == 0.0  # well formed, wrong category
    assert world_quality(FRUIT, f"i pick {fruit}") == 0.0  # no template ends there
    assert world_quality(FRUIT, f"i pick {fruit} {fruit} .") == 0.0  # one member, once
    assert world_quality(FRUIT, "i pick .") == 0.0
    assert open_ended_quality("world")([FRUIT, FRUIT], [f"how about {fruit} ?", "how about it ?"]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="not a world prompt"):
        world_quality("Name a fruit.", f"i pick {fruit} .")


def test_the_checker_partitions_by_member_whatever_the_wording():
    a, b = CATEGORIES["fruit"][:2]
    checker = get_checker("world")
    answers = [f"i pick {a} .", f"{a} , of course .", f"i pick {b} .", f"i pick {CATEGORIES['river'][0]} ."]
    keys = checker.keys(FRUIT, answers)
    assert keys == [a, a, b, None]
    assert key_classes(keys) == [0, 0, 1, 2]  # an answer with no key is a class of its own
    assert not checker.applies("Name a planet of the solar system. Answer with one full sentence.")


def test_the_wordings_differ_in_how_much_a_4_gram_rule_sees_of_the_member():
    assert [hidden_share(w) for w in ("short", "plain", "long")] == [0.0, 0.3, 0.7]
    a, b = CATEGORIES["fruit"][:2]
    hiding = next(t for t in WORDINGS["plain"] if hides_member(t))
    seeing = next(t for t in WORDINGS["plain"] if not hides_member(t))
    # the rule's own decision (>= 0.5 of the 4-grams shared): the same answer in a hiding template, another in a
    # template that shows the member; and the same member in two templates is never the same answer to it
    assert (
        ngram_jaccard(fill(hiding, a), fill(hiding, b), 4) >= 0.5 > ngram_jaccard(fill(seeing, a), fill(seeing, b), 4)
    )
    assert ngram_jaccard(fill(hiding, a), fill(seeing, a), 4) < 0.5


def test_distinct_items_counts_the_members_of_world_prompts():
    a, b = CATEGORIES["fruit"][:2]
    texts = [f"i pick {a} .", f"{a} , of course .", f"i pick {b} .", f"i pick {CATEGORIES['river'][0]} ."]
    answers = PromptAnswers(texts=texts, classes=[0, 1, 2, 3], quality=[1, 1, 1, 0], utility=1.0, prompt=FRUIT)
    assert metric_columns([answers])["distinct_items"] == [2.0]


def test_packaged_prompt_sets_are_the_categories_split_once():
    sets = world_prompt_sets()
    for name, rows in sets.items():
        with gzip.open(REPO / "datagen" / "resources" / "prompts" / f"{name}.jsonl.gz", "rt") as fh:
            assert [json.loads(line) for line in fh] == rows  # the shipped file is the split
    train, heldout = ({r["category"] for r in sets[n]} for n in ("world-train", "world-heldout"))
    assert not train & heldout and train | heldout == set(CATEGORIES) and (len(train), len(heldout)) == (32, 16)
    assert [p.problem for p in load_problems("world-train")] == [r["prompt"] for r in sets["world-train"]]
    loaded = load_prompts("world-heldout")
    assert [(p.prompt_id, p.category) for p in loaded] == [(r["id"], r["category"]) for r in sets["world-heldout"]]
    assert all(category_of(p.prompt) == p.category for p in loaded)
