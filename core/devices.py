"""Where an in-process model runs, decided by one rule: the command's ``--device`` (``auto`` by default: this
process's accelerator when there is one, else the CPU), resolved once by ``resolve_device`` and handed to every
model the command loads (generator, classifier, quality encoder, reward model).

Under torchrun / accelerate each rank has its own GPU (``LOCAL_RANK``); a reward model or classifier loaded
without a device would otherwise sit on the CPU of every rank. A module whose parameters are not all on one device
(a bi-encoder's backbone moved to the GPU, its two calibration numbers left on the CPU) reports the device of its
largest part (``module_device``), which is where its inputs must go.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from typing import TYPE_CHECKING, Any

from darling.core.config import option
from darling.core.errors import UserInputError

if TYPE_CHECKING:
    import torch

AUTO = "auto"
DEVICE_PANEL = "Device"
DEVICE_HELP = (
    "Where this command's in-process models run (generation with --engine hf, classifier, quality encoder, reward "
    "model): auto (this rank's GPU when CUDA is present, else cpu), cpu, cuda, cuda:1."
)


def device_option(help: str = DEVICE_HELP) -> Any:
    """The ``device`` field of a command that loads models in process: one name, one default, one rule."""
    return option(AUTO, help=help, panel=DEVICE_PANEL)


def rank_device() -> str:
    """``cuda:LOCAL_RANK`` when CUDA is available (``cuda:0`` outside a launcher), else ``cpu``."""
    import torch

    if torch.cuda.is_available():
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return "cpu"


def resolve_device(device: str | None) -> str:
    """A ``--device`` value as torch takes it: ``auto`` (or none) is ``rank_device()``, anything else as given;
    a CUDA device this process cannot see is refused here, in one line, before any model loads."""
    if device in (None, "", AUTO):
        return rank_device()
    device = str(device)
    if device.startswith("cuda"):
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0) if device.partition(":")[2].isdigit() else None
        if index is None or index >= count:
            seen = f"{count} CUDA device(s) visible" if count else "no CUDA here (torch.cuda.is_available() is False)"
            raise UserInputError(f"--device {device}: {seen}; use auto, cpu or cuda:N with N < {max(count, 1)}")
    return device


def module_device(module: torch.nn.Module) -> torch.device:
    """The device holding most of ``module``'s parameters: where its inputs belong. The first parameter is not
    enough: a bi-encoder registers its scale before its backbone, and keeps it on the CPU."""
    import torch

    sizes: dict[torch.device, int] = {}
    for parameter in module.parameters():
        sizes[parameter.device] = sizes.get(parameter.device, 0) + parameter.numel()
    return max(sizes, key=sizes.__getitem__) if sizes else torch.device("cpu")


def no_gpu_driver() -> bool:
    """True only where no GPU driver can be reached: Linux without NVIDIA's driver library (``libcuda.so.1``, which
    CUDA's runtime loads by that name when torch asks for a device) and without ROCm's device (``/dev/kfd``).
    Elsewhere, or where either is present, False: ask torch. Importing torch only to hear "no" cost a pipeline rerun
    whose stages are all done ~1.2 of its 2.5-2.8 CPU-s (docs/measurements.md)."""
    if not sys.platform.startswith("linux") or os.path.exists("/dev/kfd"):
        return False
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return False


def cuda_available() -> bool:
    """CUDA GPUs visible to this process (a CPU-only torch, or none, says no; without a GPU driver torch is not
    imported to say so)."""
    if no_gpu_driver():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def free_accelerator_memory() -> None:
    """What a closed engine held: Python's garbage, then CUDA's cached blocks (a later model needs them)."""
    gc.collect()
    if "torch" not in sys.modules:  # nothing of torch's to free: a process that never loaded a model
        return
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
