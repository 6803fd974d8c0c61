"""Export a trained classifier as a Hugging Face directory that vLLM serves as it is.

Layout: ``config.json`` (id2label), ``model.safetensors``, tokenizer files, ``darling.json`` (everything
needed to reproduce the encoding and the decision) and a ``README.md`` model card. Files are written to a
temporary folder and moved in; ``darling.json`` is moved last, so its presence marks a complete export.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from darling import __version__
from darling.classifier.backbones import EQUIVALENT_INDEX, LABEL_NAMES
from darling.classifier.encoding import PairEncoder
from darling.errors import UserInputError

EXPORT_FORMAT_VERSION = 1
META_FILE = "darling.json"


def read_export_meta(path: str | Path) -> dict[str, Any]:
    meta_path = Path(path) / META_FILE
    if not meta_path.exists():
        raise UserInputError(f"{path}: not a darling classifier export (no {META_FILE}); train one first")
    meta = json.loads(meta_path.read_text())
    if meta.get("format_version", 0) > EXPORT_FORMAT_VERSION:
        raise UserInputError(f"{meta_path}: format_version {meta['format_version']} is newer than this darling")
    return meta


def build_meta(
    encoder: PairEncoder,
    backbone: str,
    threshold: float,
    symmetric: bool,
    metrics: dict[str, Any],
    data_sha256: str,
    train_config: dict[str, Any],
) -> dict[str, Any]:
    s = encoder.special
    return {
        "format_version": EXPORT_FORMAT_VERSION,
        "darling_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "backbone": backbone,
        "max_tokens_per_response": encoder.max_tokens_per_response,
        "max_length": encoder.max_length,
        "cls_token_id": s.cls_id,
        "sep_token_id": s.sep_id,
        "pad_token_id": s.pad_id,
        "input_format": "[CLS] a[:max_tokens_per_response] [SEP] b[:max_tokens_per_response] [SEP]",
        "labels": {str(k): v for k, v in LABEL_NAMES.items()},
        "equivalent_index": EQUIVALENT_INDEX,
        "threshold": threshold,
        "symmetric": symmetric,
        "validation_metrics": metrics,
        "train_data_sha256": data_sha256,
        "train_config": train_config,
    }


def _model_card(meta: dict[str, Any]) -> str:
    m = meta["validation_metrics"]
    rows = "\n".join(f"| {k} | {v:.4f} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in m.items())
    return f"""---
library_name: transformers
pipeline_tag: text-classification
tags: [darling, semantic-equivalence, pair-classification]
---
# DARLING equivalence classifier

Decides whether two responses to the same prompt are equivalent (label 1, `equivalent`) or different
(label 0). Trained with darling v{meta["darling_version"]} from `{meta["backbone"]}`.

## Input format
Token ids `{meta["input_format"]}` with CLS={meta["cls_token_id"]}, SEP={meta["sep_token_id"]},
max {meta["max_tokens_per_response"]} tokens per response, no token type ids. Send token ids, not text,
so the serving tokenizer cannot change the input:

```python
from darling.classifier import EquivalenceClassifier
clf = EquivalenceClassifier.from_pretrained("THIS_DIR")
clf.prob_equivalent([("response a", "response b")])
```

Serving: `vllm serve THIS_DIR --runner pooling --convert classify` and `darling.classifier.ClassifyClient`;
P(equivalent) = `probs[{meta["equivalent_index"]}]`, decision threshold {meta["threshold"]:.4f}
({"mean of both orders" if meta["symmetric"] else "single order"}).

## Validation metrics
| metric | value |
| --- | --- |
{rows}

Training data SHA-256: `{meta["train_data_sha256"]}`
"""


def export_classifier(model, tokenizer, output: str | Path, meta: dict[str, Any]) -> Path:
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    tmp = output / f".export-tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    model.config.id2label = dict(LABEL_NAMES)
    model.config.label2id = {v: k for k, v in LABEL_NAMES.items()}
    model.config.pad_token_id = meta["pad_token_id"]
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / "README.md").write_text(_model_card(meta))
    (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    (output / META_FILE).unlink(missing_ok=True)  # an old export is incomplete from here on
    for item in sorted(tmp.iterdir(), key=lambda p: p.name == META_FILE):
        target = output / item.name
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(item, target)
    tmp.rmdir()
    return output
