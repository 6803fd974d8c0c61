"""``darling`` — one command line over the Python API. Parses options, calls one function, prints a summary.

Heavy imports (torch, transformers) happen inside the commands so that ``darling --help`` and
``darling --version`` stay instant.
"""

from __future__ import annotations

from typing import Annotated

import typer

from darling import __version__
from darling.cli.classifier import import_classifier_cmd, train_classifier_cmd
from darling.cli.common import out
from darling.cli.datagen import datagen_app
from darling.cli.evals import eval_app
from darling.cli.help import HelpCommand
from darling.cli.pipeline import pipeline_cmd
from darling.cli.rl import rl_train_cmd
from darling.cli.serve import serve_classifier_cmd, serve_reward_model_cmd
from darling.cli.world import world_app
from darling.core.gpu_memory import record_at_exit

app = typer.Typer(
    name="darling",
    help="Reproducible DARLING: equivalence classifier, data generation, diversity-aware RL, evaluation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
app.add_typer(eval_app, name="eval")
app.add_typer(datagen_app, name="datagen")
app.add_typer(world_app, name="world")
app.command("train-classifier", cls=HelpCommand)(train_classifier_cmd)
app.command("import-classifier", cls=HelpCommand)(import_classifier_cmd)
app.command("rl-train", cls=HelpCommand)(rl_train_cmd)
app.command("serve-classifier", cls=HelpCommand)(serve_classifier_cmd)
app.command("serve-reward-model", cls=HelpCommand)(serve_reward_model_cmd)
app.command("pipeline", cls=HelpCommand)(pipeline_cmd)


def _version(value: bool) -> None:
    if value:
        out.print(f"darling {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Reproducible DARLING (arXiv 2509.02534)."""
    record_at_exit()  # under `darling pipeline`: this command's peak GPU memory, for its stage record
