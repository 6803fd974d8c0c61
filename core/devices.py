"""Where an in-process model runs: this process's accelerator when there is one.

Under torchrun / accelerate each rank has its own GPU (``LOCAL_RANK``); a reward model or classifier loaded
without a device would otherwise sit on the CPU of every rank.
"""

from __future__ import annotations

import os


def rank_device() -> str:
    """``cuda:LOCAL_RANK`` when CUDA is available (``cuda:0`` outside a launcher), else ``cpu``."""
    import torch

    if torch.cuda.is_available():
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return "cpu"


def cuda_available() -> bool:
    """CUDA GPUs visible to this process (a CPU-only torch, or none, says no)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
