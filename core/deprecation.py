"""Old names kept for one release after a rename (issue 50): each alias resolves to the new name and says so once.

A renamed object stays importable under its old name through the module's ``__getattr__`` (``renamed_attributes``);
a renamed file or preset is read under its old name by the code that looks it up (``warn_renamed``). Every alias is
listed in the CHANGELOG with the release that drops it. ``FutureWarning``, not ``DeprecationWarning``: the users of
these names run commands and scripts, where Python hides the latter.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib import import_module
from typing import Any

REMOVED_IN = "0.3"  # the release that drops the aliases added in 0.2


def warn_renamed(kind: str, old: str, new: str) -> None:
    warnings.warn(f"{kind} {old!r} is now {new!r}; the old name goes in darling {REMOVED_IN}", FutureWarning, 3)


def renamed_attributes(module: str, renames: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves each old name in ``renames`` as the new object, warning. The new name is
    the module's own (``"RewardConfig"``) or, for an object that moved, its full path (``"darling.rl.x.Name"``)."""

    def __getattr__(name: str) -> Any:
        if name in renames:
            where, _, new = renames[name].rpartition(".")
            warn_renamed("darling name", f"{module}.{name}", renames[name] if where else f"{module}.{new}")
            return getattr(import_module(where or module), new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
