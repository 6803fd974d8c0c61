"""``RUN/report.md`` (the stages tied together, from ``stages.json`` alone) and ``RUN/manifest.json``
(command line, resolved config, versions, platform, SHA-256 of every input and output file)."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from darling.core.shards import atomic_write_bytes
from darling.datagen.champ import champ_path
from darling.datagen.problems import packaged_problem_file
from darling.pipeline.commands_sh import COMMANDS_FILE, input_files, stage_names
from darling.pipeline.config import PipelineConfig, to_json
from darling.pipeline.report_policies import (
    compare_section,
    eval_math_section,
    eval_novelty_section,
    fmt,
    policy_note,
    rl_section,
)
from darling.pipeline.stage_commands import eval_math_steps

REPORT_FILE = "report.md"
MANIFEST_FILE = "manifest.json"
VERSIONED = ("darling", "torch", "transformers", "trl", "lightning", "vllm", "math-verify", "polars")


def _header(name: str, record: dict[str, Any], title: str, links: list[tuple[str, str]]) -> list[str]:
    seconds = record.get("seconds")
    status = record.get("status", "not run")
    timing = f"{seconds:.1f} s" if isinstance(seconds, int | float) else "–"
    linked = " · ".join(f"[{text}]({href})" for text, href in links)
    return [
        f"## {title}",
        "",
        f"Folder [`{name}/`]({name}/) · status **{status}** · wall time **{timing}**"
        + (f" · {linked}" if linked else ""),
        "",
    ]


def _datagen(s: dict[str, Any]) -> list[str]:
    return [
        f"{s['mode']}.",
        "",
        f"- rollouts: **{s['rollouts']}** responses to {s['problems']} problems from {len(s['models'])} models "
        f"({', '.join(s['models'])}); failed: {s.get('failed', 0)}",
        f"- with a final answer: {s['with_final_answer']}; correct (math-verify): {s['correct']}",
        "",
    ]


def _pairs(s: dict[str, Any]) -> list[str]:
    lines = [
        f"Same-answer pairs (math-verify), identical texts dropped, at most {s['max_pairs_per_problem']} per "
        f"problem{', two different models each' if s['cross_model_only'] else ''}.",
        "",
        f"- pairs: **{s['pairs']}** from {s['problems_with_pairs']} problems ({s['responses_used']} responses, "
        f"{s['duplicates_dropped']} duplicates dropped)",
        "",
    ]
    if s["per_model_pair"]:
        rows = [f"| {k} | {v} |" for k, v in s["per_model_pair"].items()]
        lines += ["| models | pairs |", "| --- | ---: |", *rows, ""]
    return lines


def _labels(s: dict[str, Any]) -> list[str]:
    c, b = s["counts"], s["label_balance"]
    orders = "both orders; a pair is labelled only when both orders agree" if s["both_orders"] else "one order"
    prompt = Path(s["prompt"]).name if s["prompt"] != "default" else "datagen's default"
    return [
        f"Judge `{s['judge']}` ({s['engine']} engine, structured `{s['structured']}`, prompt {prompt}), "
        f"{orders} ({s['judge_calls']} judge calls).",
        "",
        "| verdict | pairs |",
        "| --- | ---: |",
        *[f"| {k} | {v} |" for k, v in c.items()],
        f"| → similar = 1 (same strategy) | {b.get('1', 0)} |",
        f"| → similar = 0 (different) | {b.get('0', 0)} |",
        "",
        "Records (raw judge outputs, verdicts, prompt SHA-256): [`labels/records/`](labels/records/); "
        "labels: [`labels/labelled.parquet`](labels/labelled.parquet).",
        "",
    ]


def _imported_classifier(s: dict[str, Any]) -> list[str]:
    i = s["imported"]
    return [
        f"Imported `{i['source']}` in the `{i['format']}` format ({s['kind']}, {s['dtype']}, "
        f"{s['max_tokens_per_response']} tokens per response, threshold {s['threshold']}) to "
        "[`classifier/`](classifier/); not trained here, so no validation metrics (`darling eval classifier` "
        "measures it).",
        "",
    ]


def _creative(s: dict[str, Any]) -> list[str]:
    lines = [
        f"EQ-Bench creative writing v3 rubric, judge `{s['judge_model']}`: {s['prompts']} prompts x {s['iterations']} "
        "iteration(s); score = mean criterion score x 5 (0-100), bootstrap 95% interval over prompts. Details in "
        "[`eval-creative/report.md`](eval-creative/report.md).",
        "",
        "| policy | score | 95% interval | pieces judged |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, m in s["models"].items():
        low, high = m.get("interval") or (None, None)
        lines.append(f"| {name} | {fmt(m.get('score'), 2)} | [{fmt(low, 2)}, {fmt(high, 2)}] | {m.get('judged')} |")
    return [*lines, ""]


def _classifier(s: dict[str, Any]) -> list[str]:
    if "imported" in s:
        return _imported_classifier(s)
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
    return [*lines, ""]


SECTIONS = {
    "datagen": ("1. Data generation: rollouts", _datagen, []),
    "pairs": ("2. Same-answer pairs", _pairs, [("summary.json", "pairs/summary.json")]),
    "labels": ("3. Judge labels", _labels, []),
    "classifier": (
        "4. Equivalence classifier: train, calibrate, export",
        _classifier,
        [("validation metrics", "classifier/training/validation/metrics.json"), ("model card", "classifier/README.md")],
    ),
    "rl": ("5. RL: DARLING, and the GRPO baseline beside it", rl_section, []),
    "eval-math": ("6. Math before/after RL: pass@k", eval_math_section, []),
    "eval-novelty": ("7. Novelty (NoveltyBench-style distinct / utility)", eval_novelty_section, []),
    "eval-creative": ("8. Creative writing (EQ-Bench v3 rubric)", _creative, []),
    "compare": ("9. DARLING against GRPO and the base policy", compare_section, []),
}


def render_report(config: PipelineConfig, records: dict[str, dict[str, Any]]) -> str:
    total = sum(r.get("seconds") or 0 for r in records.values())
    lines = [
        f"# DARLING pipeline: preset `{config.preset}`",
        "",
        f"Run folder `{config.run}`. Commands: [`{COMMANDS_FILE}`]({COMMANDS_FILE}); provenance (config, "
        f"versions, SHA-256 of every file): [`{MANIFEST_FILE}`]({MANIFEST_FILE}); stage records: "
        "[`stages.json`](stages.json).",
        "",
        "| stage | status | wall time (s) |",
        "| --- | --- | ---: |",
    ]

    active = stage_names(config)  # the chain's stages (the chat track has no rollouts, labels or pass@k)
    for name in active:
        r = records.get(name, {})
        lines.append(f"| {name} | {r.get('status', 'not run')} | {fmt(r.get('seconds'), 1)} |")
    lines += [f"| **total** | | **{total:.1f}** |", ""]
    if config.about:
        lines += [config.about, ""]
    lines += [
        "Every stage ran as its `darling` commands, launched as `commands.sh` launches them; each stage's output is "
        "in [`logs/`](logs/).",
        "",
    ]
    for name, (title, render, links) in SECTIONS.items():
        if name not in active:
            continue
        r = records.get(name, {})
        title = f"{active.index(name) + 1}. {title.split('. ', 1)[1]}"  # numbered within this chain's stages
        lines += _header(name, r, title, links)
        summary = r.get("summary") or {}
        if r.get("status") == "done" and summary:
            lines += render(summary)
            if name == "eval-math":
                lines += policy_note(records)
        elif r.get("error"):
            lines += [f"Error: `{r['error']}`", ""]
    return "\n".join(lines)


def write_report(config: PipelineConfig, records: dict[str, dict[str, Any]]) -> Path:
    path = config.run / REPORT_FILE
    atomic_write_bytes(path, render_report(config, records).encode())
    return path


# -- manifest ------------------------------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()  # streamed in chunks


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    return {name: _version(name) for name in VERSIONED}


def used_inputs(config: PipelineConfig, records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Files the run read: the pipeline's own inputs/, CHAMP's dataset file, NoveltyBench's built-in pairs
    (when mixed in), packaged problem sets (aime24, ...); built-ins generated in code and hub datasets are
    listed by name only."""
    found: list[dict[str, Any]] = []
    for path in input_files(config):
        found.append({"role": "input", "path": str(path)})
    if config.rollouts_from == "champ":
        try:
            found.append({"role": "champ_dataset", "path": str(champ_path())})
        except Exception:  # the package is absent: nothing was imported from it either
            found.append({"role": "champ_dataset", "path": None, "note": "champ-dataset package not installed"})
    data = (records.get("classifier", {}).get("summary") or {}).get("data") or {}
    if data.get("noveltybench_file"):
        found.append({"role": "noveltybench_pairs", "path": data["noveltybench_file"]})
    problems = eval_math_steps(config)[0].config.problems if config.evaluate_math else []
    specs = [*problems, *([str(config.datagen.get("problems"))] if config.rollouts_from == "generate" else [])]
    for spec in dict.fromkeys(specs):
        path = Path(spec)
        if (packaged := packaged_problem_file(spec)) is not None:  # aime24, gsm8k, ...: a file inside darling
            found.append({"role": "problems", "name": spec, "path": str(packaged), "note": "packaged with darling"})
        elif path.is_file():
            found.append({"role": "problems", "path": str(path.resolve())})
        elif path.is_dir():  # Parquet shards or a save_to_disk folder: every file in it
            found += [{"role": "problems", "path": str(f.resolve())} for f in sorted(path.rglob("*")) if f.is_file()]
        else:
            builtin = spec in ("arithmetic", "champ")
            note = "built in (generated in code, seeded)" if builtin else "hub dataset (by name, from the local cache)"
            found.append({"role": "problems", "name": spec, "note": note})
    for entry in found:
        file = entry.get("path")
        if file and Path(file).is_file():
            entry.update(bytes=Path(file).stat().st_size, sha256=sha256_file(Path(file)))
    return found


def output_files(run: Path) -> list[dict[str, Any]]:
    """Every file under RUN but manifest.json itself (and temporaries), with its size and SHA-256."""
    files = []
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        rel = path.relative_to(run).as_posix()
        if rel == MANIFEST_FILE or path.name.endswith(".tmp"):
            continue
        files.append({"path": rel, "bytes": path.stat().st_size, "sha256": sha256_file(path)})
    return files


def write_manifest(
    config: PipelineConfig, records: dict[str, dict[str, Any]], argv: list[str] | None, status: str
) -> Path:
    import shlex

    try:
        import torch

        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = None
    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "status": status,
        "command_line": "darling " + shlex.join(argv[1:]) if argv else None,
        "argv": argv,
        "python_api": argv is None,
        "config": to_json(config),
        "identity": config.identity(),
        "versions": package_versions(),
        "python": sys.version,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cuda_available": cuda,
        "stages": {name: {k: r.get(k) for k in ("status", "seconds")} for name, r in records.items()},
        "inputs": used_inputs(config, records),
        "outputs": output_files(config.run),
    }
    path = config.run / MANIFEST_FILE
    atomic_write_bytes(path, (json.dumps(manifest, indent=2) + "\n").encode())
    return path
