"""The pretrained world policy's card: ``README.md`` (what it is, how it was made, its held-out loss beside the
corpus's entropy) and ``card.json`` (the same figures for programs: the pipeline's report reads them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from darling.core.shards import atomic_write_bytes

CARD_FILE = "card.json"


def card_lines(figures: dict[str, Any]) -> list[str]:
    corpus, settings, held_out = figures["corpus"], figures["settings"], figures["held_out"]
    floor = figures["corpus_entropy_nats_per_answer"]
    gap = held_out["nats_per_answer"] - floor
    return [
        "# A policy born in the world",
        "",
        f"A {settings['layers']}-layer Llama (width {settings['width']}, {settings['heads']} heads, "
        f"{figures['parameters']:,} parameters) over a word-level vocabulary of {figures['vocabulary']}, trained from "
        f"scratch by `darling world pretrain` on the world's corpus (`darling world corpus`, wording "
        f"`{corpus['wording']}`, {corpus['answers']:,} answers, member exponent {corpus['member_exponent']}, "
        f"{corpus['wrong_category']:.0%} wrong-category answers, seed {corpus['seed']}): {settings['max_steps']} "
        f"steps of {settings['batch_size']} answers, learning rate {settings['learning_rate']}, seed "
        f"{settings['seed']}, {figures['train_seconds']:.0f} s.",
        "",
        "The world is synthetic (darling.core.world): a prompt names a category (`name a fruit :`), an answer names "
        "one of its invented members in one of a few templates. Which member an answer names is known by rule, so "
        "what a diversity reward does to this policy can be measured exactly; it says nothing of real tasks.",
        "",
        "| held-out answers (fresh draws) | nats per answer | nats per token |",
        "| --- | ---: | ---: |",
        f"| this policy | {held_out['nats_per_answer']:.3f} | {held_out['nats_per_token']:.3f} |",
        f"| the corpus's own entropy (the floor no model passes) | {floor:.3f} | |",
        "",
        f"The policy is {gap:+.3f} nats per answer from the floor.",
        "",
    ]


def write_card(folder: Path, figures: dict[str, Any]) -> None:
    atomic_write_bytes(Path(folder) / "README.md", "\n".join(card_lines(figures)).encode())
    atomic_write_bytes(Path(folder) / CARD_FILE, (json.dumps(figures, indent=2) + "\n").encode())
