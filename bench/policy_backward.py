"""Seconds of one forward and backward pass of the policy on one CPU thread, with and without TRL's activation
recomputation (``gradient_checkpointing``) and with only the top N decoder layers trainable (``trainable_layers``).

The cost of an RL step that ``rl-train`` controls besides generation, measured alone, one setting after another in
one process (the same random batch: ``--prompts`` x ``--generations`` sequences of ``--tokens`` tokens, the loss on
the last ``--completion`` positions as TRL keeps them). Prints a table with each setting's ratio to the first.

    .venv/bin/python bench/policy_backward.py --policy runs/pipeline/rl-warmup/final --prompts 4
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import AutoModelForCausalLM

from darling.core.local_models import smollm2_dir
from darling.rl.train import train_top_layers


def seconds(policy: str, ids: torch.Tensor, keep: int, recompute: bool, top: int) -> tuple[float, float]:
    """Forward and backward seconds of the second of two passes (the first warms the allocator)."""
    model = AutoModelForCausalLM.from_pretrained(policy)
    model.train()
    if recompute:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # TRL's way
    if top:
        train_top_layers(model, top)
    for _ in range(2):
        start = time.perf_counter()
        loss = model(ids, logits_to_keep=keep).logits.float().log_softmax(-1).mean()
        forward = time.perf_counter() - start
        start = time.perf_counter()
        loss.backward()
        backward = time.perf_counter() - start
        model.zero_grad()
    return forward, backward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default=None, help="A HF policy folder (default: the packaged SmolLM2).")
    parser.add_argument("--prompts", type=int, default=4, help="Prompts per step.")
    parser.add_argument("--generations", type=int, default=8, help="Completions per prompt.")
    parser.add_argument("--tokens", type=int, default=52, help="Prompt and completion tokens per sequence.")
    parser.add_argument("--completion", type=int, default=12, help="Completion tokens (the logits kept).")
    parser.add_argument("--top", type=int, default=10, help="trainable_layers of the frozen-layer rows.")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = args.policy or str(smollm2_dir())
    ids = torch.randint(100, 40_000, (args.prompts * args.generations, args.tokens))
    print("| gradient_checkpointing | trainable_layers | forward s | backward s | total s | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    first = None
    for recompute, top in ((True, 0), (True, args.top), (False, 0), (False, args.top)):
        forward, backward = seconds(policy, ids, args.completion, recompute, top)
        first = first or forward + backward
        layers = top or "all"
        print(
            f"| {recompute} | {layers} | {forward:.1f} | {backward:.1f} | {forward + backward:.1f} | "
            f"{(forward + backward) / first:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
