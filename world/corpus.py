"""``darling world corpus``: the world's pretraining corpus, drawn from a seed. Each answer answers a prompt of a
category drawn uniformly: with probability ``1 - wrong_category`` it names a member of that category, else a member
of another category (drawn uniformly); the member is drawn Zipf-like over the category's members (the k-th, in an
order the seed fixes, with weight k^-exponent: a mode for GRPO to collapse to) and the template uniformly from the
wording's, independently of the member.

Because every answer's probability is known, so is the corpus's own entropy per answer (``answer_entropy``): the
floor of any model's loss on fresh draws, which the pretrained policy's card sets its held-out loss beside.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.shards import atomic_write_bytes, atomic_write_parquet
from darling.core.world import fill, hidden_share, world_prompt
from darling.core.world_data import CATEGORIES, WORDINGS
from darling.world.config import CORPUS_FILE, WorldCorpusConfig

PARTS = ("train", "validation")


def zipf_weights(n: int, exponent: float) -> list[float]:
    raw = [(k + 1) ** -exponent for k in range(n)]
    return [w / sum(raw) for w in raw]


def member_orders(seed: int) -> dict[str, list[str]]:
    """Each category's members, most frequent first: a seeded shuffle per category."""
    import numpy as np

    rng = np.random.default_rng([seed, 1])
    return {category: [str(m) for m in rng.permutation(members)] for category, members in CATEGORIES.items()}


def answer_entropy(config: WorldCorpusConfig) -> float:
    """The corpus's entropy of an answer given its prompt, in nats (the same for every prompt): the template's
    (uniform), whether the category is wrong, which other category, and the member's (Zipf). Every (template, member)
    is a different string, and no template is a prefix of another, so the end of an answer adds nothing."""
    templates = len(WORDINGS[config.wording])
    members = zipf_weights(len(next(iter(CATEGORIES.values()))), config.member_exponent)
    member_entropy = -sum(p * math.log(p) for p in members)
    w = config.wrong_category
    wrong_entropy = (
        0.0 if w == 0 else -(w * math.log(w) + (1 - w) * math.log(1 - w)) + w * math.log(len(CATEGORIES) - 1)
    )
    return math.log(templates) + member_entropy + wrong_entropy


def draw_answers(config: WorldCorpusConfig, count: int, stream: int) -> dict[str, list[Any]]:
    """``count`` answers as columns (``stream`` keeps the parts' draws apart)."""
    import numpy as np

    rng = np.random.default_rng([config.seed, 2, stream])
    keys = sorted(CATEGORIES)
    orders = member_orders(config.seed)
    templates = WORDINGS[config.wording]
    weights = np.array(zipf_weights(len(orders[keys[0]]), config.member_exponent))
    asked = rng.integers(len(keys), size=count)
    wrong = rng.random(count) < config.wrong_category
    other = (asked + 1 + rng.integers(len(keys) - 1, size=count)) % len(keys)  # any category but the one asked
    named = np.where(wrong, other, asked)
    rank = rng.choice(len(weights), size=count, p=weights)
    template = rng.integers(len(templates), size=count)
    columns: dict[str, list[Any]] = {k: [] for k in ("category", "prompt", "answer", "member", "template", "wrong")}
    for a, n, r, t, x in zip(
        asked.tolist(), named.tolist(), rank.tolist(), template.tolist(), wrong.tolist(), strict=True
    ):
        member = orders[keys[n]][r]
        columns["category"].append(keys[a])
        columns["prompt"].append(world_prompt(keys[a]))
        columns["answer"].append(fill(templates[t], member))
        columns["member"].append(member)
        columns["template"].append(t)
        columns["wrong"].append(x)
    return columns


def corpus_record(config: WorldCorpusConfig) -> dict[str, Any]:
    return {
        "identity": config.identity(),
        "entropy_nats_per_answer": answer_entropy(config),
        "templates": list(WORDINGS[config.wording]),
        "templates_hiding_the_member": hidden_share(config.wording),
        "member_order": member_orders(config.seed),
        "files": {part: f"{part}.parquet" for part in PARTS},
    }


def read_corpus_record(folder: Path) -> dict[str, Any]:
    path = Path(folder) / CORPUS_FILE
    if not path.is_file():
        raise UserInputError(f"{folder}: no {CORPUS_FILE} (make the corpus with `darling world corpus`)")
    try:
        return json.loads(path.read_text())
    except ValueError:
        raise UserInputError(f"{path}: not valid JSON; make the corpus again") from None


def write_corpus(config: WorldCorpusConfig) -> dict[str, Any]:
    """Both parts and ``world.json`` (written last: its presence means the corpus is whole). A rerun with the same
    settings finds it and writes nothing; with others it is refused."""
    import polars as pl

    out = Path(config.output)
    if (out / CORPUS_FILE).exists():
        record = read_corpus_record(out)
        if record["identity"] != config.identity():
            raise UserInputError(f"{out}: holds a corpus made with other settings; use another --output")
        return {**record, "written": False}
    out.mkdir(parents=True, exist_ok=True)
    sizes = {"train": config.answers, "validation": config.validation_answers}
    for stream, part in enumerate(PARTS):
        frame = pl.DataFrame(draw_answers(config, sizes[part], stream))
        atomic_write_parquet(frame, out / f"{part}.parquet")
    record = corpus_record(config)
    atomic_write_bytes(out / CORPUS_FILE, (json.dumps(record, indent=2) + "\n").encode())
    return {**record, "written": True}
