"""The content-word rule (darling.core.lexical, issue 67): the words that carry an answer's content, the prompt's own
words and stop words left out, and the partition it gives (darling.classifier.partition)."""

import pytest

from darling.classifier.partition import ContentWordPartition, partition_texts
from darling.core.items import categories
from darling.core.lexical import content_jaccard, content_words, ngram_jaccard

PLANET = categories()["planet"].prompt  # "Name a planet of the solar system. Answer with one full sentence."


def test_content_words_leave_out_stop_words_and_the_prompts_own_words():
    assert content_words("Mars is the fourth planet of the solar system.", PLANET) == {"mars", "fourth"}
    assert content_words("Mars is the fourth planet of the solar system.") == {"mars", "fourth", "planet", "solar"}
    # two different members said in the prompt's words: the prompt's words are all they share
    venus, mars = "Venus is a planet of the solar system.", "Mars is a planet of the solar system."
    assert content_jaccard(venus, mars, PLANET) == 0.0 and content_jaccard(venus, mars) == pytest.approx(2 / 4)
    assert ngram_jaccard(venus, mars, 4) > 0.5  # the 4-gram rule calls them the same answer
    # one member in other words: the member is what they share
    assert content_jaccard("Mars is red.", "I would pick Mars.", PLANET) == pytest.approx(1 / 3)
    assert content_jaccard("It is one.", "Planets are many.", PLANET) == 0.0  # {} vs {planets, many}: none shared


def test_the_content_word_partition_joins_answers_that_share_a_content_word_transitively():
    answers = ["Mars is red.", "The red one is Venus.", "Venus, surely.", "Jupiter is big.", "A big one."]
    classes, stats = partition_texts([answers], ContentWordPartition(), prompts=[PLANET])
    # Mars ~ Venus through "red", Venus ~ Venus; Jupiter ~ "A big one." through "big"
    assert classes == [[0, 0, 0, 1, 1]] and stats.pairs_total == 10
    assert partition_texts([answers], ContentWordPartition(threshold=0.6), prompts=[PLANET])[0] == [[0, 1, 2, 3, 4]]
    with pytest.raises(ValueError, match="content-word rule partition reads each group's prompt"):
        partition_texts([answers], ContentWordPartition())
