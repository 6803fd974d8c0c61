"""Command help that reads in an 80-column terminal: each option's whole names on a line of their own, its help
indented below, in the panels its settings' fields name.

typer renders options as a table of five columns (names, short names, the ``--no-`` switch, type, help), which at
80 columns cuts long names short (``--reward-model-…``: which one?). ``HelpCommand`` renders the same options, in the
same panels and with typer's own help text (defaults, choices, required), as a list instead. It swaps typer's panel
printer (``typer.rich_utils._print_options_panel``, a private function) only while it writes its own help; if a
typer release renames it, typer's table comes back (tests/cli/test_help.py renders every command at 80 columns).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer.core
import typer.rich_utils as rich_utils
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

PANEL_PRINTER = "_print_options_panel"
HELP_INDENT = 4


def option_head(param: Any, ctx: Any) -> Text:
    """``--name, -n / --no-name  TYPE``: every name whole."""
    if not getattr(param, "opts", None) or not any(o.startswith("-") for o in param.opts):  # an argument
        return Text(param.name.upper(), style=rich_utils.STYLE_OPTION)
    names = [o for o in param.opts if o.startswith("--")] + [o for o in param.opts if not o.startswith("--")]
    off = list(param.secondary_opts)
    head = Text(", ".join(names), style=rich_utils.STYLE_OPTION)
    if off:
        head.append(" / ")
        head.append(", ".join(off), style=rich_utils.STYLE_NEGATIVE_OPTION)
    kind = param.display_type_rich(ctx=ctx) if hasattr(param, "display_type_rich") else None
    if kind and not getattr(param, "is_flag", False):
        head.append(f"  {kind}", style=rich_utils.STYLE_TYPES)
    return head  # [required] and the default: typer's own help text says them


def print_options_panel(*, name: str, params: list, ctx: Any, markup_mode: Any, console: Any) -> None:
    """typer's panel printer, as a list: the names line, then the help (typer's own text) indented."""
    if not params:
        return
    rows = Table.grid(expand=True)
    for param in params:
        rows.add_row(option_head(param, ctx))
        text = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
        rows.add_row(Padding(text, (0, 0, 0, HELP_INDENT)))
    panel = Panel(rows, border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER, title=name)
    panel.title_align = rich_utils.ALIGN_OPTIONS_PANEL
    console.print(panel)


@contextmanager
def list_panels() -> Iterator[None]:
    """typer's option tables printed as lists, for one help text."""
    original = getattr(rich_utils, PANEL_PRINTER, None)
    if original is None:  # a typer release without it: its own rendering stays
        yield
        return
    setattr(rich_utils, PANEL_PRINTER, print_options_panel)
    try:
        yield
    finally:
        setattr(rich_utils, PANEL_PRINTER, original)


class HelpCommand(typer.core.TyperCommand):
    """A typer command whose ``--help`` lists its options (``list_panels``)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with list_panels():
            super().format_help(ctx, formatter)
