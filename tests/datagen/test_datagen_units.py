"""Shards, pairing and judge verdict logic on real Parquet files and real math-verify (no models)."""

import gc
import json
import os
import subprocess
import sys

import polars as pl
import pytest

from darling.core.errors import UserInputError
from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY, stable_id
from darling.core.shards import ShardStore
from darling.datagen.config import PairConfig
from darling.datagen.judge import (
    DEFAULT_PROMPT,
    decide,
    load_prompt,
    order_verdict,
    parse_verdict,
    rationale_of,
    render_prompt,
)
from darling.datagen.pairs import answer_classes, build_pairs, read_pairs


def rollout(problem_id, model, index, response, answer, correct=True, status="ok"):
    row = {c: None for c in ROLLOUT_COLUMNS}
    row.update(
        rollout_id=stable_id(problem_id, model, index),
        problem_id=problem_id,
        source="t",
        model=model,
        sample_index=index,
        problem=f"Problem {problem_id}",
        reference_answer="1/2",
        response=response,
        extracted_answer=answer,
        correct=correct,
        status=status,
        engine="import",
        sampling="{}",
    )
    return row


# --- shards -------------------------------------------------------------------------------------------------
def test_shards_last_write_wins_and_no_duplicates(tmp_path):
    store = ShardStore(tmp_path, ROLLOUT_COLUMNS, ROLLOUT_KEY)
    store.append([rollout("p1", "m", 0, None, None, status="failed"), rollout("p1", "m", 1, "a", "1")])
    store.append([rollout("p1", "m", 0, "retried", "2")])
    frame = store.read()
    assert frame.height == 2
    assert frame.filter(pl.col("sample_index") == 0)["response"].item() == "retried"
    assert [p.name for p in store.shards()] == ["part-000000.parquet", "part-000001.parquet"]


def test_shards_clean_leftover_temp_files_and_refuse_changed_settings(tmp_path):
    (tmp_path / ".part-abc.tmp").write_bytes(b"half a shard")
    store = ShardStore(tmp_path, ROLLOUT_COLUMNS, ROLLOUT_KEY)
    assert store.read().height == 0 and list(tmp_path.glob("*.tmp"))  # invisible; only a writer may remove it
    store.append([rollout("p1", "m", 0, "a", "1")])
    assert not list(tmp_path.glob("*.tmp"))
    store.check_settings({"temperature": 1.0, "seed": 0})
    store.check_settings({"temperature": 1.0, "seed": 0})  # same settings: fine
    with pytest.raises(UserInputError, match="temperature=1.0, this run has temperature=0.7"):
        store.check_settings({"temperature": 0.7, "seed": 0})


def test_a_killed_writer_never_leaves_a_visible_half_shard(tmp_path):
    """kill -9 a process in the middle of writing big shards: only complete shards are ever visible."""
    script = f"""
import polars as pl
from darling.core.shards import ShardStore
from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY
store = ShardStore({str(tmp_path / "out")!r}, ROLLOUT_COLUMNS, ROLLOUT_KEY)
for k in range(10_000):
    store.append([dict(rollout_id=str(i), problem_id=str(k), model="m", sample_index=i, response="x" * 2000,
                       status="ok") for i in range(500)])
    print(k, flush=True)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    for _ in range(3):
        proc.stdout.readline()
    proc.kill()
    proc.wait()
    store = ShardStore(tmp_path / "out", ROLLOUT_COLUMNS, ROLLOUT_KEY)
    frame = store.read()  # every visible shard reads completely
    assert frame.height == 500 * len(store.shards()) and frame.height >= 1500
    store.append([rollout("p1", "m", 0, "a", "1")])  # the rerun: the kernel freed the killed writer's lock
    assert not [p for p in os.listdir(tmp_path / "out") if p.endswith(".tmp")]


def test_a_second_process_writing_the_same_shard_folder_is_refused(tmp_path):
    """Two writers would both number their next part alike and one would replace the other's: the second is
    refused with one line naming the folder and the writer's pid, and nothing of the first's is lost."""
    script = f"""
from darling.core.shards import ShardStore
from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY
store = ShardStore({str(tmp_path)!r}, ROLLOUT_COLUMNS, ROLLOUT_KEY)
store.append([dict(rollout_id="1", problem_id="p", model="m", sample_index=0, response="x", status="ok")])
print("written", flush=True)
input()
"""
    writer = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "written"
        store = ShardStore(tmp_path, ROLLOUT_COLUMNS, ROLLOUT_KEY)
        assert store.read().height == 1  # reading while another process writes is fine
        with pytest.raises(UserInputError, match=rf"{tmp_path}: another process \(pid {writer.pid}\) is writing"):
            store.append([rollout("p2", "m", 0, "a", "1")])
    finally:
        writer.communicate("\n", timeout=30)
    store.append([rollout("p2", "m", 0, "a", "1")])  # its lock ended with it
    assert store.read().height == 2 and len(store.shards()) == 2


def test_threads_racing_for_a_part_number_never_overwrite_each_other(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    store = ShardStore(tmp_path, ROLLOUT_COLUMNS, ROLLOUT_KEY)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k, s=store: s.append([rollout(f"p{k}", "m", 0, "a", "1")]), range(64)))
    assert store.read().height == 64 and len(store.shards()) == 64
    del store  # the last store writing the folder is gone: its lock with it, so another process may write
    gc.collect()
    script = f"""
from darling.core.shards import ShardStore
from darling.core.schemas import ROLLOUT_COLUMNS, ROLLOUT_KEY
ShardStore({str(tmp_path)!r}, ROLLOUT_COLUMNS, ROLLOUT_KEY).append(
    [dict(rollout_id="x", problem_id="q", model="m", sample_index=0, response="x", status="ok")])
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert len(ShardStore(tmp_path, ROLLOUT_COLUMNS, ROLLOUT_KEY).shards()) == 65


# --- pairs --------------------------------------------------------------------------------------------------
def test_answer_classes_use_math_equivalence_not_strings():
    assert answer_classes(["\\frac{1}{2}", "0.5", "1/2", "3", " 3 ", "4"]) == [0, 0, 0, 1, 1, 2]


def write_rollouts(directory):
    store = ShardStore(directory, ROLLOUT_COLUMNS, ROLLOUT_KEY)
    store.append(
        [
            rollout("p1", "A", 0, "Half: \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
            rollout("p1", "B", 0, "It is 0.5 so \\boxed{0.5}", "0.5"),
            rollout("p1", "A", 1, "Half:   \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),  # same text modulo spaces
            rollout("p1", "B", 1, "wrong \\boxed{3}", "3", correct=False),
            rollout("p1", "A", 2, "also wrong, \\boxed{3.0}", "3.0", correct=False),
            rollout("p1", "C", 0, None, None, status="failed"),
            rollout("p2", "A", 0, "no answer here", None, correct=False),
            rollout("p2", "B", 0, "x = \\boxed{7}", "7"),
        ]
    )


def test_pairs_pair_equivalent_answers_and_drop_identical_texts(tmp_path):
    write_rollouts(tmp_path / "rollouts")
    summary = build_pairs(PairConfig(rollouts=tmp_path / "rollouts", output=tmp_path / "pairs"), progress=False)
    pairs = read_pairs(tmp_path / "pairs")
    got = {tuple(sorted((r["model_0"], r["model_1"]))) + (r["answer"] in ("3", "3.0"),) for r in pairs.to_dicts()}
    assert got == {("A", "B", False), ("A", "B", True)}  # 1/2 ~ 0.5 and 3 ~ 3.0; the duplicate A/1 is dropped
    assert summary.pairs == 2 and summary.duplicates_dropped == 1 and summary.problems_with_pairs == 1
    assert json.loads((tmp_path / "pairs" / "summary.json").read_text())["pairs"] == 2
    assert pairs["pair_id"].n_unique() == 2


def test_pairs_options_correct_only_cross_model_and_cap(tmp_path):
    def pairs(rollouts: str, output: str, **options):
        return build_pairs(PairConfig(rollouts=tmp_path / rollouts, output=tmp_path / output, **options), False)

    write_rollouts(tmp_path / "rollouts")
    correct = pairs("rollouts", "c", correct_only=True)
    assert correct.pairs == 1 and read_pairs(tmp_path / "c")["correct"].to_list() == [True]
    store = ShardStore(tmp_path / "many", ROLLOUT_COLUMNS, ROLLOUT_KEY)
    store.append([rollout("p", m, i, f"{m}{i} \\boxed{{5}}", "5") for m in "AB" for i in range(4)])
    everything = pairs("many", "all", max_pairs_per_problem=None)
    cross = pairs("many", "x", cross_model_only=True, max_pairs_per_problem=0)  # 0 = all, as --max-pairs-per-problem
    capped = pairs("many", "cap", max_pairs_per_problem=5, seed=1)
    again = pairs("many", "cap2", max_pairs_per_problem=5, seed=1)
    assert (everything.pairs, cross.pairs, capped.pairs) == (28, 16, 5)
    assert read_pairs(tmp_path / "cap")["pair_id"].to_list() == read_pairs(tmp_path / "cap2")["pair_id"].to_list()
    assert again.pairs == 5
    assert json.loads((tmp_path / "x" / "summary.json").read_text())["config"]["max_pairs_per_problem"] is None
    with pytest.raises(UserInputError, match="--max-pairs-per-problem must be >= 1"):
        PairConfig(rollouts=tmp_path / "many", output=tmp_path / "neg", max_pairs_per_problem=-1)


def test_pairs_bad_input_is_one_line(tmp_path):
    with pytest.raises(UserInputError, match="no such rollouts folder"):
        build_pairs(PairConfig(rollouts=tmp_path / "nope", output=tmp_path / "out"), progress=False)
    pl.DataFrame({"pair_id": ["x"]}).write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(UserInputError, match="bad.parquet: missing field 'problem_id'"):
        read_pairs(tmp_path / "bad.parquet")


# --- judge verdicts -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, verdict",
    [
        ("They differ. [[yes]]", "yes"),
        ("First I thought [[no]] but actually [[YES]]", "yes"),  # the last verdict counts
        ("[[ No ]]", "no"),
        ("Verdict: yes", "abstain"),  # no brackets: never coerced into a class
        ("[[maybe]]", "abstain"),
        ("", "abstain"),
    ],
)
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) == verdict


def test_yes_means_different_means_similar_zero_and_orders_must_agree():
    assert decide([["yes"], ["yes"]]) == ("labelled", 0)  # different strategies -> not equivalent
    assert decide([["no"], ["no"]]) == ("labelled", 1)
    assert decide([["yes"], ["no"]]) == ("disagree", None)
    assert decide([["yes"], ["abstain"]]) == ("abstain", None)
    assert decide([["yes"], ["failed"]]) == ("failed", None)
    assert decide([["no"]]) == ("labelled", 1)  # one order only
    assert order_verdict(["yes", "no", "yes"]) == "yes"
    assert order_verdict(["yes", "no"]) == "abstain"  # a tie is not a majority
    assert order_verdict(["yes", "abstain", "abstain"]) == "abstain"


def test_prompt_rendering_keeps_latex_and_placeholders_in_solutions(tmp_path):
    text = render_prompt(DEFAULT_PROMPT, "Find $\\{x\\}$", "uses {solution_2} literally", "$\\frac{a}{b}$")
    assert "Find $\\{x\\}$" in text and "uses {solution_2} literally" in text and "$\\frac{a}{b}$" in text
    assert text.index("uses {solution_2}") < text.index("$\\frac{a}{b}$")
    assert rationale_of("Both use algebra.\n[[no]]") == "Both use algebra."
    bad = tmp_path / "prompt.txt"
    bad.write_text("Compare {solution_1} and {solution_2}")
    with pytest.raises(UserInputError, match="prompt.txt: prompt template lacks the placeholder {problem}"):
        load_prompt(bad)


def test_comparing_an_astronomically_large_answer_does_not_hang():
    """n!^{n!} at the probe points is a number with hundreds of millions of digits: the probe gives up (time
    limit) and math-verify decides, instead of pairing stalling on one problem."""
    import time

    start = time.monotonic()
    assert answer_classes(["n!^{n!}", "5", "n!^{n!}"]) == [0, 1, 0]
    assert time.monotonic() - start < 60


def test_each_generator_is_served_with_its_own_parallelism_and_memory(tmp_path):
    """A generators file may give one model its own vLLM settings (a 7B model whose 28 attention heads split 4 ways,
    a 32B one on 2 GPUs x 4 replicas); each gets a server process of its own with them, the others the run's."""
    from darling.core.engine_config import engine_options
    from darling.core.engines import make_engine
    from darling.datagen.config import RolloutConfig, load_generator_config

    listed = tmp_path / "generators.toml"
    listed.write_text(
        '[[generators]]\nname = "a"\nmodel = "Qwen/Qwen3-4B"\n\n'
        '[[generators]]\nname = "b"\nmodel = "Qwen/Qwen2.5-Math-7B-Instruct"\ntensor_parallel_size = 4\n'
        "data_parallel_size = 2\nmax_model_len = 4096\ngpu_memory_utilization = 0.85\n"
    )
    config = RolloutConfig(
        problems="arithmetic",
        output=tmp_path / "o",
        generators=listed,
        engine="vllm",
        data_parallel_size=8,
        devices="0,1,2,3,4,5,6,7",
    )
    commands = {}
    for spec in load_generator_config(listed):
        engine = make_engine("vllm", **engine_options(config, spec.engine_overrides()))
        commands[spec.name] = engine.server_for(spec.engine_model).command()

    def value(command: list[str], flag: str) -> str | None:
        return command[command.index(flag) + 1] if flag in command else None

    assert (value(commands["a"], "--tensor-parallel-size"), value(commands["a"], "--data-parallel-size")) == ("1", "8")
    assert value(commands["a"], "--max-model-len") is None  # the model's own context length
    b = commands["b"]
    assert (value(b, "--tensor-parallel-size"), value(b, "--data-parallel-size"), value(b, "--max-model-len")) == (
        "4",
        "2",
        "4096",
    )
    assert (
        value(b, "--gpu-memory-utilization") == "0.85"
        and value(b, "--served-model-name") == "Qwen/Qwen2.5-Math-7B-Instruct"
    )
    # Engine settings are not part of what defines the rows: serving a generator differently resumes the same run.
    assert "tensor_parallel_size" not in json.dumps(config.identity())
    bad = tmp_path / "bad.toml"
    bad.write_text('[[generators]]\nname = "a"\nmodel = "m"\ntensor_parallel_size = 0\n')
    with pytest.raises(UserInputError, match=r"generators\[0\]: field 'tensor_parallel_size' must be an integer >= 1"):
        load_generator_config(bad)
