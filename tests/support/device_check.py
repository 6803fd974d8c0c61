"""A stand-in for a second device on a CPU-only machine: a model placed on ``meta`` and a check that every
module's parameters and tensor inputs share the device it was placed on.

On ``meta`` a forward pass computes shapes only, and a model that reads a value (transformers checks its
attention mask with ``.item()``) cannot go on: ``OutputReached`` ends the forward pass once the first layer with
weights (the token embedding, where a wrong-device index fails on a GPU) has run, after the checked module's
inputs and that layer's inputs and weights were checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


class OutputReached(Exception):
    """The checked module's forward pass ran to its end on the expected device."""


def _tensors(value) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


@contextmanager
def one_device(module: torch.nn.Module, device: str = "meta") -> Iterator[list[str]]:
    """Hooks on ``module`` and every submodule: each tensor input or direct parameter on another device than
    ``device`` is recorded (the yielded list, ``"name: what on which device"``). The first layer with weights of
    its own raises ``OutputReached`` when it returns (caught here): nothing is read off ``meta``."""
    expected = torch.device(device)
    wrong: list[str] = []
    handles = []

    def check(name: str):
        def hook(mod, args, kwargs):
            for tensor in [*_tensors(args), *_tensors(kwargs)]:
                if tensor.device != expected:
                    wrong.append(f"{name or 'model'}: input on {tensor.device}")
            for pname, parameter in mod.named_parameters(recurse=False):
                if parameter.device != expected:
                    wrong.append(f"{name or 'model'}.{pname}: parameter on {parameter.device}")

        return hook

    def reached(mod, args, output):
        raise OutputReached

    for name, sub in module.named_modules():
        handles.append(sub.register_forward_pre_hook(check(name), with_kwargs=True))
        if next(sub.parameters(recurse=False), None) is not None:
            handles.append(sub.register_forward_hook(reached))
    try:
        yield wrong
    except OutputReached:
        pass
    finally:
        for handle in handles:
            handle.remove()
