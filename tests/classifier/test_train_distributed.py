"""`darling train-classifier` as a multi-process run is launched: torchrun, one process per device (here 2 CPU
ranks over gloo), the command line itself on every rank."""

import json
import subprocess
import sys

import pytest
from helpers import CLI_ENV, synthetic_pairs, write_jsonl


def torchrun_darling(*args, timeout: int = 600) -> subprocess.CompletedProcess:
    """``torchrun --standalone --nproc-per-node 2 -m darling ARGS`` (a free rendezvous port, gloo on CPU)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "darling"]
    env = {**CLI_ENV, "OMP_NUM_THREADS": "1"}
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.slow
def test_bi_encoder_under_torchrun_with_a_global_batch(tmp_path, tiny_bert_dir):
    """Both ranks run the command to the end (rank 1 used to fail on the metrics only rank 0 has); the bi-encoder
    trains under DDP (its unused BERT pooler used to stop DDP at the first step); 16 examples per optimiser step
    over 2 ranks of micro-batches of 4 means 2 micro-batches per rank and step, whatever the number of ranks."""
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(48))
    out = tmp_path / "clf"
    result = torchrun_darling(
        "train-classifier",
        "--preset",
        "cpu",
        "--backbone",
        tiny_bert_dir,
        "--data",
        data,
        "--output",
        out,
        "--devices",
        2,
        "--accelerator",
        "cpu",
        "--strategy",
        "ddp",
        "--batch-size",
        4,
        "--global-batch-size",
        16,
        "--max-steps",
        3,
        "--max-tokens-per-response",
        16,
        "--freeze-layers",
        0,
        "--threads",
        1,
        "--val-fraction",
        0.25,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    assert result.stdout.count("exported ") == 1  # rank 0 reports; rank 1 finishes quietly
    meta = json.loads((out / "darling.json").read_text())
    assert meta["kind"] == "bi-encoder" and meta["dtype"] == "float32"
    assert meta["schedule"] == {
        "world_size": 2,
        "accumulate_grad_batches": 2,
        "examples_per_optimiser_step": 16,
        "optimiser_steps": 3,
        "epochs_run": 2,  # 36 training pairs: 18 a rank, 5 micro-batches, 2.5 optimiser steps an epoch
        "best_epoch": None,  # no early stopping: the last weights are the exported ones
    }
    assert meta["validation_metrics"]["n"] == 12  # every validation pair once, though each rank scored a share


def test_a_global_batch_that_the_devices_cannot_split_is_refused():
    from darling.classifier.config import build_config
    from darling.core.errors import UserInputError

    config = build_config("cpu", overrides={"batch_size": 4, "global_batch_size": 12})
    assert config.accumulation(1) == 3
    with pytest.raises(UserInputError, match="not a multiple of batch_size x devices = 4 x 2"):
        config.accumulation(2)
    with pytest.raises(UserInputError, match="not both"):
        build_config("cpu", overrides={"global_batch_size": 64, "accumulate_grad_batches": 4})
