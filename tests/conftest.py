"""Shared fixtures (plain helpers live in helpers.py, which tests import directly)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import NOVELTY_PAIRS, build_qwen_tokenizer, save_tiny_bert_backbone, save_tiny_qwen3_backbone


@pytest.fixture(scope="session")
def qwen_tokenizer():
    return build_qwen_tokenizer()


@pytest.fixture(scope="session")
def minilm_path() -> str:
    from darling.classifier.backbones import resolve_backbone
    from darling.classifier.config import PACKAGED_MINILM
    from darling.errors import UserInputError

    try:
        return resolve_backbone(PACKAGED_MINILM)
    except UserInputError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def novelty_pairs_path() -> Path:
    if not NOVELTY_PAIRS.exists():
        pytest.skip(f"{NOVELTY_PAIRS} is absent (../shared is only on development and CI machines)")
    return NOVELTY_PAIRS


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, minilm_path) -> Path:
    return save_tiny_bert_backbone(tmp_path_factory.mktemp("tiny-bert"), minilm_path)


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory, qwen_tokenizer) -> Path:
    return save_tiny_qwen3_backbone(tmp_path_factory.mktemp("tiny-qwen3"), qwen_tokenizer)
