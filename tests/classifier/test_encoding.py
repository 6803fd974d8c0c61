import pytest

from darling.classifier.encoding import PairEncoder
from darling.core.errors import UserInputError
from darling.core.local_models import load_tokenizer


def test_qwen_format_uses_chat_markers_as_cls_and_sep(qwen_tokenizer):
    enc = PairEncoder(qwen_tokenizer, max_tokens_per_response=2048)
    a, b = "Let x = 2.\nThen x^2 = 4.", "We square 2 and get \\boxed{4}."
    ids = enc.encode_pair(a, b)
    ta = qwen_tokenizer(a, add_special_tokens=False).input_ids
    tb = qwen_tokenizer(b, add_special_tokens=False).input_ids
    assert ids == [151644, *ta, 151645, *tb, 151645]
    assert 151643 not in ids  # no <|endoftext|> appended, unlike text sent to a server
    assert qwen_tokenizer.decode(ta) == a  # newlines survive (the reference re-joined on whitespace)


def test_each_response_is_truncated_to_its_own_budget(qwen_tokenizer):
    enc = PairEncoder(qwen_tokenizer, max_tokens_per_response=5)
    long = "one two three four five six seven eight nine ten"
    ids = enc.encode_pair(long, "short")
    assert len(ids) == 1 + 5 + 1 + len(qwen_tokenizer("short", add_special_tokens=False).input_ids) + 1
    assert ids[6] == 151645
    assert len(enc.encode_pair(long, long)) == enc.max_length == 13


def test_empty_responses(qwen_tokenizer):
    enc = PairEncoder(qwen_tokenizer, 16)
    assert enc.encode_pair("", "") == [151644, 151645, 151645]


def test_text_cannot_inject_control_tokens(qwen_tokenizer):
    enc = PairEncoder(qwen_tokenizer, 64)
    ids = enc.encode_pair("a <|im_end|> b <|im_start|>", "c")
    assert ids.count(151645) == 2 and ids.count(151644) == 1


def test_minilm_uses_its_own_cls_and_sep(minilm_path):
    tok = load_tokenizer(minilm_path)
    enc = PairEncoder(tok, 8)
    ids = enc.encode_pair("Hello there [SEP] friend", "")
    assert ids[0] == tok.cls_token_id == 101 and ids[-1] == tok.sep_token_id == 102
    assert ids.count(102) == 2  # the literal "[SEP]" in the text stays text
    assert enc.special.pad_id == 0


def test_batch_encoding_equals_one_at_a_time_and_pad(qwen_tokenizer):
    enc = PairEncoder(qwen_tokenizer, 32)
    pairs = [("a b c", "d"), ("", "x y"), ("long " * 50, "")]
    batch = enc.encode_pairs(pairs)
    assert batch == [enc.encode_pair(a, b) for a, b in pairs]
    padded = enc.pad(batch)
    assert padded["input_ids"].shape == (3, max(map(len, batch)))
    assert padded["attention_mask"].sum().item() == sum(map(len, batch))
    assert (padded["input_ids"][padded["attention_mask"] == 0] == 151643).all()
    assert enc.pad(batch, pad_to=enc.max_length)["input_ids"].shape[1] == 67


def test_tokenizer_without_separators_is_rejected(minilm_path):
    tok = load_tokenizer(minilm_path)
    tok.cls_token = None
    with pytest.raises(UserInputError, match="no CLS/SEP"):
        PairEncoder(tok, 8)
