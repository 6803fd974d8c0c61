"""Record schemas shared by every stage, defined once.

A *labelled pair* is what ``darling datagen label`` writes and what the classifier trains on; it is the
NoveltyBench layout (``prompt, generation_0, generation_1, similar``) with ``similar == 1`` meaning the two
responses are equivalent. Extra columns (provenance) are allowed and carried along untouched.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

PAIR_TEXT_FIELDS = ("prompt", "generation_0", "generation_1")
PAIR_LABEL_FIELD = "similar"
PAIR_FIELDS = (*PAIR_TEXT_FIELDS, PAIR_LABEL_FIELD)


@dataclass(frozen=True)
class LabelledPair:
    prompt: str
    generation_0: str
    generation_1: str
    similar: int  # 1 = equivalent, 0 = different
    pair_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def texts(self) -> tuple[str, str]:
        return self.generation_0, self.generation_1


def stable_pair_id(prompt: str, generation_0: str, generation_1: str) -> str:
    """Content hash used when a source has no id column, so splits and resumes stay stable."""
    h = hashlib.sha256()
    for part in (prompt, generation_0, generation_1):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]
