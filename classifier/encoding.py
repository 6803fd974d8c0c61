"""The one pair encoding used by training, in-process scoring and the token ids sent to vLLM.

``[CLS] tokens(a)[:budget] [SEP] tokens(b)[:budget] [SEP]`` — each response tokenised without special
tokens and truncated to its own budget, so a long first response can never crowd out the second.
Tokenizers without CLS/SEP (Qwen) use ``<|im_start|>`` as CLS and ``<|im_end|>`` as SEP, as the paper's
classifier does. We never let the serving side tokenise text: vLLM receives these exact ids, which removes
the reference code's train/serve skew (whitespace re-joining, an appended ``<|endoftext|>``).

No ``token_type_ids`` are produced for the toolkit's own classifiers: vLLM's ``/classify`` with token-id input
sets them all to zero, so training does the same and the [SEP] token alone marks the boundary. An imported
classifier trained with segment ids (NoveltyBench's: 0 up to the first [SEP], 1 after) gets them in process
(``segment_ids=True``) and is refused by the served path when its model has token-type embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from darling.core.errors import UserInputError

if TYPE_CHECKING:
    import torch  # loaded where a batch is padded: import-classifier's flags and bad input need none

QWEN_CLS_TOKEN = "<|im_start|>"
QWEN_SEP_TOKEN = "<|im_end|>"
QWEN_PAD_TOKEN = "<|endoftext|>"


def _token_id(tokenizer, token: str) -> int | None:
    if token not in tokenizer.get_vocab():
        return None
    return tokenizer.convert_tokens_to_ids(token)


@dataclass(frozen=True)
class SpecialIds:
    cls_id: int
    sep_id: int
    pad_id: int


def resolve_special_ids(tokenizer) -> SpecialIds:
    """CLS/SEP/PAD for a tokenizer: its own when it has them (BERT), the Qwen chat markers otherwise."""
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls_id is None or sep_id is None:
        cls_id, sep_id = _token_id(tokenizer, QWEN_CLS_TOKEN), _token_id(tokenizer, QWEN_SEP_TOKEN)
    if cls_id is None or sep_id is None:
        raise UserInputError(
            f"tokenizer {type(tokenizer).__name__} has no CLS/SEP tokens and no {QWEN_CLS_TOKEN}/{QWEN_SEP_TOKEN}"
        )
    pad_id = distinct_pad_id(tokenizer, cls_id, sep_id)
    if pad_id is None:
        where = f" ({tokenizer.name_or_path})" if getattr(tokenizer, "name_or_path", "") else ""
        raise UserInputError(
            f"tokenizer {type(tokenizer).__name__}{where} needs a pad token distinct from SEP: "
            f"its pad, {QWEN_PAD_TOKEN}, eos and unk tokens are missing or CLS/SEP"
        )
    return SpecialIds(cls_id=cls_id, sep_id=sep_id, pad_id=pad_id)


def distinct_pad_id(tokenizer, cls_id: int, sep_id: int) -> int | None:
    """The id the pair encoding pads with: the tokenizer's pad token unless it is SEP, else the first of
    ``<|endoftext|>``, eos and unk that is neither CLS nor SEP; None when there is none.

    A decoder's sequence classifier pools the rightmost token that is not the pad id, which must be the final SEP:
    pad must not be SEP. Some decoders pad with the very token the format uses as SEP (SmolLM2: ``<|im_end|>``) yet
    have another to pad with (its ``<|endoftext|>``). The choice depends on the tokenizer alone, so the export's
    tokenizer, reloaded, resolves to the same id (the export also records it: ``pad_token_id``)."""
    own = tokenizer.pad_token_id
    if own is not None and own != sep_id:
        return own
    fallbacks = (_token_id(tokenizer, QWEN_PAD_TOKEN), tokenizer.eos_token_id, tokenizer.unk_token_id)
    return next((i for i in fallbacks if isinstance(i, int) and i not in (cls_id, sep_id)), None)


def tokenize_responses(tokenizer, texts: Sequence[str], budget: int) -> list[list[int]]:
    """Token ids of each text, no special tokens, truncated to ``budget`` tokens.

    ``split_special_tokens`` makes a response that literally contains ``<|im_end|>`` or ``[SEP]``
    tokenise as plain text, so no response can inject a control token into the model input.
    """
    if not texts:
        return []
    out = tokenizer(
        list(texts), add_special_tokens=False, truncation=True, max_length=budget, split_special_tokens=True
    )
    return out["input_ids"]


class PairEncoder:
    """Encodes response pairs into model input ids; ``pad`` turns a batch into tensors."""

    def __init__(self, tokenizer, max_tokens_per_response: int, segment_ids: bool = False):
        if max_tokens_per_response < 1:
            raise UserInputError(f"max_tokens_per_response must be >= 1, got {max_tokens_per_response}")
        self.tokenizer = tokenizer
        self.max_tokens_per_response = max_tokens_per_response
        self.special = resolve_special_ids(tokenizer)
        self.segment_ids = segment_ids

    @property
    def max_length(self) -> int:
        return 2 * self.max_tokens_per_response + 3

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, no special tokens, truncated to the per-response budget."""
        return tokenize_responses(self.tokenizer, texts, self.max_tokens_per_response)

    def join(self, ids_a: Sequence[int], ids_b: Sequence[int]) -> list[int]:
        s = self.special
        return [s.cls_id, *ids_a, s.sep_id, *ids_b, s.sep_id]

    def encode_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Input ids for each (a, b) pair; texts are tokenised once per batch."""
        firsts = self.tokenize([a for a, _ in pairs])
        seconds = self.tokenize([b for _, b in pairs])
        return [self.join(a, b) for a, b in zip(firsts, seconds, strict=True)]

    def encode_pair(self, a: str, b: str) -> list[int]:
        return self.encode_pairs([(a, b)])[0]

    def pad(self, batch: Sequence[Sequence[int]], pad_to: int | None = None) -> dict[str, torch.Tensor]:
        """Right-pad to the longest sequence in the batch (dynamic padding) or to ``pad_to``; with
        ``segment_ids``, ``token_type_ids`` 0 up to and including the first [SEP], 1 after it."""
        padded = pad_ids(batch, self.special.pad_id, pad_to)
        if self.segment_ids:
            import torch

            types = torch.zeros_like(padded["input_ids"])
            for row, ids in enumerate(batch):
                # Responses are tokenised with split_special_tokens, so the first SEP id is the separator.
                first_sep = list(ids).index(self.special.sep_id)
                types[row, first_sep + 1 : len(ids)] = 1
            padded["token_type_ids"] = types
        return padded


class TextEncoder:
    """Single-response ids for the bi-encoder: the form each backbone embeds one text in.

    Encoders with CLS/SEP (BERT, MiniLM): ``[CLS] tokens[:budget] [SEP]``, as sentence-transformers
    tokenises. Decoder-only embedders (Qwen3-Embedding): ``tokens[:budget] <|endoftext|>``, the end-of-text
    token whose state last-token pooling reads (Qwen3-Embedding's tokenizer appends it the same way).
    vLLM receives these ids and embeds them without tokenising again.
    """

    def __init__(self, tokenizer, max_tokens_per_response: int):
        if max_tokens_per_response < 1:
            raise UserInputError(f"max_tokens_per_response must be >= 1, got {max_tokens_per_response}")
        self.tokenizer = tokenizer
        self.max_tokens_per_response = max_tokens_per_response
        cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        if cls_id is not None and sep_id is not None:
            self.prefix, self.suffix = [cls_id], [sep_id]
        else:
            eos = _token_id(tokenizer, QWEN_PAD_TOKEN)
            eos = tokenizer.eos_token_id if eos is None else eos
            if eos is None:
                raise UserInputError(
                    f"tokenizer {type(tokenizer).__name__} has neither CLS/SEP nor an end-of-text token"
                )
            self.prefix, self.suffix = [], [eos]
        pad = tokenizer.pad_token_id
        self.pad_id = self.suffix[0] if pad is None else pad

    @property
    def max_length(self) -> int:
        return self.max_tokens_per_response + len(self.prefix) + len(self.suffix)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        ids = tokenize_responses(self.tokenizer, texts, self.max_tokens_per_response)
        return [[*self.prefix, *t, *self.suffix] for t in ids]

    def pad(self, batch: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        return pad_ids(batch, self.pad_id)


def pad_ids(batch: Sequence[Sequence[int]], pad_id: int, pad_to: int | None = None) -> dict[str, torch.Tensor]:
    """Right-pad to the longest sequence in the batch (dynamic padding) or to ``pad_to``."""
    width = max(len(ids) for ids in batch) if pad_to is None else pad_to
    import torch

    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, ids in enumerate(batch):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}
