"""Pairs -> labelled pairs: an LLM judge decides whether two same-answer solutions use different strategies (or,
where a task has a checker, the rule labels them: ``darling.datagen.checker_labels``).

What the released helper got wrong, and this module does not do:
- a failed call or an unparseable verdict became "not similar" (a label). Here a verdict is the *last*
  ``[[yes]]``/``[[no]]`` in the output; anything else is ``abstain`` with the raw output kept, and a call
  that fails after its retries makes the pair ``failed`` (a rerun retries it). Neither is ever a label.
- its prompt answered ``[[Yes]]`` for "same" and stored that as 0 (inverted labels). Here the question is
  "different strategies?": ``yes`` -> ``similar = 0``, ``no`` -> ``similar = 1``; tested.
Position bias: by default each pair is judged in both orders and labelled only when both orders agree.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import polars as pl

from darling.core.checkers import get_checker
from darling.core.engine_api import ChatRequest, ChatResult, Engine, Sampling
from darling.core.engine_config import engine_options
from darling.core.engines import build_engine
from darling.core.errors import UserInputError
from darling.core.progress import progress_bar
from darling.core.readers import read_text
from darling.core.schemas import JUDGE_COLUMNS, polars_schema, stable_id
from darling.core.shards import ShardStore, atomic_write_bytes, atomic_write_parquet
from darling.datagen.checker_labels import (
    CHECKER_ENGINE,
    agreement,
    checker_judge_name,
    checker_record,
    checker_sha256,
)
from darling.datagen.config import JudgeConfig
from darling.datagen.pairs import read_pairs

LABELLED_FILE = "labelled.parquet"
RECORDS_DIR = "records"
SUMMARY_FILE = "summary.json"
PLACEHOLDERS = ("{problem}", "{solution_1}", "{solution_2}")
PLACEHOLDER = re.compile(r"\{(problem|solution_1|solution_2)\}")
VERDICT = re.compile(r"\[\[\s*(yes|no)\s*\]\]", re.IGNORECASE)
JudgeKey = tuple[str, int]  # a judge request's key: (pair_id, order), 0 = as paired, 1 = swapped

DEFAULT_PROMPT = """\
You will compare two solutions to the same math problem. Both solutions reach the same final answer.
Decide whether the two solutions use DIFFERENT strategies.

Count them as different strategies if any of these holds:
- they use different methods (for example algebra vs. casework vs. a geometric argument);
- their key reasoning steps diverge;
- they rely on different underlying concepts or theorems;
- their intermediate manipulations differ in a meaningful way.
Differences only in wording, notation, level of detail or the order of routine steps do NOT count.

[Problem]
{problem}

[Solution 1]
{solution_1}

[Solution 2]
{solution_2}

Briefly explain the main steps of each solution and compare them. Then end your answer with [[yes]] if the \
two solutions use different strategies, or [[no]] if they use essentially the same strategy.
"""


@dataclass(frozen=True)
class LabelSummary:
    output: Path
    counts: dict[str, int]  # status -> pairs (labelled, abstain, disagree, failed)
    label_balance: dict[int, int]  # similar -> labelled pairs
    judged_now: int
    skipped: int
    requests: int


def load_prompt(path: Path | None) -> str:
    if path is None:
        return DEFAULT_PROMPT
    template = read_text(path, "prompt file")
    for placeholder in PLACEHOLDERS:
        if placeholder not in template:
            raise UserInputError(f"{path}: prompt template lacks the placeholder {placeholder}")
    return template


def render_prompt(template: str, problem: str, first: str, second: str) -> str:
    # One pass over the template's placeholders: not str.format (LaTeX braces everywhere), and not chained
    # replaces (a solution that contains "{solution_2}" must stay as written).
    values = {"problem": problem, "solution_1": first, "solution_2": second}
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def verdict_regex(max_tokens: int) -> str:
    """structured="regex": a free rationale short enough (~2 characters per token) that the verdict always
    fits in ``max_tokens``; otherwise a long rationale is cut off and the call can only abstain."""
    return rf"[\s\S]{{0,{max(0, 2 * (max_tokens - 16))}}}\[\[(yes|no)\]\]"


def parse_verdict(text: str) -> str:
    """``yes`` / ``no`` from the last ``[[yes]]``/``[[no]]`` (any case); ``abstain`` otherwise."""
    found = VERDICT.findall(text or "")
    return found[-1].lower() if found else "abstain"


def rationale_of(text: str) -> str:
    matches = list(VERDICT.finditer(text or ""))
    return (text[: matches[-1].start()] if matches else text or "").strip()


def order_verdict(verdicts: list[str]) -> str:
    """Majority of one order's votes; no strict majority for yes or no -> abstain."""
    counts = Counter(verdicts)
    for verdict in ("yes", "no"):
        if counts[verdict] * 2 > len(verdicts):
            return verdict
    return "abstain"


def decide(per_order: list[list[str]]) -> tuple[str, int | None]:
    """(status, similar) from each order's verdicts. ``yes`` (different strategies) -> similar = 0."""
    if any("failed" in votes for votes in per_order):
        return "failed", None
    finals = [order_verdict(votes) for votes in per_order]
    if "abstain" in finals:
        return "abstain", None
    if len(set(finals)) > 1:
        return "disagree", None
    return "labelled", 0 if finals[0] == "yes" else 1


def _truncate(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[:limit] + "\n[...]"


def judge_requests(pair: dict[str, Any], template: str, config: JudgeConfig) -> list[ChatRequest]:
    a = _truncate(pair["generation_0"], config.max_chars_per_solution)
    b = _truncate(pair["generation_1"], config.max_chars_per_solution)
    orders = [(a, b), (b, a)] if config.both_orders else [(a, b)]
    requests = []
    for order, (first, second) in enumerate(orders):
        seed = int(stable_id(config.seed, pair["pair_id"], order), 16) % 2**31
        sampling = Sampling(config.votes, config.temperature, 1.0, config.max_tokens, seed)
        messages = ({"role": "user", "content": render_prompt(template, pair["prompt"], first, second)},)
        choices = ("[[yes]]", "[[no]]") if config.structured == "choice" else None
        regex = verdict_regex(config.max_tokens) if config.structured == "regex" else None
        requests.append(ChatRequest((pair["pair_id"], order), messages, sampling, choices, regex))
    return requests


def judged_record(pair: dict[str, Any], results: list[ChatResult], config: JudgeConfig, prompt_sha: str) -> dict:
    per_order, raw, errors = [], [], []
    for result in sorted(results, key=lambda r: cast(JudgeKey, r.request.key)[1]):
        if result.error is None:  # result.ok, said so that the else branch knows the error is a str
            texts = [c.text for c in result.completions]
            per_order.append([parse_verdict(t) for t in texts])
            raw.extend(texts)
        else:
            per_order.append(["failed"])
            errors.append(result.error)
    status, similar = decide(per_order)
    return {
        **pair,
        "similar": similar,
        "status": status,
        "verdicts": [v for votes in per_order for v in votes],
        "raw_outputs": raw,
        "rationale": rationale_of(raw[0]) if raw else None,
        "judge_model": config.judge_model,
        "judge_engine": config.engine,
        "prompt_sha256": prompt_sha,
        "error": "; ".join(errors) or None,
    }


def label_by_checker(config: JudgeConfig, pairs: pl.DataFrame) -> LabelSummary:
    """``--checker`` without ``--judge-model``: every pair labelled by rule (no model, no engine)."""
    checker = get_checker(str(config.checker))
    store = ShardStore(Path(config.output) / RECORDS_DIR, JUDGE_COLUMNS, ["pair_id"])
    store.check_settings({"checker": checker.name, "prompt_sha256": checker_sha256(checker)}, what="the checker")
    done = set(store.read()["pair_id"].to_list())
    todo = [p for p in pairs.iter_rows(named=True) if p["pair_id"] not in done]
    store.append([checker_record(pair, checker) for pair in todo])
    return finish_labels(config, store, judged_now=len(todo), skipped=len(done), requests=0)


def label_pairs(config: JudgeConfig, engine: Engine | None = None, progress: bool = True) -> LabelSummary:
    if config.judge_model is None:
        pairs = read_pairs(config.pairs)
        return label_by_checker(config, pairs.head(config.limit) if config.limit is not None else pairs)
    options = engine_options(config) if engine is None else None  # a bad engine option fails before anything
    template = load_prompt(config.prompt_file)
    prompt_sha = hashlib.sha256(template.encode()).hexdigest()
    pairs = read_pairs(config.pairs)
    if config.limit is not None:
        pairs = pairs.head(config.limit)
    store = ShardStore(Path(config.output) / RECORDS_DIR, JUDGE_COLUMNS, ["pair_id"])
    identity = {k: getattr(config, k) for k in ("judge_model", "both_orders", "votes", "temperature", "structured")}
    store.check_settings(
        {**identity, "max_chars": config.max_chars_per_solution, "prompt_sha256": prompt_sha},
        what="the judge, its prompt or its voting",
    )
    # Failed pairs (and missing ones) are judged again; final verdicts (incl. abstain, disagree) are kept.
    done = set(store.read().filter(pl.col("status") != "failed")["pair_id"].to_list())
    todo = {p["pair_id"]: p for p in pairs.iter_rows(named=True) if p["pair_id"] not in done}
    requests = [r for pair in todo.values() for r in judge_requests(pair, template, config)]
    per_pair = len(requests) // max(len(todo), 1)
    own_engine = engine is None
    engine = engine or build_engine(config, options)
    arrived: dict[str, list[ChatResult]] = {}
    buffer: list[dict] = []
    with progress_bar(enabled=progress) as bar:
        task = bar.add_task("judge", total=len(todo))

        def on_result(result: ChatResult) -> None:
            pair_id = cast(JudgeKey, result.request.key)[0]
            arrived.setdefault(pair_id, []).append(result)
            if len(arrived[pair_id]) == per_pair:
                buffer.append(judged_record(todo[pair_id], arrived.pop(pair_id), config, prompt_sha))
                bar.advance(task)
                if len(buffer) >= config.shard_size:
                    store.append(buffer)
                    buffer.clear()

        try:
            engine.run(str(config.judge_model), requests, on_result)
        finally:
            store.append(buffer)  # keep finished pairs, even when interrupted
            if own_engine:
                engine.close()  # the vllm engine's server process ends here, and its GPUs are free
    return finish_labels(config, store, judged_now=len(todo), skipped=len(done), requests=len(requests))


def finish_labels(config: JudgeConfig, store: ShardStore, judged_now: int, skipped: int, requests: int) -> LabelSummary:
    """Write ``labelled.parquet`` (agreed labels only: what ``train-classifier --data`` takes) and
    ``summary.json`` (verdict counts, label balance and judge calls over every run into this folder), and count."""
    import json

    output = Path(config.output)
    records = store.read()
    labelled = records.filter(pl.col("status") == "labelled")
    atomic_write_parquet(labelled.cast(polars_schema(JUDGE_COLUMNS)), output / LABELLED_FILE)
    counts = {status: 0 for status in ("labelled", "abstain", "disagree", "failed")}
    counts.update(Counter(records["status"].to_list()))
    balance = {0: 0, 1: 0, **Counter(labelled["similar"].to_list())}
    by_rule = config.judge_model is None
    summary = {
        "judge": checker_judge_name(get_checker(str(config.checker))) if by_rule else config.judge_model,
        "engine": CHECKER_ENGINE if by_rule else config.engine,
        "structured": config.structured,
        "both_orders": config.both_orders,
        "votes": config.votes,
        "prompt": "rule" if by_rule else str(config.prompt_file) if config.prompt_file else "default",
        "counts": counts,
        "label_balance": {str(k): v for k, v in sorted(balance.items())},
        "judge_calls": 0 if by_rule else int(records["verdicts"].list.len().sum()) if records.height else 0,
    }
    if config.checker is not None and not by_rule:  # the LLM judge scored against the rule, on the same pairs
        summary["agreement"] = agreement(records.to_dicts(), get_checker(config.checker), config.seed)
    atomic_write_bytes(output / SUMMARY_FILE, (json.dumps(summary, indent=2) + "\n").encode())
    return LabelSummary(output, counts, balance, judged_now, skipped, requests)
