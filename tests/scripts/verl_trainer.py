"""verl 0.5's trainer steps up to its reward hook, for tests/scripts/verl_script.py (run inside a verl install).

``RayPPOTrainer.fit`` and ``_validate`` build the batch the reward sees from verl's own pieces: ``RLHFDataset`` +
``collate_fn``, ``DataProto.repeat(interleave=True)``, ``union``, and in training ``_balance_batch``, which reorders
the rows. ray_trainer.py itself cannot be imported here (it needs torchdata and the GPU worker stack), so
``_balance_batch`` is compiled from that file's own source and runs unchanged; only the LLM is stood in for, by
``rollout``, which returns fixed responses laid out as verl's rollout returns them.
"""

from __future__ import annotations

import ast
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import verl
from omegaconf import OmegaConf
from verl import DataProto
from verl.protocol import pad_dataproto_to_divisor, unpad_dataproto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.utils.seqlen_balancing import get_seqlen_balanced_partitions, log_seqlen_unbalance

RAY_TRAINER = Path(verl.__file__).parent / "trainer" / "ppo" / "ray_trainer.py"
GEN_KEYS = ["input_ids", "attention_mask", "position_ids"]  # what fit and _validate pop for generation
# ...with these non-tensor keys when present (fit pops "index" too, _validate keeps it)
GEN_NON_TENSOR = ("multi_modal_data", "raw_prompt", "tools_kwargs", "interaction_kwargs", "index", "agent_name")


def trainer_method(name: str) -> Callable:
    """``RayPPOTrainer.<name>`` compiled from verl's source, with the module globals it uses."""
    tree = ast.parse(RAY_TRAINER.read_text())
    trainer = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RayPPOTrainer")
    method = next(n for n in trainer.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace = {
        "torch": torch,
        "DataProto": DataProto,
        "get_seqlen_balanced_partitions": get_seqlen_balanced_partitions,
        "log_seqlen_unbalance": log_seqlen_unbalance,
    }
    # verl source, compiled as is: the test must follow the trainer's own reordering, not a copy of it
    exec(compile(ast.Module(body=[method], type_ignores=[]), str(RAY_TRAINER), "exec"), namespace)
    return namespace[name]


def balance_batch(batch: DataProto, world_size: int) -> None:
    """verl's ``_balance_batch`` (in place), for a trainer whose actor worker group has ``world_size`` ranks."""
    trainer = SimpleNamespace(actor_rollout_wg=SimpleNamespace(world_size=world_size))
    trainer_method("_balance_batch")(trainer, batch, metrics={})


def prompt_batch(files: list[str], tok) -> DataProto:
    """One dataloader batch of every prompt in ``files`` (verl-preprocessed Parquet), as ``fit`` receives it."""
    config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 64, "filter_overlong_prompts": False})
    dataset = RLHFDataset(files, tok, config)
    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))


def rollout(gen_batch: DataProto, texts: list[str], tok, response_length: int = 32) -> DataProto:
    """Stands in for ``generate_sequences``: row i answers with ``texts[i]`` (+ EOS), right-padded."""
    ids = torch.full((len(texts), response_length), tok.pad_token_id)
    mask = torch.zeros((len(texts), response_length), dtype=torch.long)
    for i, text in enumerate(texts):
        tokens = tok(text, add_special_tokens=False).input_ids + [tok.eos_token_id]
        ids[i, : len(tokens)] = torch.tensor(tokens)
        mask[i, : len(tokens)] = 1
    prompts = gen_batch.batch["input_ids"]
    attention = torch.cat([gen_batch.batch["attention_mask"], mask], 1)
    tensors = {
        "prompts": prompts,
        "responses": ids,
        "input_ids": torch.cat([prompts, ids], 1),
        "attention_mask": attention,
        "position_ids": (attention.cumsum(-1) - 1).clamp(min=0),
    }
    return DataProto.from_dict(tensors=tensors)


def pop_for_generation(batch: DataProto, validate: bool) -> DataProto:
    keys = [k for k in GEN_NON_TENSOR if k in batch.non_tensor_batch and not (validate and k == "index")]
    return batch.pop(batch_keys=GEN_KEYS, non_tensor_batch_keys=["raw_prompt_ids", *keys])


def training_batch(files: list[str], tok, responses: list[list[str]], world_size: int) -> DataProto:
    """``fit``'s batch at its reward hook: repeated n times interleaved, joined to the rollout, balanced."""
    batch = prompt_batch(files, tok)
    n = len(responses[0])
    gen_batch = pop_for_generation(batch, validate=False).repeat(repeat_times=n, interleave=True)
    output = rollout(gen_batch, [r for group in responses for r in group], tok)
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    batch = batch.repeat(repeat_times=n, interleave=True).union(output)
    balance_batch(batch, world_size)
    return batch


def validation_batch(files: list[str], tok, responses: list[list[str]], world_size: int) -> DataProto:
    """``_validate``'s batch at ``val_reward_fn``: val_kwargs.n responses per prompt, padded and unpadded, no uid."""
    batch = prompt_batch(files, tok).repeat(repeat_times=len(responses[0]), interleave=True)
    gen_batch = pop_for_generation(batch, validate=True)
    padded, pad_size = pad_dataproto_to_divisor(gen_batch, world_size)
    texts = [r for group in responses for r in group]
    output = unpad_dataproto(rollout(padded, texts + texts[:pad_size], tok), pad_size=pad_size)
    batch = batch.union(output)
    batch.meta_info["validate"] = True
    return batch
