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


def log_key_lookups(keys: set[str]):
    """(file:line, key, what) of every lookup of a literal ``key`` in a mapping: ``m["key"]``, ``m.get("key")``,
    ``"key" in m``; package-wide."""
    for _, path in modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{node.lineno}" if hasattr(node, "lineno") else ""
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in keys:
                owner = node.value.id if isinstance(node.value, ast.Name) else "?"
                yield where, node.slice.value, f"{owner}[...]"
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in keys
            ):
                yield where, node.args[0].value, ".get"
            elif (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Constant)
                and node.left.value in keys
                and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            ):
                yield where, node.left.value, "in"


def test_trl_log_keys_are_read_through_the_metric_table():
    """TRL's own keys in the training log (reward, loss, grad_norm, entropy, entropy_coef) are named once, in
    core/training_log.py; every reader looks them up through it. The one literal left is a run summary's own field
    ``reward`` (the reward's description, pipeline/rl_steps.py's ``s["reward"]``), not the log's key."""
    from darling.core.training_log import TRL_KEYS

    found = [
        (where, key, what)
        for where, key, what in log_key_lookups(set(TRL_KEYS))
        if not (where.startswith("pipeline/rl_steps.py") and what == "s[...]" and key == "reward")
    ]
    assert not found, found


def test_the_rewards_settings_are_declared_by_its_config():
    """norm, correct_only, floor and passk_k are RewardConfig's fields; rl-train's flags of the same names read their
    defaults and help from it (no literal default or help in rl/config.py), and darling_term() hands them back."""
    from darling.rl.config import RLTrainConfig
    from darling.rl.reward import RewardConfig

    reward = [f.name for f in dataclasses.fields(RewardConfig) if f.name != "combine"]
    train = {f.name: f for f in dataclasses.fields(RLTrainConfig)}
    declared = {f.name: f for f in dataclasses.fields(RewardConfig)}
    assert all(train[name].default == declared[name].default for name in reward)
    assert all(train[name].metadata["help"] == declared[name].metadata["help"] for name in reward)
    source = (ROOT / "rl" / "config.py").read_text()
    literal = [
        node.target.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id in reward
        and isinstance(node.value, ast.Call)
        and (
            (node.value.args and isinstance(node.value.args[0], ast.Constant))
            or any(k.arg == "help" for k in node.value.keywords)
        )
    ]
    assert not literal, f"rl/config.py declares these reward settings a second time: {literal}"


def test_which_settings_a_rerun_may_change_is_field_metadata():
    """What a resumed rl-train may change and what a pipeline run's identity leaves out are marked on the fields
    themselves (``RESUMABLE``, ``NOT_IDENTITY``), not kept as lists of field names beside them."""
    from darling.pipeline.config import PipelineConfig
    from darling.rl.config import RLTrainConfig
    from darling.rl.train import RESUME_MAY_CHANGE

    names = {f.name for cls in (RLTrainConfig, PipelineConfig) for f in dataclasses.fields(cls)}
    lists = [  # RESUME_MAY_CHANGE or NOT_IDENTITY spelt out as names again (a tuple, list, set or frozenset of them)
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for _, path in modules()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id in ("RESUME_MAY_CHANGE", "NOT_IDENTITY") for t in node.targets)
        for value in [node.value.args[0] if isinstance(node.value, ast.Call) and node.value.args else node.value]
        if isinstance(value, ast.Tuple | ast.List | ast.Set)
        and any(isinstance(e, ast.Constant) and e.value in names for e in value.elts)
    ]
    assert not lists, f"lists of settings by name: {lists}"
    assert {"output", "max_steps", "threads"} <= RESUME_MAY_CHANGE and "learning_rate" not in RESUME_MAY_CHANGE
    skipped = {f.name for f in dataclasses.fields(PipelineConfig) if f.metadata.get("identity") is False}
    assert {"output", "jobs", "seeds", "launcher"} <= skipped and "rl" not in skipped
