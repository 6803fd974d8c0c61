"""Pieces every command module shares: consoles and the bad-input -> one line, exit 2 wrapper."""

from __future__ import annotations

import functools

import typer
from rich.console import Console

err = Console(stderr=True)
out = Console()


def user_errors(fn):
    """Bad input a user can fix -> one line on stderr and exit code 2, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from darling.errors import UserInputError

        try:
            return fn(*args, **kwargs)
        except UserInputError as exc:
            err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=2) from None

    return wrapper
