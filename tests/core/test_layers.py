"""How modules import, read from the code: every module belongs to a layer's folder, no module imports another
module's private name, an own module imported inside a function says what it loads, and every ``--help`` stays free
of heavy libraries. The layers and the absence of cycles: tests/core/test_architecture.py (grimp).
"""

import ast
from pathlib import Path

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


def test_no_module_imports_another_modules_private_name():
    bad = []
    for _, path in modules():
        own = "darling." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for line, module, names in darling_imports(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and module != own:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {module}")
    assert not bad, "\n".join(bad)


def in_function_imports(path: Path):
    """(line, module, source line) of every ``from darling... import`` inside a function of ``path``."""
    source = path.read_text()
    lines = source.splitlines()
    seen = set()
    for fn in ast.walk(ast.parse(source, str(path))):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("darling"):
                    yield node.lineno, node.module, lines[node.lineno - 1]


def test_the_packages_own_modules_are_imported_at_the_top():
    """Only an import of one of the package's modules that loads a heavy library (torch, Lightning, scikit-learn)
    may wait inside a function, where ``darling --help`` or a command's bad-input path would otherwise load it, and
    it says so on its line ("# loads ...")."""
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module} inside a function without saying what it loads"
        for _, path in modules()
        for line, module, text in in_function_imports(path)
        if "# loads " not in text
    ]
    assert not bad, "\n".join(bad)


HEAVY = ("torch", "transformers", "lightning", "sklearn", "trl", "vllm", "datasets", "matplotlib", "ray")


def test_darling_help_and_a_bad_input_load_no_heavy_library(tmp_path):
    """``darling --help`` and a refused input, in a fresh interpreter: none of the heavy libraries is imported."""
    import subprocess
    import sys

    probe = (
        "import sys, runpy\n"
        "sys.argv = ['darling', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('darling', run_name='__main__')\n"
        "except SystemExit as exit:\n    code = exit.code\n"
        f"print('HEAVY', *[m for m in {HEAVY!r} if m in sys.modules])\n"
        "print('CODE', code)\n"
    )
    missing = str(tmp_path / "missing.jsonl")
    for argv in (
        ["--help"],
        ["train-classifier", "--data", missing, "--output", str(tmp_path / "o")],
        ["eval", "classifier", "--data", missing, "--model", str(tmp_path), "--output", str(tmp_path / "e")],
        ["eval", "novelty", "--classifier", str(tmp_path), "--output", str(tmp_path / "n")],
        ["serve-classifier", "--model", str(tmp_path)],
        ["pipeline", "--preset", "nope", "--output", str(tmp_path / "p")],
    ):
        result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120)
        report = {k: v for k, _, v in (line.partition(" ") for line in result.stdout.splitlines())}
        assert report["CODE"] in ("0", "2"), (argv, result.stdout[-500:], result.stderr[-500:])
        assert report["HEAVY"].strip() == "", (argv, report["HEAVY"])


START_UP = ("polars", "pyarrow", "numpy", "httpx", "openai", "yaml", *HEAVY)
HELP_COMMANDS = (
    [],
    ["train-classifier"],
    ["import-classifier"],
    ["serve-classifier"],
    ["serve-reward-model"],
    ["rl-train"],
    ["pipeline"],
    *(["datagen", c] for c in ("rollouts", "pairs", "label", "training-pairs")),
    *(["eval", c] for c in ("classifier", "math", "novelty", "creative", "compare", "study")),
)


def test_every_commands_help_loads_no_data_or_http_library():
    """``darling --help`` and every command's ``--help``, in one fresh interpreter: the command line builds its flags
    from the settings classes alone, so neither polars, numpy nor httpx (~0.3 s together) is imported; each
    command imports its stage's code when it runs (bench/cli_startup.py measures the time)."""
    import subprocess
    import sys

    probe = (
        "import sys, runpy\n"
        f"for argv in {[[*c, '--help'] for c in HELP_COMMANDS]!r}:\n"
        "    sys.argv = ['darling', *argv]\n"
        "    try:\n        runpy.run_module('darling', run_name='__main__')\n"
        "    except SystemExit as exit:\n        assert exit.code in (0, None), (argv, exit.code)\n"
        f"print('LOADED', *[m for m in {START_UP!r} if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = result.stdout.rsplit("LOADED", 1)[1].split()
    assert loaded == [], loaded
