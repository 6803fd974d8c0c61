"""``darling world pretrain``: a policy born in the world. A tiny Llama (transformers' ``LlamaForCausalLM``, ~170k
parameters at the defaults) over the corpus's word-level tokenizer (``darling.world.tokenizer``), trained from scratch
by transformers' ``Trainer`` to answer the corpus's prompts: the loss is on the answer and its end token, the prompt
is context, exactly as rl-train will prompt it (the tokenizer's chat template).

The result is an ordinary Hugging Face folder (``OUTPUT/final``: safetensors, tokenizer, chat template, and a card,
``README.md``, giving its held-out loss per answer beside the corpus's own entropy, the floor no model can pass), so
``datagen rollouts``, ``rl-train``, ``eval novelty`` and ``eval compare`` take it as they take SmolLM2. A killed run
resumes from its last checkpoint (``save_steps``); a finished one is found and left as it is.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from darling.core.errors import UserInputError
from darling.core.shards import atomic_write_bytes
from darling.world.card import CARD_FILE, write_card
from darling.world.config import PretrainConfig
from darling.world.corpus import read_corpus_record
from darling.world.tokenizer import EOS, corpus_words, word_tokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

RUN_FILE = "run.json"
FINAL = "final"
IGNORE = -100  # transformers' label that no loss reads


def read_parts(corpus: Path) -> dict[str, Any]:
    import polars as pl

    record = read_corpus_record(corpus)
    parts = {}
    for part, name in record["files"].items():
        path = Path(corpus) / name
        if not path.is_file():
            raise UserInputError(f"{corpus}: {name} is missing (make the corpus again with `darling world corpus`)")
        parts[part] = pl.read_parquet(path, columns=["prompt", "answer"])
    return parts


Encoded = list[tuple[list[int], list[int]]]  # per row: the prompt's ids, the answer's and its end token


def encoded(tokenizer: PreTrainedTokenizerFast, prompts: list[str], answers: list[str]) -> Encoded:
    """Each (prompt, answer) as the chat template renders it: the prompt's ids, then the answer's and its end token."""
    eos: Any = tokenizer.convert_tokens_to_ids(EOS)  # one token: one id
    prompt_ids: dict[str, list[int]] = {}
    answer_ids: dict[str, list[int]] = {}
    rows = []
    for prompt, answer in zip(prompts, answers, strict=True):
        if prompt not in prompt_ids:
            message = [{"role": "user", "content": prompt}]
            rendered: Any = tokenizer.apply_chat_template(message, add_generation_prompt=True, return_dict=True)
            prompt_ids[prompt] = [int(i) for i in rendered["input_ids"]]
        if answer not in answer_ids:
            words: Any = tokenizer(answer, add_special_tokens=False)
            answer_ids[answer] = [*words["input_ids"], eos]
        rows.append((prompt_ids[prompt], answer_ids[answer]))
    return rows


class PaddedRows:
    """Encoded rows as three tensors padded once to the longest (a map-style dataset): a batch is then rows stacked,
    with no padding per step. The loss reads the answer and its end token only (the prompt's labels are ignored).
    A corpus repeats its few thousand distinct rows: each is padded once, then gathered."""

    def __init__(self, rows: Encoded, pad_id: int):
        import torch

        distinct: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
        index = [distinct.setdefault((tuple(p), tuple(a)), len(distinct)) for p, a in rows]
        width = max(len(p) + len(a) for p, a in distinct)
        ids = torch.full((len(distinct), width), pad_id, dtype=torch.long)
        labels = torch.full((len(distinct), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(distinct), width), dtype=torch.long)
        for i, (p, a) in enumerate(distinct):
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
            labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
            mask[i, : len(p) + len(a)] = 1
        order = torch.tensor(index)
        self.columns = {"input_ids": ids[order], "labels": labels[order], "attention_mask": mask[order]}

    def __len__(self) -> int:
        return len(self.columns["input_ids"])

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {name: column[i] for name, column in self.columns.items()}


def build_model(config: PretrainConfig, tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(config.seed)
    llama = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.width,
        intermediate_size=config.mlp_width,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.heads,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(llama)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return model


def answer_loss(model: PreTrainedModel, rows: PaddedRows, batch_size: int = 1024) -> dict[str, float]:
    """Mean loss per answer (nats, summed over its tokens and end token) and per token, on ``rows``."""
    import torch

    total, tokens = 0.0, 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = {name: column[start : start + batch_size] for name, column in rows.columns.items()}
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
            target = batch["labels"][:, 1:]
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=IGNORE, reduction="sum"
            )
            total += float(loss)
            tokens += int((target != IGNORE).sum())
    return {"nats_per_answer": total / len(rows), "nats_per_token": total / tokens}


def check_run(config: PretrainConfig) -> None:
    """Record the run's identity on first use; refuse a rerun into the same folder with another."""
    out = Path(config.output)
    path = out / RUN_FILE
    identity = json.loads(json.dumps(config.identity(), default=str))
    if path.exists():
        saved = json.loads(path.read_text())
        if saved != identity:
            changed = next(k for k in dict.fromkeys([*saved, *identity]) if saved.get(k) != identity.get(k))
            raise UserInputError(
                f"{out}: was pretrained with {changed}={saved.get(changed)!r}, this run has "
                f"{changed}={identity.get(changed)!r}; use another --output"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(identity, indent=2) + "\n").encode())


def last_checkpoint(out: Path) -> Path | None:
    """The newest whole checkpoint; one a kill cut short (the Trainer writes its ``trainer_state.json`` last) is
    removed, so the rerun resumes from the one before it."""
    whole = []
    for checkpoint in out.glob("checkpoint-*"):
        if (checkpoint / "trainer_state.json").exists():
            whole.append(checkpoint)
        else:
            shutil.rmtree(checkpoint)
    return max(whole, key=lambda p: int(p.name.rpartition("-")[2]), default=None)


def pretrain(config: PretrainConfig) -> dict[str, Any]:
    """Train (or resume, or find finished) the policy; returns its card's figures."""
    out = Path(config.output)
    final = out / FINAL
    record = read_corpus_record(config.corpus)  # a missing corpus is refused before anything is written
    check_run(config)
    if (final / CARD_FILE).exists():
        return {**json.loads((final / CARD_FILE).read_text()), "trained_now": False}
    import torch
    from transformers import Trainer, TrainingArguments, default_data_collator

    if config.threads:
        torch.set_num_threads(config.threads)
    parts = read_parts(config.corpus)
    # every word of both parts: a rare member drawn only in the validation part is a word of the world all the same
    texts = [text for frame in parts.values() for column in ("prompt", "answer") for text in frame[column].unique()]
    tokenizer = word_tokenizer(corpus_words(texts))
    train, validation = (
        PaddedRows(
            encoded(tokenizer, parts[p]["prompt"].to_list(), parts[p]["answer"].to_list()), tokenizer.pad_token_id
        )
        for p in ("train", "validation")
    )
    model = build_model(config, tokenizer)
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=config.warmup_steps,
        weight_decay=config.weight_decay,
        logging_steps=max(1, config.max_steps // 30),
        save_steps=config.save_steps,
        save_total_limit=1,
        seed=config.seed,
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=default_data_collator)
    start = time.perf_counter()
    resume = last_checkpoint(out)
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    seconds = time.perf_counter() - start
    trained: Any = trainer.model  # the model given, trained in place
    model = trained.to("cpu")
    figures = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocabulary": len(tokenizer),
        "held_out": answer_loss(model, validation),
        "corpus_entropy_nats_per_answer": record["entropy_nats_per_answer"],
        "corpus": {**record["identity"], "path": str(config.corpus)},
        "settings": config.identity(),
        "train_seconds": round(seconds, 1),
        "resumed": resume is not None,
        "final_train_loss": next((h["loss"] for h in reversed(trainer.state.log_history) if "loss" in h), None),
    }
    save_final(model, tokenizer, figures, final)
    atomic_write_bytes(out / "log_history.json", (json.dumps(trainer.state.log_history, indent=1) + "\n").encode())
    for checkpoint in out.glob("checkpoint-*"):  # the final policy holds everything a later stage reads
        shutil.rmtree(checkpoint)
    return {**figures, "trained_now": True}


def save_final(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, figures: dict[str, Any], final: Path
) -> None:
    """The policy folder, written beside and renamed into place: a killed save leaves no half a policy."""
    tmp = final.with_name(f".{final.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    write_card(tmp, figures)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
