"""The equivalence classifier (``classifier/``): the training pairs (``training-pairs/``), then
``train-classifier`` (train, calibrate, export); or, with ``classifier_from = import``, ``import-classifier`` of one
trained elsewhere. Every later stage reads the export in ``classifier/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.classifier.config import ClassifierTrainConfig, TrainingPairsConfig
from darling.classifier.export import ClassifierExport
from darling.classifier.floor import FLOOR_SETTING, floor_line
from darling.classifier.import_classifier import ImportConfig
from darling.core.errors import UserInputError
from darling.core.numbers import fmt
from darling.pipeline.folders import CLASSIFIER_FOLDER, LABELS_FOLDER
from darling.pipeline.script import Block
from darling.pipeline.stage import Plan, Records, Stage, memoised, read_json
from darling.pipeline.steps import Step, named_in, shown, stage_config, threads

TRAINING_PAIRS = "training-pairs"  # RUN/training-pairs/: what train-classifier trains on
CHECKPOINT = "training/checkpoints/last.ckpt"  # under classifier/: what --resume continues from


@memoised
def training_pairs_step(plan: Plan) -> Step:
    c = plan.config
    wired: dict[str, Any] = {"output": c.run / TRAINING_PAIRS, "seed": c.seed}
    if c.rollouts_from != "none":  # the chat track has no judge labels: human pairs only
        wired["labels"] = c.run / LABELS_FOLDER
    config = stage_config(c, "training_pairs", TrainingPairsConfig, wired)
    return Step(TRAINING_PAIRS, ("datagen", "training-pairs"), config, explicit=shown(c, wired, "training_pairs"))


def process_count(devices: str) -> int:
    """Processes a Lightning ``devices`` setting asks for (``"8"`` -> 8; ``auto`` and lists: 1, Lightning's own)."""
    return int(devices) if devices.isdigit() else 1


@memoised
def classifier_step(plan: Plan) -> Step:
    c = plan.config
    preset = c.classifier.get("preset")
    wired = {"seed": c.seed, **threads(c, ClassifierTrainConfig, alone=True)}  # alone in its block
    if c.launcher == "slurm" and c.nodes > 1:  # torchrun once per node (pipeline/launch_slurm.py): Lightning must know
        wired["num_nodes"] = c.nodes
    config = stage_config(c, "classifier", ClassifierTrainConfig, wired)
    output = CLASSIFIER.folder(c.run)
    params = {"data": str(c.run / TRAINING_PAIRS / "pairs.jsonl"), "output": output}
    shell = {"resume": f'$( [ -f "$RUN/{CLASSIFIER.name}/{CHECKPOINT}" ] && echo --resume )'}
    processes = process_count(config.devices)
    launcher = ["torchrun", "--standalone", "--nproc-per-node", str(processes)] if processes > 1 else []
    explicit = shown(c, wired, "classifier")
    return Step("classifier", ("train-classifier",), config, params, preset, shell, launcher, explicit)


def import_step(plan: Plan) -> Step:
    """``import-classifier SOURCE``: a classifier trained elsewhere (a released one) as the chain's export."""
    c = plan.config
    config = stage_config(c, "import_classifier", ImportConfig)
    params = {"output": CLASSIFIER.folder(c.run)}
    source = str(c.import_classifier["source"])
    explicit = named_in(c, "import_classifier")
    return Step("import-classifier", ("import-classifier",), config, params, explicit=explicit, positional=(source,))


def classifier_block(plan: Plan) -> Block:
    c = plan.config
    if c.classifier_from == "import":
        step = import_step(plan)
        where = f"CPU, minutes: {c.import_classifier['source']} in the {step.config.format} format"
        return Block(CLASSIFIER.name, where, [step.line(c.run)], [step])
    data, train = training_pairs_step(plan), classifier_step(plan)
    cfg = train.config
    processes = f"{train.launcher[-1]} processes (torchrun)" if train.launcher else "one process"
    where = f"{cfg.backbone} ({cfg.kind}, {cfg.precision}, {cfg.strategy}), {processes} on {cfg.accelerator}"
    return Block(CLASSIFIER.name, where, [data.line(c.run), train.line(c.run)], [data, train])


# -- summary and section -------------------------------------------------------------------------------------------
def _imported_summary(plan: Plan) -> dict[str, Any]:
    meta = ClassifierExport(CLASSIFIER.folder(plan.run)).meta
    keys = ("imported", "kind", "backbone", "dtype", "max_tokens_per_response", "threshold")
    return {k: meta[k] for k in keys}


def classifier_summary(plan: Plan) -> dict[str, Any]:
    if plan.config.classifier_from == "import":
        return _imported_summary(plan)
    step = classifier_step(plan)
    config = step.config
    meta = ClassifierExport(step.params["output"]).meta
    data = read_json(Path(training_pairs_step(plan).config.output) / "summary.json")
    metrics = {k: v for k, v in meta["validation_metrics"].items() if isinstance(v, int | float)}
    return {
        "data": data,
        "preset": step.preset,
        "kind": meta["kind"],
        "backbone": meta["backbone"],
        "dtype": meta["dtype"],
        "schedule": meta.get("schedule"),
        "max_steps": config.max_steps,
        "max_tokens_per_response": meta["max_tokens_per_response"],
        "launcher": " ".join(step.launcher) or None,
        "validation": metrics,
        "validation_interval": meta["validation_metrics"].get("intervals_95", {}).get("roc_auc"),
        "content_rule": {k: meta.get("validation_content_rule", {}).get(k) for k in ("roc_auc", "intervals_95")},
        "floor": meta.get("floor"),
        "floor_from": floor_source(plan),
        "checks": meta.get("checks", {}),
    }


def floor_source(plan: Plan) -> str:
    """Where the chain's floor came from, for the report: the run's table, the classifier preset, or the default."""
    table = plan.config.classifier
    if FLOOR_SETTING in table:
        return f"`classifier.{FLOOR_SETTING}` of this run"
    preset = table.get("preset")
    if preset and FLOOR_SETTING in ClassifierTrainConfig.preset_values(preset):
        return f"the `{preset}` classifier preset"
    return "train-classifier's default"


def _imported_section(s: dict[str, Any]) -> list[str]:
    i = s["imported"]
    return [
        f"Imported `{i['source']}` in the `{i['format']}` format ({s['kind']}, {s['dtype']}, "
        f"{s['max_tokens_per_response']} tokens per response, threshold {s['threshold']}) to "
        "[`classifier/`](classifier/); not trained here, so no validation metrics (`darling eval classifier` "
        "measures it).",
        "",
    ]


def classifier_section(s: dict[str, Any]) -> list[str]:
    if "imported" in s:
        return _imported_section(s)
    d, v = s["data"], s["validation"]
    schedule = s.get("schedule") or {}
    launch = f", launched as `{s['launcher']}`" if s.get("launcher") else ""
    lines = [
        f"Preset `{s['preset']}` ({s['kind']}, `{s['backbone']}`, {s['dtype']}), {schedule.get('optimiser_steps')} "
        f"optimiser steps of {schedule.get('examples_per_optimiser_step')} examples over {schedule.get('world_size')} "
        f"process(es){launch}, {s['max_tokens_per_response']} tokens per response; trained, calibrated on its "
        "validation split and exported to [`classifier/`](classifier/).",
        "",
        f"- training data [`training-pairs/pairs.jsonl`](training-pairs/pairs.jsonl): {d['pairs']} pairs "
        f"({d['by_source']['judge']} from the judge, {d['by_source']['noveltybench']} NoveltyBench), "
        f"similar = 1: {d['balance']['1']}, similar = 0: {d['balance']['0']}",
    ]
    if d.get("by_design"):
        lines.append(f"- **by design:** {d['reason']}.")
    elif d["fallback"]:
        lines.append(f"- **fallback:** {d['reason']}.")
    lines += [
        "",
        "Validation split at the threshold it chose (optimistic: no held-out pairs at this scale):",
        "",
        "| validation | value |",
        "| --- | ---: |",
    ]
    keys = ("n", "accuracy", "balanced_accuracy", "f1", "roc_auc", "ece", "threshold", "positive_rate", "train_seconds")
    lines += [f"| {k} | {fmt(v.get(k), 1 if k == 'train_seconds' else 3)} |" for k in keys if k in v]
    if s.get("floor"):
        lines += ["", f"{floor_line(s['floor'])} (the floor: {s['floor_from']}; `darling.classifier.floor`)."]
    if s.get("checks"):
        lines += ["", "The packaged checks: pairs it never trained or chose anything on (`darling.classifier.checks`):"]
        from darling.classifier.checks import checks_markdown  # loads numpy and scikit-learn

        lines += ["", checks_markdown(s["checks"])]
    return [*lines, ""]


def classifier_lead(s: dict[str, Any]) -> list[str]:
    """Whether the classifier learnt its task, in one line: its validation AUC beside the content-word rule's, and
    the floor it was held to."""
    if not s.get("floor"):
        return []
    return [f"- **The classifier**: {floor_line(s['floor'])} (the floor: {s['floor_from']}).", ""]


def classifier_check(plan: Plan) -> None:
    c = plan.config
    if c.rollouts_from == "none" and c.classifier_from == "train" and c.training_pairs.get("source") != "human":
        raise UserInputError("rollouts_from=none trains on human pairs only: set [training_pairs] source = human")
    if c.classifier_from == "import" and not c.import_classifier.get("source"):
        raise UserInputError("classifier_from=import needs [import_classifier] source (a folder or hub name)")


def classifier_design_notes(plan: Plan) -> list[str]:
    """Where the classifier's pairs come from when that is by design, not a fallback."""
    config = plan.config
    if config.classifier_from == "import":
        return [
            f"the classifier is {config.import_classifier['source']}, imported, not trained: no training pairs are used"
        ]
    data = training_pairs_step(plan).config
    if config.rollouts_from == "none":
        return [
            f"the classifier trains on {data.human_pairs} of NoveltyBench's human-labelled pairs: the chat track has "
            "no rollouts or judge"
        ]
    if data.source == "human":
        judge = config.labels.get("judge_model", "the judge")
        return [
            f"the classifier trains on {data.human_pairs} of NoveltyBench's human-labelled pairs by design: "
            f"{judge} cannot tell solution strategies apart (as a judge it calls nearly every pair 'same strategy'); "
            "the judge stage still runs and its verdicts are reported, not trained on"
        ]
    return []


def human_pairs_file_read(plan: Plan, records: Records) -> list[dict[str, Any]]:
    """NoveltyBench's human-labelled pairs file, when the training pairs mixed some in."""
    data = (records.get(CLASSIFIER_FOLDER, {}).get("summary") or {}).get("data") or {}
    return [{"role": "noveltybench_pairs", "path": data["noveltybench_file"]}] if data.get("noveltybench_file") else []


CLASSIFIER = Stage(
    CLASSIFIER_FOLDER,
    "Equivalence classifier: train, calibrate, export",
    classifier_block,
    classifier_summary,
    classifier_section,
    placement="nodes",
    check=classifier_check,
    lead=classifier_lead,
    links=(
        ("validation metrics", "classifier/training/validation/metrics.json"),
        ("model card", "classifier/README.md"),
    ),
    tables=("training_pairs", "classifier", "import_classifier"),
    design_notes=classifier_design_notes,
    files_read=human_pairs_file_read,
)
