"""The package's dependency order, read from the code: a lower layer never imports a higher one, the two stage
packages on the same layer never import each other, and no module imports another module's private name.

    core  <-  datagen, classifier  <-  rl, evals  <-  pipeline  <-  cli

What two stages share lives below both (math grading, the partition, quality signals, the reward model in core or
classifier): evals never imports rl, nor rl evals.

Imports inside functions count too (they are how heavy dependencies stay lazy, not a way around the order).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"core": 0, "datagen": 1, "classifier": 1, "rl": 2, "evals": 2, "pipeline": 3, "cli": 4}


def package_of(module: str) -> str | None:
    """``darling.rl.train`` -> ``rl``; the root package (``darling``, its version) belongs to no layer."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "darling" and parts[1] in LAYERS else None


def modules():
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield package, path


def darling_imports(path: Path):
    """(line, imported module, names) for every ``from darling...`` / ``import darling...`` in the file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "darling":
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "darling":
                    yield node.lineno, alias.name, []


def test_the_layers_cover_every_module():
    top = {p.name for p in ROOT.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert not top, f"modules outside any layer: {sorted(top)} (move them into core/ or a stage package)"


@pytest.mark.parametrize("package", list(LAYERS))
def test_no_module_imports_a_higher_layer_or_a_sibling_stage(package):
    bad = []
    for _, path in (m for m in modules() if m[0] == package):
        for line, module, _ in darling_imports(path):
            target = package_of(module)
            if target is None or target == package:
                continue
            if LAYERS[target] >= LAYERS[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({target} is not below {package})")
    assert not bad, "\n".join(bad)


def test_no_module_imports_another_modules_private_name():
    bad = []
    for _, path in modules():
        own = "darling." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for line, module, names in darling_imports(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and module != own:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {module}")
    assert not bad, "\n".join(bad)
