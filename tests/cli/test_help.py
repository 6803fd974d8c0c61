"""Every command's --help in an 80-column terminal: no line wider, no option name cut short, an example each."""

import pytest
import typer.main
from rich.cells import cell_len
from typer.testing import CliRunner

from darling.cli.main import app


def commands() -> list[tuple[list[str], object]]:
    """(words after `darling`, the click command) of every command, through the groups (typer's own click)."""
    found = []

    def walk(group, words: list[str]) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, [*words, name])
            else:
                found.append(([*words, name], command))

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = commands()


def render(words: list[str]) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "80", "TERM": "dumb"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


EXPECTED = {
    "train-classifier", "import-classifier", "rl-train", "serve-classifier", "serve-reward-model", "pipeline",
    "eval math", "eval novelty", "eval creative", "eval classifier", "eval compare", "eval study",
    "eval partitions", "eval agreement",
    "datagen rollouts", "datagen pairs", "datagen label", "datagen training-pairs", "world corpus", "world pretrain",
}  # fmt: skip


def test_every_command_is_found():
    assert {" ".join(words) for words, _ in COMMANDS} == EXPECTED


@pytest.mark.parametrize("words, command", COMMANDS, ids=[" ".join(w) for w, _ in COMMANDS])
def test_help_fits_80_columns_with_every_option_name_whole(words, command):
    text = render(words)
    lines = text.splitlines()
    assert max(cell_len(line) for line in lines) <= 80, [line for line in lines if cell_len(line) > 80][:3]
    assert "…" not in text, [line for line in lines if "…" in line][:3]
    for param in command.params:
        for name in [*param.opts, *param.secondary_opts]:
            if name.startswith("-"):
                assert any(name in line.split() or f"{name}," in line for line in lines), (words, name)
    assert f"darling {' '.join(words)}" in text.split("╭", 1)[0], "no example before the options"
    examples = [line.strip() for line in (command.help or "").splitlines() if line.startswith("    ")]
    assert all(len(line) <= 76 for line in examples), [line for line in examples if len(line) > 76]


def test_settings_panels_put_the_essentials_first_and_pipeline_help_names_every_table():
    from darling.pipeline.schema import TABLES

    panels = [line.split("─ ", 1)[1].split(" ─", 1)[0] for line in render(["rl-train"]).splitlines() if "╭─ " in line]
    assert panels[:3] == ["Options", "Data, model, output", "Reward: quality x diversity (Eq. 5), and the other arms"]
    assert {"GRPO (TRL's GRPOConfig)", "Generation and hardware", "Checkpoints, logging, seed"} <= set(panels)
    pipeline = " ".join(render(["pipeline"]).split())
    assert all(f"[{name}]" in pipeline for name in TABLES), [n for n in TABLES if f"[{n}]" not in pipeline]
