"""``darling serve-reward-model``: N vLLM replicas of a one-output reward model, and the served-vs-in-process check.

The replicas are serve-classifier's (``darling.core.replicas``: one GPU each or vLLM's CPU build, ports from
``--port``, the ready file, SIGTERM), each ``--runner pooling --convert classify``, which is what
``rl-train --reward-model-url`` and ``eval novelty --reward-model-url`` talk to (``darling.core.reward_model``:
token ids from the same ``RewardEncoder``, the raw logit with ``use_activation: false``).

- ``--max-model-len`` defaults to the encoder's ``max_length`` (1024, or the tokenizer's limit if lower): the
  longest input a client ever sends, so none is refused.
- ``--dtype`` defaults to float32 on the CPU build (its other choice, bf16, would move every score) and to the
  model's own (config.json; float32 when it names none) on GPUs: vLLM's ``auto`` would serve an fp32 checkpoint in
  fp16. The check scores in process in the same dtype, so its tolerance is that dtype's.
- A hub name is served from its snapshot in the local Hugging Face cache: the CPU build's replicas run offline with
  a cache folder of their own, where a name alone finds nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from darling.classifier.labelled_pairs import load_pairs
from darling.core.devices import rank_device
from darling.core.errors import UserInputError
from darling.core.local_models import check_model_source
from darling.core.replica_config import SERVE_DTYPES
from darling.core.replicas import free_gpu_memory, pooling_replicas, start_servers
from darling.core.reward_model import RewardModel, ServedRewardModel, servable_encoder
from darling.core.vllm_server import VLLMServer
from darling.rl.serve_config import RewardServeConfig


def model_folder(name: str) -> Path:
    """The folder vLLM loads: ``tiny:reward`` built in the cache, a folder as given, a hub name's cached snapshot."""

    resolved = check_model_source(name, "--model")  # one line when nothing can load it
    if Path(resolved).expanduser().is_dir():
        return Path(resolved).expanduser()
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(resolved, local_files_only=True))
    except LocalEntryNotFoundError:
        raise UserInputError(
            f"--model {name}: not in the local Hugging Face cache; download it first (hf download {name})"
        ) from None


def serving_dtype(config: RewardServeConfig, folder: Path) -> str:
    """``--dtype``; else float32 on the CPU build, the checkpoint's own dtype on GPUs (float32 if unnamed)."""
    if config.dtype:
        return config.dtype
    if config.on_cpu():
        return "float32"
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    own = saved.get("dtype") or saved.get("torch_dtype")  # transformers >= 4.56 writes dtype, older torch_dtype
    return own if own in SERVE_DTYPES else "float32"


def reward_replicas(config: RewardServeConfig, folder: Path, max_length: int) -> list[VLLMServer]:
    """The replicas ``config`` asks for (not started); ``max_length``: the encoder's, the default context."""
    return pooling_replicas(
        config, folder, "classify", serving_dtype(config, folder), config.max_model_len or max_length
    )


def start_reward_replicas(config: RewardServeConfig, timeout: float = 600.0) -> list[VLLMServer]:
    """Check the model (one output, servable encoding: one-line errors before any replica starts), start the
    replicas and wait until all are healthy."""

    folder = model_folder(config.model)
    encoder = servable_encoder(str(folder))
    return start_servers(reward_replicas(config, folder, encoder.max_length), timeout)


# Largest |served - in-process| raw score accepted, relative to max(1, |in-process score|) (a reward model's scores
# span units to tens, so a fixed absolute bound would be loose near 0 or strict at 30). Measured on vLLM-CPU with
# tiny:reward (2 layers): fp32 ~2e-6, bf16 1.7e-2; a deep model compounds bf16's rounding over more layers, hence
# the margin. fp16 keeps 3 more mantissa bits than bf16. Not yet measured on GPUs.
REWARD_PARITY_TOLERANCE = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 5e-2}


@dataclass(frozen=True)
class RewardParityReport:
    pairs: int
    max_abs_diff: float
    max_rel_diff: float  # |served - in-process| / max(1, |in-process|), the quantity the tolerance bounds
    tolerance: float
    score_range: tuple[float, float]  # in-process scores: a check over scores all alike would say little

    @property
    def ok(self) -> bool:
        return self.max_rel_diff <= self.tolerance


def reward_parity_check(
    model: str, urls: list[str], dtype: str, prompts: list[str], responses: list[str]
) -> RewardParityReport:
    """Served raw scores (through the client rl-train uses) vs the model scored in this process in the served
    dtype, on the same token ids. A server that gives no score raises ``RewardServerError``."""

    served = ServedRewardModel(model, urls)
    try:
        remote = np.asarray(served.scores(prompts, responses))
    finally:
        served.close()
    local_model = RewardModel(model, device=rank_device(), dtype=dtype)  # a 27B model is scored on a GPU
    local = np.asarray(local_model.scores(prompts, responses))
    del local_model
    free_gpu_memory()  # the jobs started after the check get this GPU back
    diff = np.abs(remote - local)
    return RewardParityReport(
        len(prompts),
        float(diff.max()),
        float((diff / np.maximum(1.0, np.abs(local))).max()),
        REWARD_PARITY_TOLERANCE[dtype],
        (float(local.min()), float(local.max())),
    )


def sample_reward_pairs(n: int = 16) -> tuple[list[str], list[str]]:
    """Real text for the check, 2n (prompt, response) pairs from NoveltyBench's human-labelled pairs: each prompt
    with its two LLM responses one after the other (past 1024 tokens for about half: the truncation both sides
    must cut alike), and with its first response's first sentence (a short input)."""

    prompts, responses = [], []
    for pair in load_pairs("noveltybench").pairs[:n]:
        for response in (f"{pair.generation_0}\n\n{pair.generation_1}", pair.generation_0.split(". ")[0]):
            prompts.append(pair.prompt)
            responses.append(response)
    return prompts, responses
