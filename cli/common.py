"""Pieces every command module shares: consoles and the bad-input -> one line, exit 2 wrapper."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from darling.core.errors import UserInputError
from darling.core.readers import one_line
from darling.core.schemas import RUN_FILE

err = Console(stderr=True)
out = Console()


def _holds_no_results(folder: Path) -> bool:
    """Only bookkeeping inside: settings records (``run.json``), interrupted temporary files, empty folders."""

    files = (p for p in folder.rglob("*") if not p.is_dir())
    return all(p.name == RUN_FILE or (p.name.startswith(".") and p.name.endswith(".tmp")) for p in files)


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (what the command would create), or None."""
    if path.exists():
        return None
    path = path.absolute()
    while not path.parent.exists():
        path = path.parent
    return path


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input a user can fix -> one line on stderr and exit code 2, no traceback.

    A command's ``--output`` folder (and any parent it made) that did not exist before it ran is removed
    again when the command refuses its input with nothing in it but bookkeeping (e.g. a ``run.json``
    written before a model turned out not to exist): bad input leaves nothing behind. Results a resumable
    stage already wrote are kept, so the rerun continues from them."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:

        output = kwargs.get("output")
        created = _first_missing(output) if isinstance(output, Path) else None
        try:
            return fn(*args, **kwargs)
        except UserInputError as exc:
            if created is not None and created.is_dir() and _holds_no_results(created):
                shutil.rmtree(created, ignore_errors=True)
            # escape: messages quote user text, and "generators[0]" or "[[yes]]" must print as written
            err.print(f"[bold red]error:[/] {escape(one_line(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=2) from None

    return wrapper
