"""The tiny random policy over byte ids (``tiny:bytes-lm``): the wiring tests' policy. Any text round-trips through
its tokenizer, its chat template is Qwen's ChatML, its head is as wide as its vocabulary, and it generates until one
of its end ids, as the commands that load it by name expect."""

import pytest

from darling.core.local_models import TINY_MODELS, bytes_tokenizer, resolve_model, tiny_model_dir


@pytest.mark.parametrize("text", ["Name a fruit: apple.", "é 日本 $x^2$\n\t", "<|im_end|> is text here", ""])
def test_every_text_round_trips_one_id_per_byte(text):
    tokenizer = bytes_tokenizer()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    special = text.count("<|im_end|>")  # the special token is one id, the rest one id per byte
    assert len(ids) == len(text.encode()) - special * (len("<|im_end|>") - 1)
    assert tokenizer.decode(ids) == text and max(ids, default=0) < len(tokenizer) == 259


def test_the_model_loads_by_name_with_chatml_and_a_head_its_vocabularys_width():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert "tiny:bytes-lm" in TINY_MODELS and resolve_model("tiny:bytes-lm") == str(tiny_model_dir("tiny:bytes-lm"))
    folder = tiny_model_dir("tiny:bytes-lm")
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder)
    chat = [{"role": "user", "content": "hi"}]
    prompt = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert model.config.vocab_size == len(tokenizer) == model.get_output_embeddings().weight.shape[0] == 259
    assert model.generation_config.eos_token_id == tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    torch.manual_seed(0)
    out = model.generate(ids, max_new_tokens=8, do_sample=True)
    assert ids.shape[1] < out.shape[1] <= ids.shape[1] + 8
