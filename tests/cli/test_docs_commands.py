"""Every `darling` command shown in the README and the guides (docs/*.md) is parsed by the real command line: a
renamed flag, a removed option or a bad value in the docs fails here, so the docs cannot drift from the flags."""

import re
import shlex
from pathlib import Path

import pytest

from darling.cli.main import app
from darling.cli.options import parse_argv

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```", re.M | re.S)
LAUNCHER = re.compile(r"^([A-Z_]+=\S*|env|nohup|time|srun|\S*python\S*|torchrun|accelerate|launch|--\S+|\S+=\S+)$")


def blocks(markdown: str, languages: tuple[str, ...]) -> list[str]:
    return [body for language, body in FENCE.findall(markdown) if language in languages]


def shell_commands(markdown: str) -> list[str]:
    """The commands of the shell code blocks: continuation lines joined, comments dropped, split at && ; |."""
    commands = []
    for block in blocks(markdown, ("", "bash", "sh", "shell", "console")):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                parts = re.split(r"&&|;|\|\|?", line)
                commands += [c.strip().removesuffix("&").strip() for c in parts if c.strip()]
    return commands


def darling_argv(command: str) -> list[str] | None:
    """The arguments after `darling` (or a launcher's `-m darling`: torchrun, accelerate launch), else None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if "-m" in words and words.index("-m") + 1 < len(words) and words[words.index("-m") + 1] == "darling":
        return words[words.index("-m") + 2 :]
    for i, word in enumerate(words):
        if Path(word).name == "darling":
            return words[i + 1 :]
        if not LAUNCHER.match(word):
            return None
    return None


def doc_commands() -> list[tuple[str, list[str]]]:
    found = []
    for doc in DOCS:
        for command in shell_commands(doc.read_text()):
            argv = darling_argv(command)
            if argv:
                found.append((f"{doc.relative_to(ROOT)}: {command}", argv))
    return found


def doc_imports() -> list[tuple[str, str, list[str]]]:
    """(doc, module, names) of every `from darling... import ...` in the docs' Python blocks."""
    found = []
    for doc in DOCS:
        for block in blocks(doc.read_text(), ("python", "py")):
            for module, names in re.findall(r"^\s*from (darling[\w.]*) import ([\w, ]+)", block, re.M):
                found.append((str(doc.relative_to(ROOT)), module, [n.strip() for n in names.split(",")]))
    return found


COMMANDS = doc_commands()


def test_the_docs_show_every_command():
    shown = {" ".join(argv[:2]) if argv[0] in ("datagen", "eval") else argv[0] for _, argv in COMMANDS}
    for command in (
        "train-classifier",
        "import-classifier",
        "serve-classifier",
        "serve-reward-model",
        "rl-train",
        "pipeline",
        "datagen rollouts",
        "datagen pairs",
        "datagen label",
        "eval math",
        "eval novelty",
        "eval creative",
        "eval classifier",
        "eval compare",
        "eval study",
    ):
        assert command in shown, command


@pytest.mark.parametrize("where, argv", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_each_command_in_the_docs_parses(where, argv, tmp_path, monkeypatch):
    if argv[0] in ("--help", "--version") or "--help" in argv:
        return
    monkeypatch.chdir(tmp_path)  # a --config file the docs name is the reader's own: an empty one stands in for it
    for i, word in enumerate(argv[:-1]):
        if word == "--config":
            Path(argv[i + 1]).parent.mkdir(parents=True, exist_ok=True)
            Path(argv[i + 1]).write_text("")
    parse_argv(app, argv)  # raises on an unknown command or option, or a value the option cannot take


@pytest.mark.parametrize("where, module, names", doc_imports())
def test_each_import_in_the_docs_resolves(where, module, names):
    import importlib

    loaded = importlib.import_module(module)
    for name in names:
        assert hasattr(loaded, name), f"{where}: {module} has no {name}"


def test_the_layout_guide_names_every_module_and_no_other():
    """docs/layout.md lists each package's files with a line each, checked against the tree both ways: a new or
    renamed module must appear there, and a row whose file is gone fails (pipeline/stages/ has its own table)."""
    import re

    layout = (ROOT / "docs" / "layout.md").read_text()
    for package in ("core", "datagen", "world", "classifier", "rl", "evals", "pipeline", "cli"):
        section = layout.split(f"### `{package}/`", 1)[1].split("\n### ", 1)[0]
        tables = section.split("\n`stages/`:", 1)  # pipeline: its own files, then its stages' rooms
        for folder, table in zip((ROOT / package, ROOT / package / "stages"), tables, strict=False):
            listed = set(re.findall(r"^\| `([\w.]+\.py)` \|", table, flags=re.MULTILINE))
            modules = {m.name for m in folder.glob("*.py")} - {"__init__.py"}
            where = folder.relative_to(ROOT)
            assert not modules - listed, f"docs/layout.md: {where}/ {sorted(modules - listed)} missing"
            assert not listed - modules, f"docs/layout.md: {where}/ {sorted(listed - modules)} listed, not in the tree"
