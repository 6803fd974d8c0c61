"""Settings defined once (issue 50): a value that several stages read has one definition, and every other place
derives it. Read from the code, so a second definition fails here, not in review."""

import ast
import dataclasses
from pathlib import Path

from darling.core import lexical

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "datagen", "classifier", "rl", "evals", "pipeline", "cli")


def modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield package, path


def constant_assignments(name_part: str):
    """(file:line, name) of every assignment of a literal to a name containing ``name_part``, package-wide."""
    for _, path in modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and name_part in target.id.upper():
                        yield f"{path.relative_to(ROOT)}:{node.lineno}", target.id


def test_the_ngram_rule_is_defined_once():
    """Its name and the paper's defaults (4-grams, half of them shared) live in core/lexical.py; the scorer, the arm's
    partition and rl-train's defaults read them from there."""
    from darling.classifier.ngram import NgramScorer, ngram_scorer
    from darling.rl.config import RLTrainConfig
    from darling.rl.methods import METHODS

    places = sorted(constant_assignments("NGRAM"))
    assert [where.split(":")[0] for where, _ in places] == ["core/lexical.py"] * 3, places
    defaults = {f.name: f.default for f in dataclasses.fields(RLTrainConfig)}
    assert (defaults["ngram_n"], defaults["ngram_threshold"]) == (lexical.NGRAM_ORDER, lexical.NGRAM_THRESHOLD)
    assert METHODS["darling-ngram"].partition == NgramScorer.kind == lexical.NGRAM_RULE
    assert ngram_scorer().threshold == lexical.NGRAM_THRESHOLD and ngram_scorer().n == lexical.NGRAM_ORDER
