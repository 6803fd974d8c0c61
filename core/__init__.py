"""The shared core under every stage: what two stages use lives here (errors, the one reader of user files, record
schemas, resumable shards, the config system, local models and encoders, generation engines, math grading, quality
signals, the reward model, the pooling client and replicas).

It imports nothing from the stage packages (``datagen``, ``classifier``, ``rl``, ``evals``, ``pipeline``,
``cli``); ``tests/core/test_layers.py`` fails if it ever does. Import-light: nothing here loads torch at import time.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A package's PEP 562 ``__getattr__``: each name of ``exports`` (name -> its submodule) is imported on first
    use, so importing one light submodule (a config, for the command line's flags) loads none of the heavy ones."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    return __getattr__
