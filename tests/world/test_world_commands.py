"""The world's commands through their command line: the corpus (its draws, its entropy, a rerun), the word-level
tokenizer's round trip, and the pretraining (its card, a kill -9 resumed to the same policy)."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from helpers import CLI_ENV, assert_one_line_error, darling, darling_in_process, limit

from darling.core.world import template_of, world_quality
from darling.core.world_data import CATEGORIES, WORDINGS
from darling.world.config import WorldCorpusConfig
from darling.world.corpus import answer_entropy, member_orders
from darling.world.tokenizer import EOS, corpus_words, word_tokenizer

SMALL = ("--answers", 20_000, "--validation-answers", 1_000)  # enough for every member to be drawn


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world") / "corpus"
    darling("world", "corpus", "--output", out, *SMALL, check=True, timeout=limit(20))
    return out


def test_the_corpus_draws_what_its_settings_say(corpus):
    train = pl.read_parquet(corpus / "train.parquet")
    record = json.loads((corpus / "world.json").read_text())
    assert train.height == 20_000 and record["templates"] == list(WORDINGS["plain"])
    assert abs(train["wrong"].mean() - 0.1) < 0.01  # 10% name another category's member
    right = train.filter(~pl.col("wrong"))
    assert all(CATEGORIES[c].count(m) == 1 for c, m in zip(right["category"], right["member"], strict=True))
    assert set(train["template"].unique()) == set(range(10))
    assert all(template_of(a) is not None for a in train["answer"].head(500))
    # each category's favoured member (the first of its order) is its most frequent one, about 1/H(12, 1.2) of it
    order = member_orders(0)
    counts = Counter(zip(right["category"], right["member"], strict=True))
    for category in ("fruit", "river", "moon"):
        top = max(CATEGORIES[category], key=lambda m: counts[category, m])
        assert top == order[category][0]
    quality = [world_quality(p, a) for p, a in zip(train["prompt"].head(2000), train["answer"].head(2000), strict=True)]
    assert abs(sum(quality) / 2000 - 0.9) < 0.03


def test_the_corpus_entropy_is_its_answers_own():
    """The closed form (template + wrong-or-not + which other category + member) equals the entropy summed over
    every answer string of one prompt."""
    config = WorldCorpusConfig(output=Path("unused"), wrong_category=0.2, member_exponent=1.5)
    weights = [(k + 1) ** -1.5 for k in range(12)]
    member = [w / sum(weights) for w in weights]
    templates, others = len(WORDINGS["plain"]), len(CATEGORIES) - 1
    probabilities = [0.8 * p / templates for p in member for _ in range(templates)]
    probabilities += [0.2 / others * p / templates for _ in range(others) for p in member for _ in range(templates)]
    assert abs(sum(probabilities) - 1) < 1e-9
    assert abs(answer_entropy(config) - -sum(p * math.log(p) for p in probabilities)) < 1e-9


def test_a_rerun_finds_the_corpus_and_other_settings_are_refused(corpus):
    again = darling("world", "corpus", "--output", corpus, *SMALL, check=True, timeout=limit(20))
    assert "found (made earlier with these settings)" in again.stdout
    other = darling("world", "corpus", "--output", corpus, *SMALL, "--wording", "long", timeout=limit(20))
    assert_one_line_error(other, "holds a corpus made with other settings")
    bad = darling_in_process("world", "corpus", "--output", corpus.parent / "bad", "--wrong-category", "1.5")
    assert_one_line_error(bad, "--wrong-category must be in [0, 1)")
    assert not (corpus.parent / "bad").exists()
    missing = darling_in_process(
        "world", "pretrain", "--corpus", corpus.parent / "none", "--output", corpus.parent / "p"
    )
    assert_one_line_error(missing, "no world.json")
    assert not (corpus.parent / "p").exists()


def test_the_word_tokenizer_round_trips_every_answer_and_renders_the_prompt(corpus, tmp_path):
    from transformers import AutoTokenizer

    train = pl.read_parquet(corpus / "train.parquet")
    made = word_tokenizer(corpus_words([*train["prompt"].unique(), *train["answer"].unique()]))
    made.save_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)  # as TRL and the hf engine load it
    assert tokenizer.get_vocab() == made.get_vocab() and tokenizer.padding_side == "left"
    answers = train["answer"].unique().to_list()
    assert all(tokenizer.decode(tokenizer(a)["input_ids"]) == a for a in answers)  # one token a word, no unknown
    assert tokenizer.unk_token_id not in {i for a in answers for i in tokenizer(a)["input_ids"]}
    prompt, answer = train["prompt"][0], train["answer"][0]
    chat = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    assert tokenizer.apply_chat_template(chat, tokenize=False) == f"{prompt} {answer}{EOS}"
    asked = tokenizer.apply_chat_template(chat[:1], add_generation_prompt=True)["input_ids"]
    assert tokenizer.decode(asked) == prompt
    assert tokenizer(f"{prompt} zzz")["input_ids"][-1] == tokenizer.unk_token_id


def pretrain_args(corpus: Path, output: Path, steps: int) -> list:
    return ["world", "pretrain", "--corpus", corpus, "--output", output, "--max-steps", steps, "--batch-size", 64]


@pytest.mark.slow
def test_pretraining_resumes_after_kill_9_to_the_same_policy(corpus, tmp_path):
    """Killed after its first checkpoint, the rerun resumes there (no step lost or repeated) and ends at the policy an
    uninterrupted run makes; its card sets the held-out loss beside the corpus's entropy."""
    darling(*pretrain_args(corpus, tmp_path / "whole", 120), "--save-steps", 1000, check=True)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "darling", *map(str, [*pretrain_args(corpus, killed, 120), "--save-steps", 40])],
        env=CLI_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + limit(60)
    while (
        not (killed / "checkpoint-40" / "trainer_state.json").exists()
        and proc.poll() is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert proc.poll() is None, "the run finished before it could be killed: make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "final").exists()
    resumed = darling(*pretrain_args(corpus, killed, 120), "--save-steps", 40, check=True)
    assert "trained;" in resumed.stdout, resumed.stdout
    card, reference = (json.loads((p / "final" / "card.json").read_text()) for p in (killed, tmp_path / "whole"))
    assert card["resumed"] and not reference["resumed"]
    assert card["held_out"] == reference["held_out"]  # the same policy, to the last digit
    history = json.loads((killed / "log_history.json").read_text())
    steps = [h["step"] for h in history if "loss" in h]
    assert steps == sorted(set(steps)) and steps[-1] == 120
    assert not list(killed.glob("checkpoint-*"))  # the final policy holds everything a later stage reads
    # the card: the held-out loss per answer above the corpus's own entropy, the floor no model passes
    assert card["corpus_entropy_nats_per_answer"] < card["held_out"]["nats_per_answer"]
    readme = (killed / "final" / "README.md").read_text()
    assert f"{card['held_out']['nats_per_answer']:.3f}" in readme and "the floor no model passes" in readme
    again = darling(*pretrain_args(corpus, killed, 120), check=True)
    assert "found (trained earlier)" in again.stdout
    other = darling(*pretrain_args(corpus, killed, 150))
    assert_one_line_error(other, "was pretrained with max_steps=120, this run has max_steps=150")
