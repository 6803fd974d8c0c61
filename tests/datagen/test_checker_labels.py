"""Labels from a checker, as a judge (issue 61): `datagen pairs --checker` pairs a policy's answers by the key a rule
reads off them, both labels balanced and capped per prompt; `datagen label --checker` labels them by rule, resumably;
an LLM judge's labels are scored against the checker. Real Parquet rollouts, the real command line, no model."""

import itertools
import json

import polars as pl
import pytest
from helpers import assert_one_line_error, darling_in_process

from darling.core.checkers import get_checker
from darling.core.items import categories, category_of, item_of
from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY, stable_id
from darling.core.shards import ShardStore
from darling.datagen.checker_labels import agreement

PLANET, WEEKDAY = categories()["planet"].prompt, categories()["weekday"].prompt
ANSWERS = {
    PLANET: [
        "Mars is the red planet.",
        "I would say Mars, the fourth planet.",
        "Mars is the red planet.",  # the same text again: dropped, never a pair
        "Venus is the hottest planet.",
        "Jupiter is the largest of them all.",
        "Planets are fascinating objects.",  # names no member: never paired
        "The planet Mars has two moons.",
        "Venus spins backwards.",
    ],
    WEEKDAY: [
        "Monday is the first working day.",
        "My favourite is Friday.",
        "Friday comes before the weekend.",
        "Sunday is for resting.",
        "A day is 24 hours long.",
        "On Monday the week starts again.",
    ],
}


def write_rollouts(folder, answers=ANSWERS):
    rows = []
    for p, (prompt, texts) in enumerate(answers.items()):
        for i, text in enumerate(texts):
            row = {c: None for c in ROLLOUT_COLUMNS}
            row.update(
                rollout_id=stable_id(p, "policy", i),
                problem_id=f"items:{p}",
                source="items",
                model="policy",
                sample_index=i,
                problem=prompt,
                response=text,
                status="ok",
                engine="hf",
                sampling="{}",
            )
            rows.append(row)
    ShardStore(folder, ROLLOUT_COLUMNS, ROLLOUT_KEY).append(rows)
    return folder


def member(prompt: str, text: str) -> str | None:
    return item_of(category_of(prompt), text)


def test_pairs_by_key_are_capped_per_prompt_and_balanced_and_the_checker_labels_them(tmp_path):
    rollouts = write_rollouts(tmp_path / "rollouts")
    result = darling_in_process(
        "datagen", "pairs", "--rollouts", rollouts, "--checker", "items", "--max-pairs-per-problem", "2",
        "-o", tmp_path / "pairs",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    pairs = pl.read_parquet(tmp_path / "pairs" / "pairs.parquet").to_dicts()
    same = [int(member(p["prompt"], p["generation_0"]) == member(p["prompt"], p["generation_1"])) for p in pairs]
    for p in pairs:  # both answers name a member, two different texts
        assert member(p["prompt"], p["generation_0"]) and member(p["prompt"], p["generation_1"])
        assert p["generation_0"] != p["generation_1"]
    for prompt, label in itertools.product(ANSWERS, (0, 1)):  # at most 2 of each label per prompt
        assert sum(1 for p, s in zip(pairs, same, strict=True) if p["prompt"] == prompt and s == label) <= 2
    # both labels equally many: the planet prompt has 3 same-member pairs (Mars x3 texts), weekday 2 (Monday,
    # Friday); capped at 2 each there are 4 equivalent pairs, so the 4 different-member pairs kept match them
    assert same.count(1) == same.count(0) == 4
    labelled = tmp_path / "labels"
    first = darling_in_process("datagen", "label", "--pairs", tmp_path / "pairs", "--checker", "items", "-o", labelled)
    assert first.returncode == 0, first.stderr
    records = pl.read_parquet(labelled / "labelled.parquet").to_dicts()
    assert {r["pair_id"]: r["similar"] for r in records} == {p["pair_id"]: s for p, s in zip(pairs, same, strict=True)}
    assert {r["judge_model"] for r in records} == {"checker:items"}
    again = darling_in_process("datagen", "label", "--pairs", tmp_path / "pairs", "--checker", "items", "-o", labelled)
    assert again.returncode == 0 and "0 judged now, 8 already done" in " ".join(again.stdout.split())
    assert pl.read_parquet(labelled / "labelled.parquet").height == 8  # nothing lost, nothing duplicated


def test_one_key_only_pairs_no_answer_that_names_several_members(tmp_path):
    """An answer listing members ("Mars and Venus ...") is read by its first by convention: with --one-key-only it is
    never paired, and the summary counts it; without, it is paired as Mars."""
    listed = {PLANET: [*ANSWERS[PLANET], "Mars and Venus are both rocky.", "Venus or Mars, hard to say."]}
    rollouts = write_rollouts(tmp_path / "rollouts", listed)
    both = {}
    for flag in ("--one-key-only", "--no-one-key-only"):
        out = tmp_path / flag
        result = darling_in_process(
            "datagen", "pairs", "--rollouts", rollouts, "--checker", "items", "--max-pairs-per-problem", "0",
            flag, "-o", out,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        pairs = pl.read_parquet(out / "pairs.parquet")
        both[flag] = {t for column in ("generation_0", "generation_1") for t in pairs[column]}
        summary = json.loads((out / "summary.json").read_text())
        assert summary["several_keys"] == (2 if flag == "--one-key-only" else 0)
    assert not {"Mars and Venus are both rocky.", "Venus or Mars, hard to say."} & both["--one-key-only"]
    assert "Mars and Venus are both rocky." in both["--no-one-key-only"]
    refused = darling_in_process("datagen", "pairs", "--rollouts", rollouts, "--one-key-only", "-o", tmp_path / "r")
    assert_one_line_error(refused, "--one-key-only", "needs --checker")


def test_prompts_without_a_checker_and_a_label_command_without_a_judge_are_refused(tmp_path):
    rollouts = write_rollouts(tmp_path / "rollouts", {"Name a fruit. Answer with the name only.": ["Apple.", "Pear."]})
    result = darling_in_process("datagen", "pairs", "--rollouts", rollouts, "--checker", "items", "-o", tmp_path / "p")
    assert_one_line_error(result, str(rollouts), "prompt 1", "has no items checker")
    assert not (tmp_path / "p").exists()
    result = darling_in_process("datagen", "label", "--pairs", tmp_path / "p", "-o", tmp_path / "l")
    assert_one_line_error(result, "give --judge-model", "--checker")
    result = darling_in_process(
        "datagen", "label", "--pairs", tmp_path / "p", "--checker", "math", "-o", tmp_path / "l"
    )
    assert_one_line_error(result, "unknown checker 'math'")


def test_a_judge_is_scored_against_the_checker_per_label_and_abstentions_are_misses():
    pair = lambda a, b, similar, status="labelled": {  # noqa: E731
        "prompt": PLANET, "generation_0": a, "generation_1": b, "similar": similar, "status": status,
    }  # fmt: skip
    records = [
        pair("Mars is red.", "Mars again.", 1),  # equivalent, judged equivalent: a hit
        pair("Mars is red.", "The red Mars.", 0),  # equivalent, judged different: a miss
        pair("Venus is hot.", "Venus!", None, "abstain"),  # equivalent, unlabelled: a miss
        pair("Mars is red.", "Venus is hot.", 0),  # different, judged different: a hit
        pair("Mars is red.", "Saturn has rings.", 1),  # different, judged equivalent: a miss
        pair("Mars is red.", "Nothing here.", 1),  # no key on one side: counted apart
    ]
    scored = agreement(records, get_checker("items"))
    equivalent, different = scored["per_label"]["equivalent"], scored["per_label"]["different"]
    assert (equivalent["pairs"], equivalent["judged_equivalent"], equivalent["unlabelled"]) == (3, 1, 1)
    assert equivalent["agreement"] == pytest.approx(1 / 3) and different["agreement"] == pytest.approx(1 / 2)
    assert scored["overall"]["agreement"] == pytest.approx(2 / 5) and scored["pairs_without_key"] == 1
    lo, hi = equivalent["interval"]
    assert 0 <= lo <= 1 / 3 <= hi <= 1
