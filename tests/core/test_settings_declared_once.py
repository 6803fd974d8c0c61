"""Each sampling setting is declared once (``darling.core.engine_config.SAMPLING_HELP``): a command's config field
named ``temperature``, ``top_p``, ``max_tokens``, ``seed`` (of a command that samples) or ``shard_size`` comes from
``sampling_option``, so every flag of that name has one help; a field declared with a help of its own fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from darling.core.engine_config import SAMPLING_HELP

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "datagen", "classifier", "rl", "evals", "pipeline", "cli")
SAMPLING = set(SAMPLING_HELP) - {"seed"}  # a seed may be a bootstrap's or a split's: only the sampling ones below
SAMPLING_SEEDS = {"RolloutConfig", "JudgeConfig", "MathEvalConfig", "NoveltyConfig", "CreativeConfig"}  # they sample


def declarations(path: Path) -> list[tuple[str, str, int, str]]:
    """(class, field, line, the function its value calls) of every class-level annotated field declared by a call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        for item in node.body if isinstance(node, ast.ClassDef) else []:
            declared = isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            if declared and isinstance(item.value, ast.Call) and isinstance(item.value.func, ast.Name):
                found.append((node.name, item.target.id, item.lineno, item.value.func.id))
    return found


def test_every_sampling_field_is_declared_by_sampling_option():
    second = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for owner, name, line, call in declarations(path):
                sampled = name in SAMPLING or (name == "seed" and owner in SAMPLING_SEEDS)
                if sampled and call != "sampling_option":
                    second.append(f"{where}:{line} {name} = {call}(...)")
    assert not second, f"declared outside sampling_option: {second}"


def test_the_check_finds_a_second_declaration(tmp_path):
    """It can fail: a config declaring its own temperature is found."""
    module = tmp_path / "config.py"
    module.write_text('class C:\n    temperature: float = option(1.0, help="Temperature.")\n')
    assert declarations(module) == [("C", "temperature", 2, "option")]


def test_the_commands_share_one_help_per_sampling_setting():
    from darling.datagen.config import JudgeConfig, RolloutConfig
    from darling.evals.config import MathEvalConfig, NoveltyConfig
    from darling.rl.config import RLTrainConfig

    for config in (RolloutConfig, JudgeConfig, MathEvalConfig, NoveltyConfig, RLTrainConfig):
        from dataclasses import fields

        helps = {f.name: f.metadata.get("help", "") for f in fields(config)}
        assert helps["temperature"].startswith(SAMPLING_HELP["temperature"]), config.__name__
