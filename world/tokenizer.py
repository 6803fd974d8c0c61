"""The world policy's tokenizer: one token per word (``tokenizers``' ``WordLevel`` over whitespace-split words), the
vocabulary every word of a corpus, wrapped as transformers' ``PreTrainedTokenizerFast`` so that TRL, the hf engine
and vLLM load it from the policy's folder as they load any tokenizer. Decoding joins the words with single spaces,
which is how the world writes its answers, so a text round-trips exactly.

Its chat template is the world's prompt format: the user's message, then the answer and the end token. Every
command that prompts a policy through its chat template (rl-train, datagen rollouts, eval novelty) thus asks the
world's policy exactly what pretraining taught it to answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # transformers loads when a tokenizer is made, not when a config reads this module
    from transformers import PreTrainedTokenizerFast

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, EOS, UNK)  # ids 0, 1, 2
# the user's message (a world prompt), then the policy's answer and the end token; a system message is ignored
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}{{ message['content'] }}"
    "{%- elif message['role'] == 'assistant' -%}{{ ' ' + message['content'] }}{{ eos_token }}"
    "{%- endif -%}"
    "{%- endfor -%}"
)


def corpus_words(texts: Iterable[str]) -> list[str]:
    """Every whitespace-separated word of the texts, sorted (the vocabulary's order is the words', not the draws')."""
    return sorted({word for text in texts for word in text.split()})


def word_tokenizer(words: Iterable[str]) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over ``words`` (special tokens first), with the world's chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *dict.fromkeys(words)])}
    core = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        chat_template=CHAT_TEMPLATE,
        padding_side="left",  # generation pads prompts on the left
    )
    return tokenizer
