"""The multi-seed figures a one-seed report cites are defined once (pipeline/measured_figures.py) and quoted by the
doc they point to: a new study that changes one and not the other fails here."""

import re
from pathlib import Path

from darling.pipeline.measured_figures import MEASURED_FIGURES
from darling.pipeline.stages.compare import one_seed_sentence

DOC = Path(__file__).parents[2] / "docs" / "measurements.md"


def section(text: str, heading: str) -> str:
    """The text under a markdown heading, up to the next heading of the same or a higher level."""
    match = re.search(rf"^(#+) {re.escape(heading)}\n", text, flags=re.M)
    assert match, f"docs/measurements.md has no heading {heading!r}"
    level = len(match.group(1))
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, flags=re.M)
    return rest[: end.start()] if end else rest


def test_each_cited_study_is_in_the_section_it_names():
    text = DOC.read_text()
    for study in MEASURED_FIGURES:
        assert study.figure in section(text, study.heading), study


def test_the_one_seed_sentence_cites_every_study():
    sentence = one_seed_sentence()
    assert "covers prompts, not runs" in sentence
    for study in MEASURED_FIGURES:
        assert study.figure in sentence and study.heading in sentence
