"""``darling eval creative``: EQ-Bench creative writing v3's rubric scoring of any writers, by any judge.

The benchmark's files come from the user's own checkout (``--bench-dir``; its rules and where its code does each
are in ``darling.evals.creative_bench``). Per writer, prompt and iteration one piece is written (temperature 0.7,
4000 tokens, a piece under 500 characters retried up to 3 times and then left out unjudged, as the benchmark
does), then judged once at temperature 0; the report (``darling.evals.creative_report``) recomputes every score
from the stored rows.

Resumable: pieces are ``ShardStore`` shards in ``OUTPUT/pieces/<writer>/`` keyed by (model, prompt_id,
iteration), their ``run.json`` the writer and its sampling, so a writer can be added to the same OUTPUT later;
judgments are shards in ``OUTPUT/judgments/`` keyed the same, their ``run.json`` the judge and the benchmark's
files. A rerun asks only for what is missing or failed. A failed piece (the engine gave up) or a failed judgment
(the engine gave up, or no ``name: score`` could be parsed from its answer) is recorded with its error, never
turned into a score; it leaves that piece out of the scores and is retried by a rerun. A judgment is tied to its
piece by a hash of the text (``piece_id``): a piece written again is judged again.

Differences from the benchmark (``core/conversation.py``, ``core/scoring.py``):
- min_p 0.1 is not sent to the writers (darling's engines have no min_p; at the judge's temperature 0 it would
  change nothing);
- a piece the engine failed to write is retried by a rerun; the benchmark marks it ``generation_failed`` and
  never writes it again (a failed or unparsed judgment it re-queues, as here);
- the bootstrap resamples prompts with all their iterations (seeded), the benchmark (prompt, iteration) tasks
  (unseeded): the same with one iteration; scores are kept unrounded (the benchmark rounds to 2 decimals);
- the pairwise Elo is not computed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import polars as pl

from darling.core.engine_api import ChatRequest, ChatResult, Engine, Sampling
from darling.core.engine_config import engine_options
from darling.core.engines import build_engine
from darling.core.errors import UserInputError
from darling.core.progress import progress_bar
from darling.core.schemas import RUN_FILE, stable_id
from darling.core.shards import ShardStore
from darling.datagen.config import GeneratorSpec
from darling.evals.creative_bench import Bench, BenchPrompt, load_bench, parse_judge_scores, strip_reasoning
from darling.evals.creative_config import CreativeConfig
from darling.evals.creative_report import build_tables, summarise, write_outputs
from darling.evals.math import slug

ATTEMPTS = 3  # generate_creative_piece: max_attempts for a piece shorter than its 500 characters
PIECES, JUDGMENTS = "pieces", "judgments"
KEY = ("model", "prompt_id", "iteration")
PIECE_COLUMNS = {
    "model": "String",
    "prompt_id": "String",
    "iteration": "Int64",  # 1-based, as the benchmark counts
    "seed_modifier": "String",
    "prompt": "String",  # what the writer was asked
    "piece": "String",  # null unless status == "ok"
    "status": "String",  # ok | short (under min_chars after 3 attempts: left out, final) | failed (retried)
    "attempts": "Int64",
    "finish_reason": "String",
    "num_tokens": "Int64",
    "error": "String",
}
JUDGMENT_COLUMNS = {
    "model": "String",
    "prompt_id": "String",
    "iteration": "Int64",
    "piece_id": "String",  # stable_id of the piece judged
    "judge_text": "String",  # the judge's answer (reasoning block removed); null when the engine gave up
    "scores": "String",  # JSON {name: value} as parsed; null unless status == "ok"
    "status": "String",  # ok | failed (retried by a rerun)
    "error": "String",
}


def _seed(*parts: object) -> int:
    return int(stable_id(*parts), 16) % 2**31


# -- stage 1: pieces -----------------------------------------------------------------------------------------
def piece_row(
    writer: str, prompt: BenchPrompt, iteration: int, result: ChatResult, attempt: int, min_chars: int
) -> dict[str, Any] | None:
    """The stored row of one answer; None when it is too short and may be asked again (attempt < 3)."""
    row: dict[str, Any] = {
        "model": writer,
        "prompt_id": prompt.prompt_id,
        "iteration": iteration,
        "seed_modifier": prompt.seed_modifier(iteration),
        "prompt": prompt.text(iteration),
        "attempts": attempt,
        "status": "failed",
        "error": result.error,
    }
    if not result.ok:
        return row
    completion = result.completions[0]
    text = strip_reasoning(completion.text).strip()
    short = len(text) < max(min_chars, 1)  # an empty piece is never judged (the benchmark skips it too)
    if short and attempt < ATTEMPTS:
        return None
    return row | {
        "piece": None if short else text,
        "status": "short" if short else "ok",
        "error": f"{len(text)} characters after {attempt} attempts (< {min_chars})" if short else None,
        "finish_reason": completion.finish_reason,
        "num_tokens": completion.num_tokens,
    }


def write_pieces(
    config: CreativeConfig, bench: Bench, spec: GeneratorSpec, store: ShardStore, engine: Engine, progress: bool
) -> dict[str, int]:
    """Write every missing or failed piece of ``spec``; too short ones are asked again (new seed) up to 3 times."""

    existing = store.read().filter(pl.col("status").is_in(["ok", "short"]))
    done = {(p, i) for p, i in existing.select("prompt_id", "iteration").iter_rows()}
    todo = [(p, i) for p in bench.prompts for i in range(1, config.iterations + 1) if (p.prompt_id, i) not in done]
    counts = {"written": 0, "short": 0, "failed": 0, "reused": len(bench.prompts) * config.iterations - len(todo)}
    prompts = {p.prompt_id: p for p in bench.prompts}
    buffer: list[dict[str, Any]] = []
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task(f"write {spec.name}", total=len(todo))
        for attempt in range(1, ATTEMPTS + 1):
            if not todo:
                break
            retry: list[tuple[BenchPrompt, int]] = []

            def on_result(result: ChatResult, attempt: int = attempt, retry: list = retry) -> None:
                prompt_id, iteration = cast("tuple[str, int]", result.request.key)
                row = piece_row(spec.name, prompts[prompt_id], iteration, result, attempt, config.min_chars)
                if row is None:
                    retry.append((prompts[prompt_id], iteration))
                    return
                counts["written" if row["status"] == "ok" else row["status"]] += 1
                buffer.append(row)
                bar.advance(task)
                if len(buffer) >= config.shard_size:
                    store.append(buffer)
                    buffer.clear()

            requests = [
                ChatRequest(
                    (p.prompt_id, i),
                    ({"role": "user", "content": p.text(i)},),  # the benchmark: the prompt alone, no system turn
                    Sampling(
                        1, config.temperature, 1.0, config.max_tokens, _seed(config.seed, p.prompt_id, i, attempt)
                    ),
                )
                for p, i in todo
            ]
            try:
                engine.run(spec.engine_model, requests, on_result)
            finally:
                store.append(buffer)  # keep what finished, even when interrupted
                buffer.clear()
            todo = retry
    return counts


# -- stage 2: judgments --------------------------------------------------------------------------------------
def judge_pieces(
    config: CreativeConfig, bench: Bench, pieces: pl.DataFrame, store: ShardStore, engine: Engine, progress: bool
) -> dict[str, int]:
    """Judge every ok piece without an ok judgment of that very text; temperature 0, one call each."""

    judged = store.read().filter(pl.col("status") == "ok")
    done = {(m, p, i, pid) for m, p, i, pid in judged.select(*KEY, "piece_id").iter_rows()}
    prompts = {p.prompt_id: p for p in bench.prompts}
    todo: dict[tuple[str, str, int], tuple[str, str]] = {}
    for model, prompt_id, iteration, piece in pieces.filter(pl.col("status") == "ok").select(*KEY, "piece").iter_rows():
        piece_id = stable_id(piece)
        if (model, prompt_id, iteration, piece_id) not in done:
            todo[(model, prompt_id, iteration)] = (piece_id, bench.judge_prompt(prompts[prompt_id], piece))
    counts = {"judged": 0, "failed": 0, "reused": pieces.filter(pl.col("status") == "ok").height - len(todo)}
    if not todo:
        return counts
    buffer: list[dict[str, Any]] = []
    sampling = Sampling(1, 0.0, 1.0, config.judge_max_tokens, None)  # the benchmark's judge: temperature 0
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task("judge", total=len(todo))

        def on_result(result: ChatResult) -> None:
            key = cast("tuple[str, str, int]", result.request.key)
            row: dict[str, Any] = dict(zip(KEY, key, strict=True)) | {"piece_id": todo[key][0], "error": result.error}
            if result.ok:
                answer = strip_reasoning(result.completions[0].text)
                scores = parse_judge_scores(answer)
                row["judge_text"] = answer
                if scores:
                    row.update(scores=json.dumps(scores), status="ok")
                else:
                    row["error"] = "no 'Criterion: score' (0-20) could be parsed from the judge's answer"
            row.setdefault("status", "failed")
            counts["judged" if row["status"] == "ok" else "failed"] += 1
            buffer.append(row)
            bar.advance(task)
            if len(buffer) >= config.shard_size:
                store.append(buffer)
                buffer.clear()

        requests = [ChatRequest(k, ({"role": "user", "content": text},), sampling) for k, (_, text) in todo.items()]
        try:
            engine.run(str(config.judge_model), requests, on_result)
        finally:
            store.append(buffer)
    return counts


# -- the whole evaluation ------------------------------------------------------------------------------------
def _piece_store(output: Path, name: str) -> ShardStore:
    return ShardStore(output / PIECES / slug(name), PIECE_COLUMNS, KEY)


def _writer_identity(config: CreativeConfig, spec: GeneratorSpec, bench: Bench) -> dict[str, Any]:
    """What defines a writer's pieces; limit and iterations do not (a larger one later extends the output)."""
    keep = ("temperature", "max_tokens", "min_chars", "seed")
    return {
        "model": spec.name,
        "path": spec.engine_model,
        "prompts_sha256": bench.files["prompts_file"]["sha256"],
        **{k: getattr(config, k) for k in keep},
    }


def _judge_identity(config: CreativeConfig, bench: Bench) -> dict[str, Any]:
    files = {f: bench.files[f]["sha256"] for f in ("criteria_file", "negative_criteria_file", "judge_prompt_file")}
    return {"judge_model": config.judge_model, "judge_max_tokens": config.judge_max_tokens, **files}


def check_judged_files(judgments_dir: Path, bench: Bench) -> None:
    """--no-generate: the benchmark's files must be those the stored judgments were made with."""
    run = judgments_dir / RUN_FILE
    if not run.exists():
        return
    saved = json.loads(run.read_text())
    for field in ("criteria_file", "negative_criteria_file", "judge_prompt_file"):
        if saved.get(field) != bench.files[field]["sha256"]:
            raise UserInputError(
                f"{bench.files[field]['path']}: not the file the stored judgments were made with (sha256 differs)"
            )


def stored_names(output: Path) -> list[str]:
    """Writers with stored pieces, by the name their ``run.json`` records (--no-generate without --model)."""
    runs = sorted((output / PIECES).glob(f"*/{RUN_FILE}"))
    if not runs:
        raise UserInputError(f"{output / PIECES}: no stored pieces; run once without --no-generate")
    return [json.loads(run.read_text())["model"] for run in runs]


def evaluate_creative(
    config: CreativeConfig,
    writer_engine: Engine | None = None,
    judge_engine: Engine | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Write and judge (resumably), then score and write metrics.json, report.md, creative.png, pieces.parquet and
    criteria.parquet to ``config.output``. Returns the metrics plus this run's counts (``run``)."""

    bench = load_bench(config)  # every file of the checkout is checked before anything is written
    output = Path(config.output)
    if config.generate:
        if writer_engine is None:
            engine_options(config)  # a bad engine option fails before anything runs
        if judge_engine is None:
            engine_options(config.judge_settings())
        names = [s.name for s in config.writer_specs()]
    else:
        names = [s.name for s in config.writer_specs()] or stored_names(output)
        check_judged_files(output / JUDGMENTS, bench)
    _unique_slugs(names)
    run: dict[str, Any] = {}
    if config.generate:
        pieces_run = {}
        for spec in config.writer_specs():
            store = _piece_store(output, spec.name)
            store.check_settings(_writer_identity(config, spec, bench), what="the writer or its sampling")
            engine = writer_engine or build_engine(config, engine_options(config, spec.engine_overrides()))
            try:
                pieces_run[spec.name] = write_pieces(config, bench, spec, store, engine, progress)
            finally:
                if writer_engine is None:
                    engine.close()  # a vllm server per writer: free it before the next one
        run["pieces"] = pieces_run
    pieces = _read_pieces(output, names, bench, config.iterations if config.generate else None)
    judgments_dir = output / JUDGMENTS
    if config.generate:
        store = ShardStore(judgments_dir, JUDGMENT_COLUMNS, KEY)
        store.check_settings(_judge_identity(config, bench), what="the judge or the benchmark's files")
        engine = judge_engine or build_engine(config.judge_settings())
        try:
            run["judgments"] = judge_pieces(config, bench, pieces, store, engine, progress)
        finally:
            if judge_engine is None:
                engine.close()
    judgments = ShardStore(judgments_dir, JUDGMENT_COLUMNS, KEY).read() if judgments_dir.exists() else None
    table, long = build_tables(pieces, judgments, bench)
    metrics = summarise(config, bench, names, table, long)
    judge_run = judgments_dir / RUN_FILE
    metrics["judge"] = json.loads(judge_run.read_text()) if judge_run.exists() else None
    write_outputs(output, table, long, metrics)
    return {**metrics, "run": run}


def _unique_slugs(names: list[str]) -> None:
    seen: dict[str, str] = {}
    for name in names:
        if slug(name) in seen:
            raise UserInputError(f"writers {seen[slug(name)]!r} and {name!r} would share the folder {slug(name)!r}")
        seen[slug(name)] = name


def _read_pieces(output: Path, names: list[str], bench: Bench, iterations: int | None) -> pl.DataFrame:
    """The stored pieces of ``names`` for this run's prompts and ``iterations`` (None: all stored)."""
    wanted = [p.prompt_id for p in bench.prompts]
    frames = []
    for name in names:
        folder = output / PIECES / slug(name)
        if not folder.is_dir():
            raise UserInputError(f"{folder}: no stored pieces of writer {name!r}; run it without --no-generate")
        frames.append(ShardStore(folder, PIECE_COLUMNS, KEY).read())
    rows = pl.concat(frames, how="vertical")
    rows = rows.filter(pl.col("prompt_id").is_in(wanted))
    return rows if iterations is None else rows.filter(pl.col("iteration") <= iterations)
