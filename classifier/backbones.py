"""Resolve a backbone name to something ``from_pretrained`` can load, and load it safely.

Safety defaults: weights from safetensors only, ``trust_remote_code`` off unless asked for.
"""

from __future__ import annotations

from pathlib import Path

from darling.core.errors import UserInputError

LABEL_NAMES = {0: "different", 1: "equivalent"}
EQUIVALENT_INDEX = 1


def load_sequence_classifier(name_or_path: str, pad_token_id: int, trust_remote_code: bool = False):
    """A 2-class sequence classifier on top of a backbone (a new head when the backbone has none)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    try:
        return AutoModelForSequenceClassification.from_pretrained(
            name_or_path,
            dtype=torch.float32,  # fp32 master weights; mixed precision is a Trainer flag
            num_labels=2,
            id2label=dict(LABEL_NAMES),
            label2id={v: k for k, v in LABEL_NAMES.items()},
            pad_token_id=pad_token_id,
            use_safetensors=True,
            trust_remote_code=trust_remote_code,
        )
    except OSError as exc:
        raise UserInputError(f"{name_or_path}: cannot load model ({exc})") from None


def load_exported_strict(path: str | Path, auto_class=None, dtype: str = "float32"):
    """Load an exported model (default: the sequence classifier) in ``dtype``, failing on any missing,
    unexpected or mis-shaped weight.

    transformers only logs such mismatches; the reference conversion used ``strict=False`` and silently
    dropped weights. Here a mismatch is an error.
    """
    if auto_class is None:
        from transformers import AutoModelForSequenceClassification as auto_class

    import torch

    model, info = auto_class.from_pretrained(
        str(path), dtype=getattr(torch, dtype), use_safetensors=True, output_loading_info=True
    )
    check_loading_info(path, info)
    return model


def check_loading_info(path: str | Path, info: dict) -> None:
    """A missing, unexpected or mis-shaped weight (``from_pretrained``'s ``output_loading_info``) is an error."""
    problems = {k: v for k, v in info.items() if k != "error_msgs" and v}
    if problems or info.get("error_msgs"):
        raise UserInputError(f"{path}: weights do not match the model config: {problems or info['error_msgs']}")
