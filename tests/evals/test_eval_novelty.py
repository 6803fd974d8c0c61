"""`darling eval novelty`: NoveltyBench's utility and quality buckets by hand, partition-order effects, prompt
validation, the partition and utility options on stored generations (short responses, where NoveltyBench's
rule and union-find disagree), and an end-to-end CLI run (real SmolLM2 through the hf engine, a real MiniLM
classifier export, a real one-output reward model) that resumes without regenerating and rescores with
--no-generate. The partitions themselves: test_novelty_partition.py."""

import json
import os
import re
import subprocess
import sys

import polars as pl
import pytest
from helpers import NOVELTY_CURATED, darling_in_process, write_jsonl

from darling.classifier.partition import partition_texts
from darling.core.errors import UserInputError
from darling.core.quality import distinct_answers
from darling.evals.config import NOVELTYBENCH_CUT_POINTS, parse_cut_points
from darling.evals.novelty import credited_quality, load_prompts, novelty_utility, quality_bucket

CURATED = NOVELTY_CURATED  # NoveltyBench's 100 curated prompts, packaged (evals/resources, MIT)
W = [1.0, 0.8, 0.64, 0.512]  # patience 0.8 ** i for k = 4; sum 2.952


def darling(*args):
    env = {**os.environ, "OMP_NUM_THREADS": "2", "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "darling", *map(str, args)], capture_output=True, text=True, env=env)


# -- the NoveltyBench definitions ----------------------------------------------------------------------------
def test_utility_by_hand_only_first_members_count():
    # Classes [0, 0, 1, 2]: response 1 repeats class 0, so its 9 earns nothing although it beats the first's 5.
    credited = credited_quality([0, 0, 1, 2], [5, 9, 3, 7])
    assert credited == [5, 0, 3, 7]
    expected = (5 * W[0] + 3 * W[2] + 7 * W[3]) / sum(W)  # = 10.504 / 2.952
    assert novelty_utility([0, 0, 1, 2], [5, 9, 3, 7], 0.8) == pytest.approx(expected) == pytest.approx(3.558266)
    assert novelty_utility([0, 0, 1, 2], [5, 1, 3, 7], 0.8) == pytest.approx(expected)  # the repeat is ignored
    # The closed form (1 - p) / (1 - p^k) * sum p^i q_i, as the normalised average it is.
    assert expected == pytest.approx((1 - 0.8) / (1 - 0.8**4) * 10.504)
    assert novelty_utility([0, 0, 1, 2], [5, 9, 3, 7], 1.0) == pytest.approx(15 / 4)  # patience 1: plain mean
    assert novelty_utility([0, 0, 1, 2], [5, 9, 3, 7], 0.0) == pytest.approx(5)  # patience 0: the first only
    assert novelty_utility([0, 1, 2, 3], [1, 1, 1, 1], 0.8) == pytest.approx(1.0)  # all distinct, quality 1
    assert novelty_utility([0, 0, 0, 0], [1, 1, 1, 1], 0.8) == pytest.approx(1 / 2.952)  # one class


def test_generation_order_keeps_distinct_but_changes_utility():
    quality = {"cat one": 5, "cat two": 9, "dog": 3, "fish": 7}
    same_animal = lambda pairs: [a.split()[0] == b.split()[0] for a, b in pairs]  # noqa: E731
    orders = [
        ["cat one", "cat two", "dog", "fish"],
        ["cat two", "dog", "cat one", "fish"],
        ["dog", "fish", "cat one", "cat two"],
    ]
    classes, _ = partition_texts(orders, same_animal)
    assert classes == [[0, 0, 1, 2], [0, 1, 0, 2], [0, 1, 2, 2]]
    assert [len(set(c)) for c in classes] == [3, 3, 3]
    utilities = [novelty_utility(c, [quality[t] for t in o], 0.8) for c, o in zip(classes, orders, strict=True)]
    assert utilities == pytest.approx(
        [10.504 / 2.952, (9 + 3 * 0.8 + 7 * 0.512) / 2.952, (3 + 7 * 0.8 + 5 * 0.64) / 2.952]
    )
    # With equal qualities only the positions of the first members matter: swapping two cats changes nothing.
    flat = [novelty_utility(c, [1] * 4, 0.8) for c in partition_texts([orders[0], orders[0][::-1]], same_animal)[0]]
    assert flat[0] == pytest.approx((1 + 0.64 + 0.512) / 2.952) and flat[1] == pytest.approx((1 + 0.8 + 0.64) / 2.952)


def test_quality_buckets_at_the_cut_points():
    cuts = NOVELTYBENCH_CUT_POINTS
    assert quality_bucket(-100.0) == 1 and quality_bucket(100.0) == 10
    assert quality_bucket(cuts[0]) == 1  # a score equal to a cut point falls in the lower bucket (bisect_left)
    assert quality_bucket(cuts[0] + 1e-9) == 2
    assert [quality_bucket(c) for c in cuts] == list(range(1, 10))
    assert quality_bucket(cuts[-1]) == 9 and quality_bucket(cuts[-1] + 1e-9) == 10
    custom = parse_cut_points("0, 1.5")
    assert custom == (0.0, 1.5)
    assert [quality_bucket(x, custom) for x in (-1, 0, 0.1, 1.5, 2)] == [1, 1, 2, 2, 3]
    for bad in ("1,x", "2,1", "1,1", ""):
        with pytest.raises(UserInputError, match="cut points|comma-separated"):
            parse_cut_points(bad)


def test_prompts_ids_categories_and_bad_rows(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": 7, "prompt": "a", "category": "x"}, {"prompt": "b"}])
    first, second = load_prompts(path)
    assert (first.prompt_id, first.category) == ("7", "x")
    assert second.prompt_id == load_prompts(write_jsonl(tmp_path / "q.jsonl", [{"prompt": "b"}]))[0].prompt_id
    cases = [
        ({"text": "a"}, "missing field 'prompt'"),
        ({"prompt": 3}, "field 'prompt' must be a non-empty string"),
        ({"prompt": "a", "category": 1}, "field 'category' must be a string"),
        ({"id": 7, "prompt": "c"}, "duplicate prompt id '7'"),
    ]
    for row, message in cases:
        bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": 7, "prompt": "a"}, row])
        with pytest.raises(UserInputError, match=f"^{re.escape(str(bad))}:2: {message}"):
            load_prompts(bad)


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    bad = write_jsonl(tmp_path / "p.jsonl", [{"prompt": "a"}, {"prompt": ""}])
    result = darling(
        "eval", "novelty", "--prompts", bad, "--model", "m", "--classifier", tmp_path, "-o", tmp_path / "o"
    )
    assert result.returncode == 2 and result.stderr.startswith(f"error: {bad}:2: field 'prompt' must be")
    good = write_jsonl(tmp_path / "g.jsonl", [{"prompt": "a"}])
    result = darling(
        "eval", "novelty", "--prompts", good, "--model", "m", "--classifier", tmp_path, "-o", tmp_path / "o"
    )
    assert result.returncode == 2 and "not a classifier directory" in result.stderr
    (tmp_path / "config.json").write_text("{}")  # a foreign HF classifier needs its threshold
    result = darling(
        "eval", "novelty", "--prompts", good, "--model", "m", "--classifier", tmp_path, "-o", tmp_path / "o"
    )
    assert result.returncode == 2 and "--threshold" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    result = darling(
        "eval",
        "novelty",
        "--prompts",
        good,
        "--model",
        "m",
        "--classifier",
        tmp_path,
        "--partition",
        "transitive",
        "-o",
        tmp_path / "o",
    )
    assert result.returncode == 2 and "partition must be one of noveltybench, union-find, got 'transitive'" in (
        result.stderr
    )


def test_flags_and_their_aliases_reach_the_config(tmp_path, monkeypatch):
    """eval novelty's flags are NoveltyConfig's fields (the engine's among them), in process up to evaluate_novelty."""
    from typer.testing import CliRunner

    import darling.evals.novelty
    from darling.cli.main import app
    from darling.core.engine_config import engine_options
    from darling.evals.config import NoveltyConfig

    seen = []
    metrics = {
        "run": {},
        "n_prompts": 0,
        "k": 3,
        "mean_distinct": None,
        "mean_utility": None,
        "mean_quality": None,
        "n_prompts_incomplete": 0,
    }
    monkeypatch.setattr(
        darling.evals.novelty, "evaluate_novelty", lambda c, progress: seen.append(c) or {c.output: metrics}
    )
    args = [
        "eval",
        "novelty",
        "--prompts",
        "p.jsonl",
        "-m",
        "smollm2",
        "--classifier",
        "clf",
        "-k",
        3,
        "--classifier-url",
        "http://a:1",
        "--classifier-url",
        "http://b:2",
        "--cut-points",
        "0, 1.5",
        "--utility",
        "darling-fork",
        "--engine",
        "openai",
        "--base-url",
        "http://h/v1",
        "-o",
        tmp_path,
    ]
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    (config,) = seen
    assert (config.model, config.k, config.classifier_urls, config.utility) == (
        ["smollm2"],
        3,
        ["http://a:1", "http://b:2"],
        "darling-fork",
    )
    assert (config.partition, config.patience, config.quality_cut_points) == ("noveltybench", 0.8, (0.0, 1.5))
    assert engine_options(config)["base_url"] == "http://h/v1"
    assert NoveltyConfig(output=tmp_path, classifier="c", generate=False).quality_cut_points == NOVELTYBENCH_CUT_POINTS
    with pytest.raises(UserInputError, match="strictly increasing"):
        NoveltyConfig(output=tmp_path, classifier="c", generate=False, cut_points="1,0")


# -- end to end ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm_reward_model(tmp_path_factory, minilm_path):
    """A real one-output HF sequence classifier on the MiniLM backbone. Its head is untrained: the scores
    exercise the pipeline (shapes, buckets), not quality."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = tmp_path_factory.mktemp("novelty-rm")
    AutoModelForSequenceClassification.from_pretrained(minilm_path, num_labels=1).save_pretrained(path)
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(path)
    return path


@pytest.mark.slow
def test_cli_end_to_end_resumes_and_rescores(
    tmp_path, smollm2_dir, minilm_export, minilm_bi_export, minilm_reward_model
):
    """SmolLM2's answers: sentences of more than 5 words, which NoveltyBench's partition gives to the classifier (a
    tiny random policy's byte strings are one word each, which its short-answer word rule decides)."""
    out = tmp_path / "novelty"
    args = [
        "eval",
        "novelty",
        "--prompts",
        CURATED,
        "--limit",
        "2",
        "--model",
        "smollm2",
        "--k",
        "3",
        "--max-tokens",
        "24",
        "--classifier",
        minilm_export,
        "--reward-model",
        minilm_reward_model,
        "--threads",
        "2",
        "--output",
        out,
    ]
    result = darling(*args)
    assert result.returncode == 0, result.stderr
    assert "6 new, 0 already there, 0 failed" in result.stdout
    for name in ("metrics.json", "report.md", "scores.parquet", "per_prompt.parquet"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "novelty.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    metrics = json.loads((out / "metrics.json").read_text())
    export_threshold = json.loads((minilm_export / "darling.json").read_text())["threshold"]
    assert (metrics["n_prompts"], metrics["n_prompts_incomplete"], metrics["k"]) == (2, 0, 3)
    assert 1 <= metrics["mean_distinct"] <= 3 and 1 <= metrics["mean_utility"] <= 10
    assert metrics["threshold"] == pytest.approx(export_threshold) and metrics["reward_model"] == str(
        minilm_reward_model
    )
    assert metrics["per_category"]["Creativity"]["n_prompts"] == 2  # curated-0 and curated-1
    assert metrics["threshold_source"] == "the export's calibrated threshold, darling.json"
    assert metrics["partition"]["method"] == "noveltybench" and metrics["partition"]["pairs_total"] == 2 * 3
    assert metrics["partition"]["decision"] == "P(equivalent) > threshold"
    assert (metrics["utility"]["method"], metrics["utility"]["patience"]) == ("noveltybench", 0.8)

    scores = pl.read_parquet(out / "scores.parquet")
    assert scores.height == 2 * 3 and set(scores["status"]) == {"ok"}
    assert scores.select("prompt_id", "sample_index").rows() == [
        (p, i) for p in ("curated-0", "curated-1") for i in range(3)
    ]
    assert scores["quality"].is_between(1, 10).all() and scores["raw_reward"].is_not_null().all()
    per_prompt = pl.read_parquet(out / "per_prompt.parquet")
    for row in per_prompt.iter_rows(named=True):  # the report can be recomputed from the stored scores
        mine = scores.filter(pl.col("prompt_id") == row["prompt_id"])
        assert 1 <= row["distinct"] == mine["class_id"].n_unique() <= 3
        assert row["utility"] == pytest.approx(novelty_utility(mine["class_id"], mine["quality"], 0.8))
        assert row["distinct_answers"] == distinct_answers([t.strip() for t in mine["response"]])
        assert row["quality"] == pytest.approx(mine["quality"].mean())
    report = (out / "report.md").read_text()
    assert "| prompts scored | 2 |" in report and "Partition `noveltybench`: NoveltyBench's greedy" in report
    assert "| mean distinct (of 3; partition noveltybench) |" in report
    assert "| mean utility (utility noveltybench, patience 0.8) |" in report

    # The same command with the other partition and utility: the generations' identity is unchanged (nothing
    # is generated again), and the report names what its numbers are.
    shards = sorted((out / "generations").glob("part-*.parquet"))
    rerun = darling_in_process(
        *args, "--partition", "union-find", "--utility", "darling-fork"
    )  # the run above is its process
    assert rerun.returncode == 0, rerun.stderr
    assert "0 new, 6 already there, 0 failed" in rerun.stdout
    assert sorted((out / "generations").glob("part-*.parquet")) == shards
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["partition"]["method"], metrics["utility"]["method"]) == ("union-find", "darling-fork")
    assert metrics["utility"]["patience"] is None
    assert "| mean utility (utility darling-fork) |" in (out / "report.md").read_text()

    # Rescore the stored responses, no reward model, threshold 0 (every pair equivalent): one class per prompt. (The
    # rescores run the same command line in this process: the runs above are its processes.)
    rescore = darling_in_process(
        "eval", "novelty", "--no-generate", "--classifier", minilm_export, "--threshold", "0", "--output", out
    )
    assert rescore.returncode == 0, rescore.stderr
    assert "generations:" not in rescore.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["mean_distinct"] == 1 and metrics["mean_utility"] == pytest.approx(1 / (1 + 0.8 + 0.64))
    assert metrics["reward_model"] is None and metrics["threshold"] == 0
    assert "diversity only" in (out / "report.md").read_text()
    assert pl.read_parquet(out / "scores.parquet")["response"].to_list() == scores["response"].to_list()

    # The same responses through a bi-encoder export: one embedding per response, every pair from the matrix.
    rescore = darling_in_process(
        "eval", "novelty", "--no-generate", "--classifier", minilm_bi_export, "--threshold", "0", "--output", out
    )
    assert rescore.returncode == 0, rescore.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["kind"] == "darling bi-encoder export, in-process" and metrics["mean_distinct"] == 1
    # Greedy: each prompt's first response takes the other two (P > 0), read from one embedding call's matrices.
    assert (metrics["partition"]["pairs_compared"], metrics["partition"]["pairs_total"]) == (2 * 2, 2 * 3)
    assert metrics["partition"]["scorer_calls"] == 1 and metrics["partition"]["texts_embedded"] <= 2 * 3


class ScriptedEngine:
    """A stand-in generator: fixed texts (``texts[prompt id]``, else "<id> answer <i>"), and a failure for every
    prompt listed in ``fail`` (as an engine reports a request whose retries ran out)."""

    name = "scripted"

    def __init__(self, fail=(), texts=None):
        self.fail, self.asked, self.texts = set(fail), [], texts or {}

    def run(self, model, requests, on_result):
        from darling.core.engine_api import ChatResult, Completion

        for r in requests:
            self.asked.append((r.key, r.sampling.n))
            if r.key in self.fail:
                on_result(ChatResult(r, error="TimeoutError: no answer after 5 attempts"))
            else:
                texts = self.texts.get(r.key) or [f"{r.key} answer {i}" for i in range(r.sampling.n)]
                on_result(ChatResult(r, tuple(Completion(t, "stop", 3) for t in texts[: r.sampling.n])))

    def close(self):
        pass


@pytest.mark.slow
def test_failed_generations_are_excluded_counted_and_retried(tmp_path, minilm_export):
    from darling.evals.config import NoveltyConfig
    from darling.evals.novelty import evaluate_novelty

    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "prompt": "Name a colour."}, {"id": "b", "prompt": "Hi"}])
    config = NoveltyConfig(
        output=tmp_path / "out", prompts=str(prompts), model=["m"], k=2, classifier=str(minilm_export)
    )
    (first,) = evaluate_novelty(config, engine=ScriptedEngine(fail={"b"})).values()
    assert (first["n_prompts"], first["n_prompts_incomplete"]) == (1, 1)
    assert first["run"] == {"generated": 2, "failed": 2, "reused": 0}
    scores = pl.read_parquet(tmp_path / "out" / "scores.parquet")
    assert scores["prompt_id"].to_list() == ["a", "a"] and set(scores["status"]) == {"ok"}  # never scored

    engine = ScriptedEngine()
    (second,) = evaluate_novelty(config, engine=engine).values()
    assert engine.asked == [("b", 2)]  # only the failed prompt's samples are asked for again
    assert (second["n_prompts"], second["n_prompts_incomplete"]) == (2, 0)
    assert second["run"] == {"generated": 2, "failed": 0, "reused": 2}
    assert pl.read_parquet(tmp_path / "out" / "scores.parquet").height == 4


@pytest.mark.slow
def test_partition_and_utility_options_rescore_stored_generations(tmp_path, minilm_export):
    from darling.evals.config import NoveltyConfig
    from darling.evals.novelty import evaluate_novelty

    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "colour", "prompt": "Name a colour."}])
    # Short answers: NoveltyBench's rule decides them (shared lower-cased words x 2 >= the longer's word count):
    # "Blue" ~ "blue sky" and "Red" ~ "red". Threshold 1.0: the real classifier never says equivalent, so
    # union-find keeps all four apart. No reward model: quality 1, utility measures diversity only.
    engine = ScriptedEngine(texts={"colour": ["Blue", "blue sky", "Red", "red"]})
    base = dict(
        output=tmp_path / "out", prompts=str(prompts), model=["m"], k=4, classifier=str(minilm_export), threshold=1.0
    )
    (first,) = evaluate_novelty(NoveltyConfig(**base), engine=engine).values()
    assert first["mean_distinct"] == 2  # classes [0, 0, 1, 1]
    assert first["mean_utility"] == pytest.approx((1 + 0.64) / 2.952)  # credited at positions 0 and 2
    assert first["partition"]["method"] == "noveltybench" and first["utility"]["method"] == "noveltybench"
    assert first["partition"]["pairs_short_rule"] == first["partition"]["pairs_compared"] == 3 + 1
    assert first["partition"]["scorer_calls"] == 0 and first["threshold_source"] == "--threshold"

    # Other options on the same output: the stored generations are reused (their identity is unchanged).
    engine = ScriptedEngine()
    (fork,) = evaluate_novelty(NoveltyConfig(**base, utility="darling-fork"), engine=engine).values()
    assert fork["mean_distinct"] == 2 and fork["mean_utility"] == pytest.approx(2 / 4)  # sum of credited / k
    union_config = NoveltyConfig(**base, partition="union-find", utility="darling-fork")
    (union,) = evaluate_novelty(union_config, engine=engine).values()
    assert union["mean_distinct"] == 4 and union["mean_utility"] == pytest.approx(1.0)
    assert union["partition"]["pairs_compared"] == 6 and union["partition"]["pairs_short_rule"] == 0
    assert engine.asked == [] and union["run"] == {"generated": 0, "failed": 0, "reused": 4}

    report = (tmp_path / "out" / "report.md").read_text()
    assert "Partition `union-find`: DARLING's training partition" in report
    assert "Equivalent when P(equivalent) >= threshold." in report and "threshold 1.0 (--threshold)" in report
    assert "Utility `darling-fork`: DARLING's evaluation fork" in report and "patience 0.8" not in report
    scores = pl.read_parquet(tmp_path / "out" / "scores.parquet")
    assert scores["class_id"].to_list() == [0, 1, 2, 3]


def test_a_served_reward_model_without_an_answer_gives_no_utility(tmp_path, minilm_path):
    """--reward-model-url: quality comes from the replicas (load_reward_model), and a score no replica gives stops
    the evaluation with one line and exit 1, leaving the last metrics as they were: never a utility without its
    qualities. No server is started here (one costs ~40 s): the replica is a URL nobody listens on, as after a
    crash; served scores equal in-process ones in tests/rl/test_reward_model_served.py."""
    from helpers import assert_one_line_error, save_tiny_modernbert_classifier

    from darling.core.vllm_server import free_port
    from darling.evals.config import NoveltyConfig
    from darling.evals.novelty import evaluate_novelty

    clf = save_tiny_modernbert_classifier(tmp_path / "clf", minilm_path)  # a 2-label HF classifier: --threshold
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "colour", "prompt": "Name a colour."}])
    out = tmp_path / "out"
    config = NoveltyConfig(output=out, prompts=str(prompts), model=["m"], k=2, classifier=str(clf), threshold=0.5)
    evaluate_novelty(config, engine=ScriptedEngine(texts={"colour": ["Blue", "Red"]}))  # stored, no reward model
    metrics = (out / "metrics.json").read_text()
    dead = f"http://127.0.0.1:{free_port()}"
    args = ["eval", "novelty", "--no-generate", "--classifier", clf, "--threshold", "0.5", "-o", out]
    result = darling_in_process(*args, "--reward-model", "tiny:reward", "--reward-model-url", dead)
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]  # after the classifier's loading bar
    assert last.startswith("error: the reward model server failed (no replica answered (1 tried)"), result.stderr
    assert "Traceback" not in result.stderr
    assert (out / "metrics.json").read_text() == metrics
    no_model = darling_in_process(*args, "--reward-model-url", dead)
    assert_one_line_error(no_model, "--reward-model-url needs --reward-model")


@pytest.mark.slow
def test_several_models_in_one_process_load_the_scorer_and_reward_model_once(
    tmp_path, monkeypatch, minilm_export, minilm_reward_model
):
    """--model NAME=PATH (repeatable): each model's evaluation in OUTPUT/NAME/, exactly as it would be alone, with the
    classifier and the reward model loaded once for all. The same weights under two names draw the same seeds, so
    they answer alike (the comparison is paired); --no-generate without --model rescores every OUTPUT/NAME/. The
    policy is tiny:bytes-lm: its one-word answers are partitioned by NoveltyBench's short-answer word rule, so what
    this checks of the classifier is that it is loaded once (the reward model scores every answer)."""
    import darling.evals.novelty as novelty
    from darling.core.local_models import tiny_model_dir
    from darling.evals.config import NoveltyConfig

    loads = {"scorer": 0, "reward model": 0}
    for name, what in (("load_pair_scorer", "scorer"), ("load_reward_model", "reward model")):
        real = getattr(novelty, name)
        monkeypatch.setattr(
            novelty, name, lambda *a, _real=real, _what=what: loads.update({_what: loads[_what] + 1}) or _real(*a)
        )
    common = dict(
        prompts=str(CURATED), limit=2, k=2, max_tokens=8, classifier=str(minilm_export),
        reward_model=str(minilm_reward_model), threads=2,
    )  # fmt: skip
    out = tmp_path / "several"
    policy = tiny_model_dir("tiny:bytes-lm")  # a tiny random policy: the same weights under two names
    both = NoveltyConfig(output=out, model=["a=tiny:bytes-lm", f"b={policy}"], **common)
    results = novelty.evaluate_novelty(both)
    assert list(results) == [out / "a", out / "b"] and loads == {"scorer": 1, "reward model": 1}
    alone = novelty.evaluate_novelty(NoveltyConfig(output=tmp_path / "alone", model=["tiny:bytes-lm"], **common))
    scores = {name: pl.read_parquet(folder / "scores.parquet") for name, folder in (("a", out / "a"), ("b", out / "b"))}
    scores["alone"] = pl.read_parquet(tmp_path / "alone" / "scores.parquet")
    assert (
        scores["a"]["response"].to_list() == scores["b"]["response"].to_list() == scores["alone"]["response"].to_list()
    )
    assert scores["a"]["raw_reward"].to_list() == pytest.approx(scores["alone"]["raw_reward"].to_list(), abs=1e-5)
    assert json.loads((out / "b" / "generations" / "run.json").read_text())["model"] == str(policy)
    for key in ("n_prompts", "mean_distinct", "mean_utility", "mean_quality"):
        assert results[out / "a"][key] == pytest.approx(alone[tmp_path / "alone"][key]), key

    args = ["--no-generate", "--classifier", minilm_export, "--threshold", "0", "--partition", "union-find", "-o", out]
    rescore = darling("eval", "novelty", *args)
    assert rescore.returncode == 0, rescore.stderr
    assert f"-> {out / 'a'}/metrics.json" in rescore.stdout and f"-> {out / 'b'}/metrics.json" in rescore.stdout
    for folder in (out / "a", out / "b"):
        assert json.loads((folder / "metrics.json").read_text())["mean_distinct"] == 1  # P >= 0: one class


@pytest.mark.parametrize(
    "models, fragment",
    [
        (["smollm2", "rl=runs/rl"], "several --model: name each as NAME=PATH"),
        (["a=smollm2", "a=runs/rl"], "the name 'a' is given twice"),
    ],
)
def test_several_models_need_distinct_names(tmp_path, models, fragment):
    from helpers import assert_one_line_error

    flags = [f"--model={m}" for m in models]
    result = darling_in_process(
        "eval", "novelty", "--prompts", CURATED, "--classifier", tmp_path, *flags, "-o", tmp_path
    )
    assert_one_line_error(result, fragment)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_the_vendi_score_is_a_column_beside_distinct_at_the_order_asked(tmp_path, minilm_bi_export):
    """eval novelty writes the Vendi score of each prompt's answers (the bi-encoder's cosine as its kernel) into
    per_prompt.parquet and its mean into metrics.json, with the order and the kernel it used; another order rescores
    the stored generations."""
    from darling.evals.config import NoveltyConfig
    from darling.evals.novelty import evaluate_novelty

    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "same", "prompt": "Say it."}, {"id": "apart", "prompt": "Go."}])
    same = ["The cat sat on the warm mat by the door."] * 4
    apart = ["The cat sat on the mat.", "Stock prices fell sharply.", "Bake the bread at 200 C.", "Rain is due."]
    engine = ScriptedEngine(texts={"same": same, "apart": apart})
    base = dict(output=tmp_path / "out", prompts=str(prompts), model=["m"], k=4, classifier=str(minilm_bi_export))
    (first,) = evaluate_novelty(NoveltyConfig(**base), engine=engine).values()
    per_prompt = dict(pl.read_parquet(tmp_path / "out" / "per_prompt.parquet").select("prompt_id", "vendi").iter_rows())
    assert per_prompt["same"] == pytest.approx(1.0) and per_prompt["apart"] > 2.0
    assert first["mean_vendi"] == pytest.approx((per_prompt["same"] + per_prompt["apart"]) / 2)
    assert first["vendi"] == {"order": 1.0, "kernel": "the bi-encoder's cosine of the two answers' embeddings"}
    (second,) = evaluate_novelty(NoveltyConfig(**base, vendi_order=2.0), engine=ScriptedEngine()).values()
    assert second["vendi"]["order"] == 2.0 and 1.0 < second["mean_vendi"] < first["mean_vendi"]
