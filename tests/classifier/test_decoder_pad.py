"""A decoder whose tokenizer pads with its separator (issue 36, defect 6): SmolLM2 pads with ``<|im_end|>``, the
cross-encoder's SEP, yet has ``<|endoftext|>`` to pad with. Its real tokenizer (packaged, offline) is used here."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import synthetic_pairs, write_jsonl

from darling.classifier.config import build_config
from darling.classifier.encoding import PairEncoder
from darling.classifier.scoring import EquivalenceClassifier
from darling.classifier.train import train_classifier
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer


@pytest.fixture(scope="module")
def smollm2_tokenizer(smollm2_dir):
    return load_tokenizer(str(smollm2_dir))


def test_smollm2_pads_with_endoftext_not_its_separator(smollm2_tokenizer):
    tok = smollm2_tokenizer
    im_start, im_end, endoftext = tok.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>", "<|endoftext|>"])
    assert tok.pad_token_id == im_end  # the premise: SmolLM2's own pad token is the SEP the format uses
    enc = PairEncoder(tok, 16)  # before the fix: "tokenizer ... needs a pad token distinct from SEP"
    s = enc.special
    assert (s.cls_id, s.sep_id, s.pad_id) == (im_start, im_end, endoftext)
    batch = [enc.encode_pair("a short answer", "b"), enc.encode_pair("x", "y")]
    padded = enc.pad(batch)
    assert (padded["input_ids"][padded["attention_mask"] == 0] == endoftext).all()
    assert tok.pad_token_id == im_end  # resolving a pad token leaves the caller's tokenizer as it was


def _tokenizer(vocab: list[str], **special: str):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(WordLevel({t: i for i, t in enumerate(vocab)}, unk_token=vocab[-1]))
    backend.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, **special)


def test_pad_falls_back_to_eos_or_unk_but_never_cls_or_sep():
    vocab = ["<|im_start|>", "<|im_end|>", "<eos>", "hello", "<unk>"]
    with_eos = _tokenizer(vocab, pad_token="<|im_end|>", eos_token="<eos>", unk_token="<unk>")
    assert PairEncoder(with_eos, 4).special.pad_id == 2  # eos before unk
    only_unk = _tokenizer(vocab, pad_token="<|im_end|>", eos_token="<|im_end|>", unk_token="<unk>")
    assert PairEncoder(only_unk, 4).special.pad_id == 4
    none = _tokenizer(["<|im_start|>", "<|im_end|>", "hello"], pad_token="<|im_end|>", eos_token="<|im_start|>")
    with pytest.raises(UserInputError, match=r"^tokenizer \w+ needs a pad token distinct from SEP: [^\n]*$"):
        PairEncoder(none, 4)


@pytest.fixture(scope="module")
def smollm2_tiny_export(tmp_path_factory, smollm2_dir, smollm2_tokenizer):
    """A tiny random Llama (SmolLM2's architecture and config, 2 layers of width 64) with SmolLM2's real tokenizer,
    trained 2 steps as a cross-encoder and exported: plumbing, never quality."""
    from transformers import AutoConfig, LlamaForSequenceClassification

    tmp = tmp_path_factory.mktemp("smollm2-tiny")
    config = AutoConfig.from_pretrained(smollm2_dir)  # pad_token_id 2 (<|im_end|>), as the real model records it
    config.update(
        dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)
    )
    config.head_dim = 32
    config.num_labels = 2
    torch.manual_seed(0)
    backbone = tmp / "backbone"
    LlamaForSequenceClassification(config).save_pretrained(backbone)
    smollm2_tokenizer.save_pretrained(backbone)
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(24))
    overrides = dict(
        backbone=str(backbone), max_steps=2, batch_size=4, max_tokens_per_response=16, freeze_layers=0, threads=1
    )
    return train_classifier(build_config("cpu-cross", overrides=overrides), data, tmp / "clf", progress=False)


def test_smollm2_export_records_and_reloads_its_pad_token(smollm2_tiny_export, smollm2_tokenizer):
    result = smollm2_tiny_export
    out, endoftext = result.output, smollm2_tokenizer.convert_tokens_to_ids("<|endoftext|>")
    meta = json.loads((out / "darling.json").read_text())
    assert meta["pad_token_id"] == endoftext != meta["sep_token_id"]
    assert json.loads((out / "config.json").read_text())["pad_token_id"] == endoftext
    assert load_tokenizer(str(out)).pad_token_id == endoftext  # whoever pads with the exported tokenizer agrees

    scorer = EquivalenceClassifier.from_pretrained(out)
    assert scorer.encoder.special.pad_id == endoftext
    ids = scorer.encoder.encode_pairs([("a story about apples", "a tale of tigers"), ("x", "y"), ("", "long " * 9)])
    padded = scorer.logits_for_ids(ids)  # one padded batch
    # Last-token pooling reads each row's final SEP: the score head on that position, one sequence at a time.
    model = scorer.model
    with torch.inference_mode():
        alone = [model.score(model.model(input_ids=torch.tensor([i])).last_hidden_state)[0, -1] for i in ids]
    assert torch.allclose(torch.from_numpy(padded), torch.stack(alone), atol=1e-5)
    # The model that trained scores the same as its export (the same pad id found the same ends).
    trained = EquivalenceClassifier(result.model, scorer.encoder).logits_for_ids(ids)
    assert torch.allclose(torch.from_numpy(trained), torch.from_numpy(padded), atol=1e-5)
