import json

import polars as pl
import pytest
from helpers import write_jsonl

from darling.classifier.labelled_pairs import PairSet, load_pairs, split_pairs
from darling.core.errors import UserInputError

GOOD = {"prompt": "p", "generation_0": "a", "generation_1": "b", "similar": 1}


def test_noveltybench_pairs_load(novelty_pairs_path):
    pairs = load_pairs(novelty_pairs_path)
    assert len(pairs) == 1000
    assert pairs.labels.count(1) == 327 and pairs.labels.count(0) == 673
    assert len(pairs.sha256) == 64
    assert pairs.pairs[0].extra["labeler"]  # provenance columns are carried along


def test_empty_responses_are_valid(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{**GOOD, "generation_0": "", "generation_1": ""}])
    assert load_pairs(path).pairs[0].generation_0 == ""


@pytest.mark.parametrize(
    "row, expected",
    [
        ({k: v for k, v in GOOD.items() if k != "generation_1"}, "missing field 'generation_1'"),
        ({**GOOD, "similar": 2}, "field 'similar' must be 0 or 1, got 2"),
        ({**GOOD, "similar": "1"}, "field 'similar' must be 0 or 1, got '1'"),
        ({**GOOD, "generation_0": 3}, "field 'generation_0' must be a string, got int"),
        ({**GOOD, "prompt": None}, "field 'prompt' must be a string, got null"),
        ([1, 2], "expected a JSON object with fields prompt, generation_0, generation_1, similar"),
    ],
)
def test_bad_jsonl_rows_name_file_line_and_field(tmp_path, row, expected):
    path = write_jsonl(tmp_path / "p.jsonl", [GOOD, row])
    with pytest.raises(UserInputError) as exc:
        load_pairs(path)
    assert str(exc.value) == f"{path}:2: {expected}"


def test_broken_json_line(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [GOOD, "", '{"prompt": "p", "generation_0": '])
    with pytest.raises(UserInputError, match=rf"^{path}:3: not valid JSON"):
        load_pairs(path)


def test_parquet_and_dataset_folder_round_trip(tmp_path):
    rows = [{**GOOD, "similar": i % 2, "prompt": f"p{i}"} for i in range(6)]
    pl.DataFrame(rows).write_parquet(tmp_path / "pairs.parquet")
    from_parquet = load_pairs(tmp_path / "pairs.parquet")
    assert from_parquet.labels == [0, 1, 0, 1, 0, 1]

    import datasets

    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "ds"))
    from_disk = load_pairs(tmp_path / "ds")
    assert [p.prompt for p in from_disk.pairs] == [p.prompt for p in from_parquet.pairs]


def test_bad_parquet_row_names_row_and_field(tmp_path):
    pl.DataFrame([GOOD, {**GOOD, "similar": 5}]).write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(UserInputError, match=r"bad.parquet: row 1: field 'similar' must be 0 or 1, got 5"):
        load_pairs(tmp_path / "bad.parquet")


def test_missing_file(tmp_path):
    with pytest.raises(UserInputError, match="file not found"):
        load_pairs(tmp_path / "nope.jsonl")


def _pairset(n_prompts: int, per_prompt: int) -> PairSet:
    from darling.classifier.labelled_pairs import record_to_pair

    pairs = [
        record_to_pair({**GOOD, "prompt": f"p{i}", "generation_0": f"a{j}", "similar": (i + j) % 3 == 0}, "x")
        for i in range(n_prompts)
        for j in range(per_prompt)
    ]
    return PairSet(pairs, "mem", "0")


def test_split_is_grouped_stratified_and_seeded():
    pairs = _pairset(60, 4)
    train, val = split_pairs(pairs, 0.2, seed=3)
    assert not {p.prompt for p in train} & {p.prompt for p in val}  # no prompt in both halves
    assert len(train) + len(val) == 240
    rate = sum(p.similar for p in pairs.pairs) / 240
    assert abs(sum(p.similar for p in val) / len(val) - rate) < 0.1
    again = split_pairs(pairs, 0.2, seed=3)
    assert [p.pair_id for p in again[1]] == [p.pair_id for p in val]
    assert [p.pair_id for p in split_pairs(pairs, 0.2, seed=4)[1]] != [p.pair_id for p in val]


def test_split_of_too_small_set_is_a_user_error():
    with pytest.raises(UserInputError, match="too few pairs"):
        split_pairs(_pairset(2, 1), 0.2, seed=0)


def test_ids_are_stable_content_hashes(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [GOOD])
    assert load_pairs(path).pairs[0].pair_id == load_pairs(path).pairs[0].pair_id
    with_id = write_jsonl(tmp_path / "q.jsonl", [{**GOOD, "id": "abc"}])
    assert load_pairs(with_id).pairs[0].pair_id == "abc"
    assert json.loads((tmp_path / "q.jsonl").read_text())["id"] == "abc"


def test_builtin_noveltybench_set_is_the_pinned_file(novelty_pairs_path):
    import gzip
    import hashlib

    # SHA-256 of NoveltyBench's pairs-train.jsonl (1,000 human-labelled pairs, MIT) as released: the packaged
    # copy is that file, byte for byte, and the name resolves to it.
    raw = gzip.decompress(novelty_pairs_path.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == "745220f2d6e3eea1192d43d7a86cdd6357b8712deadc261a7b3671fa45789bdb"
    builtin, packaged = load_pairs("noveltybench"), load_pairs(novelty_pairs_path)
    assert [p.pair_id for p in builtin.pairs] == [p.pair_id for p in packaged.pairs]
    assert builtin.labels == packaged.labels and builtin.sha256 == packaged.sha256
