"""Export a trained classifier, either kind, as a Hugging Face directory that vLLM serves as it is.

Layout: ``config.json``, ``model.safetensors``, tokenizer files, ``darling.json`` (everything needed to
reproduce the encoding and the decision) and a ``README.md`` model card. A cross-encoder is a 2-label
sequence classifier (``vllm serve DIR --runner pooling --convert classify``); a bi-encoder is the bare
encoder plus sentence-transformers' ``modules.json`` / ``1_Pooling`` / ``Normalize`` entries, which is
where vLLM reads its pooling and normalisation (``--runner pooling --convert embed``). Files are written to
a temporary folder and moved in; ``darling.json`` is moved last, so its presence marks a complete export.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from darling import __version__
from darling.classifier.backbones import EQUIVALENT_INDEX, LABEL_NAMES
from darling.classifier.config import BI_ENCODER, CROSS_ENCODER
from darling.core.encoders import ST_POOLING_KEYS, is_encoder_only
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer
from darling.core.readers import read_text

if TYPE_CHECKING:  # torch-backed: reading an export's darling.json (every command's input check) must not load torch
    from darling.classifier.bi_encoder import BiEncoder
    from darling.classifier.encoding import PairEncoder, TextEncoder

EXPORT_FORMAT_VERSION = 2  # 2: "kind" (cross-encoder | bi-encoder); a file without it is a cross-encoder
META_FILE = "darling.json"
VALIDATION_NOTE = (
    "validation split: the decision threshold was chosen on these same pairs, so threshold-dependent "
    "figures (accuracy, F1, ...) are optimistic; ROC-AUC does not depend on the threshold"
)
TEST_NOTE = "held-out pairs that chose nothing (neither the threshold nor any training decision)"
CHECKS_NOTE = (
    "Pair sets that ship with darling and chose nothing (`darling.classifier.checks`), scored at the threshold "
    "above; word overlap at thresholds fitted on the training pairs (balanced accuracy); bootstrap 95% intervals "
    "over pairs. `darling eval classifier --data NAME` scores any export on them"
)


# What loading an export reads from darling.json, by kind: checked here, so a damaged file is one line
# before any model loads rather than a KeyError after.
_COMMON_META = ("threshold", "max_tokens_per_response", "max_length")
_REQUIRED_META = {CROSS_ENCODER: _COMMON_META, BI_ENCODER: (*_COMMON_META, "scale", "bias", "pooling")}
DTYPES = ("float32", "bfloat16", "float16")
_META_TYPES: dict[str, tuple[type, ...]] = {
    "threshold": (int, float),
    "max_tokens_per_response": (int,),
    "max_length": (int,),
    "scale": (int, float),
    "bias": (int, float),
    "pooling": (str,),
}


def read_export_meta(path: str | Path) -> dict[str, Any]:
    meta_path = Path(path) / META_FILE
    if not meta_path.exists():
        raise UserInputError(f"{path}: not a darling classifier export (no {META_FILE}); train one first")
    text = read_text(meta_path, "export metadata file")
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{meta_path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(meta, dict):
        raise UserInputError(f"{meta_path}: expected a JSON object, got {type(meta).__name__}")
    version = meta.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise UserInputError(f"{meta_path}: field 'format_version' must be an integer, got {version!r}")
    if version > EXPORT_FORMAT_VERSION:
        raise UserInputError(f"{meta_path}: format_version {version} is newer than this darling")
    dtype = meta.setdefault("dtype", "float32")  # exports before the field computed in fp32
    if dtype not in DTYPES:
        raise UserInputError(f"{meta_path}: field 'dtype' must be one of {', '.join(DTYPES)}, got {dtype!r}")
    kind = meta.setdefault("kind", CROSS_ENCODER)
    if kind not in _REQUIRED_META:
        raise UserInputError(f"{meta_path}: field 'kind' must be {CROSS_ENCODER} or {BI_ENCODER}, got {kind!r}")
    for name in _REQUIRED_META[kind]:
        if name not in meta:
            raise UserInputError(f"{meta_path}: missing field '{name}'")
        value, types = meta[name], _META_TYPES[name]
        if isinstance(value, bool) or not isinstance(value, types):
            expected = " or ".join(t.__name__ for t in types)
            raise UserInputError(f"{meta_path}: field '{name}' must be {expected}, got {value!r}")
    return meta


class ClassifierExport:
    """One export, read once: ``darling.json`` checked when this is made, its model config and tokenizer loaded on
    first use and kept. The consumers along one path (a command's input check, the scorer of either kind, in
    process or served, the served-vs-in-process check) take this object, so none reads the folder again."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.meta = read_export_meta(self.path)

    @classmethod
    def of(cls, export: ClassifierExport | str | Path) -> ClassifierExport:
        return export if isinstance(export, ClassifierExport) else cls(export)

    @property
    def kind(self) -> str:
        return self.meta["kind"]

    @cached_property
    def model_config(self) -> dict[str, Any]:
        return read_model_config(self.path)

    @cached_property
    def tokenizer(self) -> Any:
        return load_tokenizer(str(self.path))  # loads transformers: on first use only


def read_model_config(path: str | Path) -> dict[str, Any]:
    """An export's ``config.json`` as a dict (the served path needs a few facts without loading the model)."""
    config_path = Path(path) / "config.json"
    try:
        return json.loads(read_text(config_path, "model config"))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{config_path}:{exc.lineno}: not valid JSON ({exc.msg})") from None


def uses_segment_ids(meta: dict[str, Any], model_config: Any) -> bool:
    """True when the export was trained with segment ids and its model has token-type embeddings to read them
    (DeBERTa-v3 has none, ``type_vocab_size`` 0: its segment ids change nothing and are not sent)."""
    if meta.get("token_type_ids") != "segments":
        return False
    get = model_config.get if isinstance(model_config, dict) else lambda k, d=None: getattr(model_config, k, d)
    return int(get("type_vocab_size", 0) or 0) > 0


def cross_encoder_fields(encoder: PairEncoder, symmetric: bool) -> dict[str, Any]:
    s = encoder.special
    return {
        "kind": CROSS_ENCODER,
        "max_tokens_per_response": encoder.max_tokens_per_response,
        "max_length": encoder.max_length,
        "cls_token_id": s.cls_id,
        "sep_token_id": s.sep_id,
        "pad_token_id": s.pad_id,
        "input_format": "[CLS] a[:max_tokens_per_response] [SEP] b[:max_tokens_per_response] [SEP]",
        "labels": {str(k): v for k, v in LABEL_NAMES.items()},
        "equivalent_index": EQUIVALENT_INDEX,
        "symmetric": symmetric,
    }


def bi_encoder_fields(encoder: TextEncoder, model: BiEncoder) -> dict[str, Any]:
    wrap = ("[CLS] ", " [SEP]") if encoder.prefix else ("", " <|endoftext|>")
    return {
        "kind": BI_ENCODER,
        "max_tokens_per_response": encoder.max_tokens_per_response,
        "max_length": encoder.max_length,
        "prefix_token_ids": encoder.prefix,
        "suffix_token_ids": encoder.suffix,
        "pad_token_id": encoder.pad_id,
        "input_format": f"{wrap[0]}text[:max_tokens_per_response]{wrap[1]} (each response alone)",
        "pooling": model.pooling,
        "normalize": True,
        "scale": model.scale.item(),
        "bias": model.bias.item(),
        "probability": "sigmoid(scale * cos(e_a, e_b) + bias)",
        "symmetric": False,
    }


def build_meta(
    kind_fields: dict[str, Any],
    backbone: str,
    threshold: float,
    metrics: dict[str, Any],
    data_sha256: str,
    train_config: dict[str, Any],
    test_metrics: dict[str, Any] | None = None,
    checks: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta = {
        "format_version": EXPORT_FORMAT_VERSION,
        "darling_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "backbone": backbone,
        **kind_fields,
        "threshold": threshold,
        "validation_metrics": metrics,
        "validation_note": VALIDATION_NOTE,
        "train_data_sha256": data_sha256,
        "train_config": train_config,
    }
    if test_metrics is not None:
        meta["test_metrics"], meta["test_note"] = test_metrics, TEST_NOTE
    if checks:
        meta["checks"] = checks
    return meta


def _metric_rows(m: dict[str, Any]) -> str:
    """One row per metric, with its bootstrap 95% interval where the report has one."""
    intervals = m.get("intervals_95", {})
    rows = []
    for key, value in m.items():
        if isinstance(value, dict):
            continue
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        if key in intervals:
            shown += f" [{intervals[key][0]:.3f}, {intervals[key][1]:.3f}]"
        rows.append(f"| {key} | {shown} |")
    return "\n".join(rows)


def _floor_text(meta: dict[str, Any]) -> str:
    """The floor's verdict and the content-word rule on the same validation pairs, when training recorded them."""
    if "floor" not in meta:
        return ""
    from darling.classifier.floor import floor_line  # loads numpy

    return f"\n{floor_line(meta['floor'])} (darling.classifier.floor).\n"


def _model_card(meta: dict[str, Any]) -> str:
    bi = meta["kind"] == BI_ENCODER
    serve = "--runner pooling --convert embed" if bi else "--runner pooling --convert classify"
    client = "EmbedClient" if bi else "ClassifyClient"
    decision = (
        f"P(equivalent) = sigmoid({meta['scale']:.4f} * cos + {meta['bias']:.4f}) of the {meta['pooling']}-pooled, "
        f"normalised embeddings; decision threshold {meta['threshold']:.4f}"
        if bi
        else f"P(equivalent) = `probs[{meta['equivalent_index']}]`, decision threshold {meta['threshold']:.4f} "
        f"({'mean of both orders' if meta['symmetric'] else 'single order'})"
    )
    test = ""
    if "test_metrics" in meta:
        rows = _metric_rows(meta["test_metrics"])
        header = "| metric | value [95% interval] |\n| --- | --- |"
        test = f"\n## Held-out metrics\n{meta['test_note']}.\n\n{header}\n{rows}\n"
    if meta.get("checks"):
        from darling.classifier.checks import checks_markdown  # loads scikit-learn

        test += f"\n## Packaged checks\n{CHECKS_NOTE}.\n\n{checks_markdown(meta['checks'])}\n"
    return f"""---
library_name: transformers
pipeline_tag: {"sentence-similarity" if bi else "text-classification"}
tags: [darling, semantic-equivalence, {meta["kind"]}]
---
# DARLING equivalence classifier ({meta["kind"]})

Decides whether two responses to the same prompt are equivalent (label 1, `equivalent`) or different
(label 0). Trained with darling v{meta["darling_version"]} from `{meta["backbone"]}`.

## Input format
Token ids `{meta["input_format"]}`, max {meta["max_tokens_per_response"]} tokens per response, no token type
ids. Scored in {meta["dtype"]}, the precision it trained in (its threshold was chosen in it; `darling
serve-classifier` serves it in it). Send token ids, not text, so the serving tokenizer cannot change the input:

```python
from darling.classifier import load_scorer
clf = load_scorer("THIS_DIR")
clf.prob_equivalent([("response a", "response b")])
```

Serving: `vllm serve THIS_DIR {serve}` and `darling.classifier.{client}` (or `darling serve-classifier`);
{decision}.

## Validation metrics
{meta["validation_note"]}.

| metric | value [bootstrap 95% interval] |
| --- | --- |
{_metric_rows(meta["validation_metrics"])}
{_floor_text(meta)}{test}
Training data SHA-256: `{meta["train_data_sha256"]}`
"""


def _write_sentence_transformers_files(folder: Path, model: BiEncoder, max_seq_length: int) -> None:
    """The pooling and normalisation as sentence-transformers records them: vLLM reads these files."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]

    pooling: dict[str, bool | int] = {key: model.pooling == name for name, key in ST_POOLING_KEYS.items()}
    hidden_size = int(model.backbone.config.hidden_size)  # type: ignore[union-attr, arg-type]
    pooling.update(
        word_embedding_dimension=hidden_size,
        pooling_mode_max_tokens=False,
        pooling_mode_mean_sqrt_len_tokens=False,
        pooling_mode_weightedmean_tokens=False,
    )
    (folder / "1_Pooling").mkdir()
    (folder / "2_Normalize").mkdir()
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2) + "\n")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}) + "\n")


def _save_model(model, folder: Path, meta: dict[str, Any]) -> None:
    if meta["kind"] == CROSS_ENCODER:
        model.config.id2label = dict(LABEL_NAMES)
        model.config.label2id = {v: k for k, v in LABEL_NAMES.items()}
        model.config.pad_token_id = meta["pad_token_id"]
        model.save_pretrained(folder, safe_serialization=True)
        return
    model.backbone.save_pretrained(folder, safe_serialization=True)

    if not is_encoder_only(model.backbone.config):
        # A decoder's bare model saves as e.g. Qwen3Model, which vLLM does not register; under its causal-LM
        # name vLLM's pooling adapter loads the same weights (with or without the "model." prefix).
        config_path = folder / "config.json"
        config = json.loads(config_path.read_text())
        config["architectures"] = [a.removesuffix("Model") + "ForCausalLM" for a in config["architectures"]]
        config_path.write_text(json.dumps(config, indent=2) + "\n")
    _write_sentence_transformers_files(folder, model, meta["max_length"])


def export_classifier(model, tokenizer, output: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``model`` (a sequence classifier, or a ``BiEncoder`` when ``meta["kind"]`` says so) to ``output``."""

    tokenizer = with_pad_token(tokenizer, meta["pad_token_id"])

    def write(folder: Path) -> None:
        _save_model(model, folder, meta)
        tokenizer.save_pretrained(folder)
        (folder / "README.md").write_text(_model_card(meta))

    return write_export_folder(output, write, meta)


def with_pad_token(tokenizer, pad_id: int):
    """``tokenizer``, or a copy of it whose pad token is ``pad_id``: the export's tokenizer pads as its model's
    ``pad_token_id`` expects. The encoding may pad with another token than the tokenizer's own (SmolLM2 pads with
    its ``<|im_end|>``, the format's SEP: ``<|endoftext|>`` pads instead); the caller's tokenizer is left as it is."""
    if tokenizer.pad_token_id == pad_id:
        return tokenizer
    import copy

    copied = copy.deepcopy(tokenizer)
    copied.pad_token = copied.convert_ids_to_tokens(pad_id)
    return copied


def write_export_folder(output: str | Path, write: Callable[[Path], None], meta: dict[str, Any]) -> Path:
    """``write(folder)`` fills a temporary folder, which is moved into ``output`` with ``darling.json`` last:
    its presence marks a complete export, and an old export in ``output`` is incomplete from the first move."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    tmp = output / f".export-tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    write(tmp)
    (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    (output / META_FILE).unlink(missing_ok=True)
    for item in sorted(tmp.iterdir(), key=lambda p: p.name == META_FILE):
        target = output / item.name
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(item, target)
    tmp.rmdir()
    return output
