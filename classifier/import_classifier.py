"""``darling import-classifier``: a pair classifier trained elsewhere becomes a darling export.

Every consumer (``rl-train``, the verl entry point, ``serve-classifier``, ``eval novelty``, ``eval classifier
--compare``) reads one thing: an export folder whose ``darling.json`` says how to encode a pair and decide. An
import writes that folder for a foreign Hugging Face sequence classifier: its weights (as safetensors), its
tokenizer, and the input format, "equivalent" class, threshold and token budget it was trained and used with,
read from the code that trained and served it (``FORMATS`` names the files):

- ``darling-math``: the DARLING authors' math classifier (``dogtooth/qwen3-4b-emb-finetuned-step-70-hf``,
  Qwen3-Embedding-4B + a 2-class head). facebookresearch/darling ``evals/novelty-bench/src/classifier/
  finetune_classifier.py`` builds ``[<|im_start|>] a[:2048] [<|im_end|>] b[:2048] [<|im_end|>]`` without token
  type ids ('Qwen' in the backbone name); ``verl/utils/reward_score/partition_reward_vllm_serve.py`` decides
  ``probs[-1] > 0.5``.
- ``darling-chat``: their ModernBERT-base classifier of NoveltyBench's human pairs
  (``dogtooth/similarity-classifier-f168-hf``). Same builder with ModernBERT's own [CLS]/[SEP] (ModernBERT has
  no token-type embeddings); ``partition_reward_vllm_serve_modernbert.py`` decides ``probs[-1] > 0.32`` with
  ``(2048 - 3) // 2 = 1022`` tokens per response.
- ``noveltybench``: NoveltyBench's DeBERTa-v3-large (``yimingzhang/deberta-v3-large-generation-similarity``).
  novelty-bench ``src/partition.py`` ``classifier_score``: ``[CLS] a[:512] [SEP] b[:512] [SEP]``, token type
  ids 0 up to the first [SEP] and 1 after, ``softmax(logits)[1] > 0.102``; the tokenizer is
  ``microsoft/deberta-v3-large``'s (the model repository has none).

What the import does not copy: the official serving sent whitespace-re-joined *text* (newlines lost) and the
reward decided responses of at most 5 words by word overlap. An export is always fed the training format's token
ids; NoveltyBench's short-response rule belongs to its partition (``eval novelty --partition noveltybench``).
Decisions here are ``P >= threshold`` (the sources: ``>``), which differ only for a probability exactly equal
to the threshold.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from darling import __version__
from darling.classifier.backbones import check_loading_info
from darling.classifier.config import CROSS_ENCODER
from darling.classifier.encoding import PairEncoder
from darling.classifier.export import DTYPES, EXPORT_FORMAT_VERSION, write_export_folder
from darling.core.config import CommandConfig, option
from darling.core.errors import UserInputError
from darling.core.local_models import check_model_source, load_tokenizer


@dataclass(frozen=True)
class ForeignFormat:
    """How a foreign classifier was trained and used: the fields ``darling.json`` records."""

    model: str  # the released model this format describes
    tokenizer: str  # where its tokenizer comes from when the model folder has none
    max_tokens_per_response: int
    threshold: float
    token_type_ids: str  # "none" | "segments" (0 up to the first [SEP], 1 after)
    source: str  # the code the format was read from
    equivalent_index: int = 1


FORMATS: dict[str, ForeignFormat] = {
    "darling-math": ForeignFormat(
        model="dogtooth/qwen3-4b-emb-finetuned-step-70-hf",
        tokenizer="Qwen/Qwen3-Embedding-4B",
        max_tokens_per_response=2048,
        threshold=0.5,
        token_type_ids="none",
        source="facebookresearch/darling: evals/novelty-bench/src/classifier/finetune_classifier.py (input, "
        "MAX_LEN 2048 per response), verl/utils/reward_score/partition_reward_vllm_serve.py (probs[-1] > 0.5)",
    ),
    "darling-chat": ForeignFormat(
        model="dogtooth/similarity-classifier-f168-hf",
        tokenizer="answerdotai/ModernBERT-base",
        max_tokens_per_response=1022,
        threshold=0.32,
        token_type_ids="none",
        source="facebookresearch/darling: verl/utils/reward_score/partition_reward_vllm_serve_modernbert.py "
        "(CLS a SEP b SEP, (2048 - 3) // 2 tokens each, probs[-1] > 0.32)",
    ),
    "noveltybench": ForeignFormat(
        model="yimingzhang/deberta-v3-large-generation-similarity",
        tokenizer="microsoft/deberta-v3-large",
        max_tokens_per_response=512,
        threshold=0.102,
        token_type_ids="segments",
        source="novelty-bench/novelty-bench: src/partition.py classifier_score (CLS a SEP b SEP, 512 tokens "
        "each, token types 0/1 split at the first SEP, softmax[1] > 0.102)",
    ),
}
IMPORT_NOTE = (
    "imported, not trained by darling: no validation metrics; measure it with "
    "`darling eval classifier --model THIS_DIR --data PAIRS`"
)


@dataclass(kw_only=True, frozen=True)
class ImportConfig(CommandConfig):
    """Settings of ``darling import-classifier``: the format's values unless a flag overrides one."""

    format: str = option(help="The format the model was trained with.", choices=tuple(FORMATS))
    tokenizer: str | None = option(
        None, help="Tokenizer folder or hub name; default: the model's own, else the format's base tokenizer."
    )
    threshold: float | None = option(None, help="Decision threshold; default: the format's.")
    max_tokens_per_response: int | None = option(None, help="Token budget per response; default: the format's.")
    equivalent_index: int | None = option(None, help="Class index meaning 'equivalent'; default: the format's (1).")
    dtype: str | None = option(
        None, choices=DTYPES, help="Precision it scores in; default: the model's saved dtype (float32 if none)."
    )
    trust_remote_code: bool = option(False, help="Run code shipped with the model (off: only transformers' own).")

    PRESET_PACKAGE: ClassVar[str | None] = None

    def check(self) -> None:
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise UserInputError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.max_tokens_per_response is not None and self.max_tokens_per_response < 1:
            raise UserInputError(f"max_tokens_per_response must be >= 1, got {self.max_tokens_per_response}")

    def resolved(self) -> dict[str, Any]:
        """The format's values with this config's overrides on top."""
        fmt = FORMATS[self.format]
        return {
            "threshold": fmt.threshold if self.threshold is None else self.threshold,
            "max_tokens_per_response": fmt.max_tokens_per_response
            if self.max_tokens_per_response is None
            else self.max_tokens_per_response,
            "equivalent_index": fmt.equivalent_index if self.equivalent_index is None else self.equivalent_index,
            "token_type_ids": fmt.token_type_ids,
        }


def _has_tokenizer(source: str) -> bool:
    path = Path(source).expanduser()
    names = ("tokenizer.json", "tokenizer_config.json", "spm.model", "vocab.txt")
    if path.is_dir():
        return any((path / n).exists() for n in names)
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(source, n), str) for n in names)


def _read_model_config(source: str, trust_remote_code: bool):
    """The model's config, refused unless it is a sequence classifier (checked before any weight loads)."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:
        raise UserInputError(f"{source}: cannot read the model config ({exc})") from None
    if not any(a.endswith("ForSequenceClassification") for a in config.architectures or []):
        raise UserInputError(
            f"{source}: not a sequence classifier (architectures {config.architectures}); import needs the "
            "model with its classification head"
        )
    return config


def _load_weights(source: str, trust_remote_code: bool):
    """The sequence classifier, every weight matched (a mismatch is an error, never a silently new layer)."""
    from transformers import AutoModelForSequenceClassification

    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(
            source, dtype="auto", output_loading_info=True, trust_remote_code=trust_remote_code
        )
    except OSError as exc:
        raise UserInputError(f"{source}: cannot load the weights ({exc})") from None
    check_loading_info(source, info)
    return model


def _saved_dtype(model_config) -> str:
    saved = getattr(model_config, "dtype", None) or getattr(model_config, "torch_dtype", None)
    name = str(saved).removeprefix("torch.")
    return name if name in DTYPES else "float32"


def _meta(config: ImportConfig, source: str, model_config, tokenizer, tokenizer_source: str) -> dict[str, Any]:
    """``darling.json`` for the import; every check that can fail runs here, before any weight loads."""

    values = config.resolved()
    labels = int(model_config.num_labels)
    if not 0 <= values["equivalent_index"] < labels:
        raise UserInputError(f"equivalent_index {values['equivalent_index']} is not a class of {source} ({labels})")
    encoder = PairEncoder(tokenizer, values["max_tokens_per_response"])  # fails unless CLS/SEP/PAD resolve
    s, fmt = encoder.special, FORMATS[config.format]
    vocab = int(getattr(model_config, "vocab_size", 0) or 0)
    if vocab and max(s.cls_id, s.sep_id, s.pad_id) >= vocab:
        raise UserInputError(
            f"tokenizer {tokenizer_source}: its [CLS]/[SEP]/pad ids are outside {source}'s vocabulary ({vocab}): "
            "not the tokenizer it was trained with (--tokenizer)"
        )
    types = " (token type ids 0 through the first [SEP], 1 after)" if values["token_type_ids"] == "segments" else ""
    return {
        "format_version": EXPORT_FORMAT_VERSION,
        "darling_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kind": CROSS_ENCODER,
        "backbone": source,
        "dtype": config.dtype or _saved_dtype(model_config),
        **values,
        "max_length": encoder.max_length,
        "cls_token_id": s.cls_id,
        "sep_token_id": s.sep_id,
        "pad_token_id": s.pad_id,
        "input_format": f"[CLS] a[:max_tokens_per_response] [SEP] b[:max_tokens_per_response] [SEP]{types}",
        "labels": {str(k): v for k, v in model_config.id2label.items()},
        "symmetric": False,
        "validation_metrics": {},
        "validation_note": IMPORT_NOTE,
        "train_data_sha256": "unknown (imported)",
        "imported": {"source": source, "format": config.format, "format_source": fmt.source},
        "tokenizer_source": tokenizer_source,
    }


def _weights_sha256(folder: Path) -> str:
    """SHA-256 over the saved safetensors files in name order (a large model saves in shards)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _model_card(meta: dict[str, Any]) -> str:
    imported = meta["imported"]
    return f"""---
library_name: transformers
pipeline_tag: text-classification
tags: [darling, semantic-equivalence, imported]
---
# {imported["source"]}, imported as a darling equivalence classifier

Imported with darling v{meta["darling_version"]} in the `{imported["format"]}` format, read from
{imported["format_source"]}.

Input: token ids `{meta["input_format"]}`, at most {meta["max_tokens_per_response"]} tokens per response; P(equivalent)
= `softmax(logits)[{meta["equivalent_index"]}]`, equivalent when P >= {meta["threshold"]}; scored in {meta["dtype"]}.
{meta["validation_note"]}.
"""


def import_classifier(config: ImportConfig, source: str, output: str | Path) -> dict[str, Any]:
    """Write ``source`` (a model folder or a hub name in the local cache) as a darling export at ``output``;
    returns its ``darling.json``. Nothing is written until the model and tokenizer loaded and their format checks
    passed; the folder is filled in a temporary folder and moved in, ``darling.json`` last."""

    source = check_model_source(source, "classifier")
    model_config = _read_model_config(source, config.trust_remote_code)
    tokenizer_source = config.tokenizer or (source if _has_tokenizer(source) else FORMATS[config.format].tokenizer)
    tokenizer = load_tokenizer(tokenizer_source, trust_remote_code=config.trust_remote_code)
    meta = _meta(config, source, model_config, tokenizer, tokenizer_source)
    model = _load_weights(source, config.trust_remote_code)

    def write(folder: Path) -> None:
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
        meta["weights_sha256"] = _weights_sha256(folder)
        (folder / "README.md").write_text(_model_card(meta))

    write_export_folder(output, write, meta)
    return meta
