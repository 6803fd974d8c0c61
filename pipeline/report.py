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

from darling.core.devices import cuda_available
from darling.core.numbers import MISSING, fmt
from darling.core.shards import atomic_write_bytes
from darling.datagen.problems import GENERATED_SETS, packaged_problem_file
from darling.pipeline.config import to_json
from darling.pipeline.gpu_memory import peaks_line
from darling.pipeline.script import COMMANDS_FILE
from darling.pipeline.stage import Plan, Stage
from darling.pipeline.stages import active_stages, input_files

REPORT_FILE = "report.md"
MANIFEST_FILE = "manifest.json"
VERSIONED = ("darling", "torch", "transformers", "trl", "lightning", "vllm", "math-verify", "polars")


def _header(stage: Stage, number: int, record: dict[str, Any]) -> list[str]:
    seconds = record.get("seconds")
    status = record.get("status", "not run")
    timing = f"{seconds:.1f} s" if isinstance(seconds, int | float) else MISSING
    linked = " · ".join(f"[{text}]({href})" for text, href in stage.links)
    name = stage.name
    memory = peaks_line(record.get("gpu_memory") or {})
    return [
        f"## {number}. {stage.title}",
        "",
        f"Folder [`{name}/`]({name}/) · status **{status}** · wall time **{timing}**"
        + (f" · {linked}" if linked else ""),
        "",
        *([memory, ""] if memory else []),
    ]


def render_report(plan: Plan, records: dict[str, dict[str, Any]]) -> str:
    config = plan.config
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

    active = active_stages(plan)  # the chain's stages (the chat track has no rollouts, labels or pass@k)
    for stage in active:
        r = records.get(stage.name, {})
        lines.append(f"| {stage.name} | {r.get('status', 'not run')} | {fmt(r.get('seconds'), 1)} |")
    lines += [f"| **total** | | **{total:.1f}** |", ""]
    if config.about:
        lines += [config.about, ""]
    lines += lead_lines(active, records)
    lines += [
        "Every stage ran as its `darling` commands, launched as `commands.sh` launches them; each stage's output is "
        "in [`logs/`](logs/).",
        "",
    ]
    for number, stage in enumerate(active, 1):  # numbered within this chain's stages
        r = records.get(stage.name, {})
        lines += _header(stage, number, r)
        summary = r.get("summary") or {}
        if r.get("status") == "done" and summary:
            lines += stage.render(summary, records)
        elif r.get("error"):
            lines += [f"Error: `{r['error']}`", ""]
    return "\n".join(lines)


def lead_lines(active: list[Stage], records: dict[str, dict[str, Any]]) -> list[str]:
    """The report's opening: what each finished stage's ``lead`` says of its figures, in chain order."""
    found = [
        line
        for stage in active
        if records.get(stage.name, {}).get("status") == "done" and records[stage.name].get("summary")
        for line in stage.lead(records[stage.name]["summary"])
    ]
    return ["## What this run shows", "", *found] if found else []


def write_report(plan: Plan, records: dict[str, dict[str, Any]]) -> Path:
    path = plan.run / REPORT_FILE
    atomic_write_bytes(path, render_report(plan, records).encode())
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


def used_inputs(plan: Plan, records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Files the run read: the pipeline's own inputs/, what each stage read from outside RUN (``Stage.files_read``:
    CHAMP's dataset file, NoveltyBench's built-in pairs when mixed in), packaged problem sets (aime24, ...);
    built-ins generated in code and hub datasets are listed by name only."""
    found: list[dict[str, Any]] = []
    for path in input_files(plan):
        found.append({"role": "input", "path": str(path)})
    found += [entry for stage in active_stages(plan) for entry in stage.files_read(plan, records)]
    specs = [spec for stage in active_stages(plan) for spec in stage.problems(plan)]
    for spec in dict.fromkeys(specs):
        path = Path(spec)
        if (packaged := packaged_problem_file(spec)) is not None:  # aime24, gsm8k, ...: a file inside darling
            found.append({"role": "problems", "name": spec, "path": str(packaged), "note": "packaged with darling"})
        elif path.is_file():
            found.append({"role": "problems", "path": str(path.resolve())})
        elif path.is_dir():  # Parquet shards or a save_to_disk folder: every file in it
            found += [{"role": "problems", "path": str(f.resolve())} for f in sorted(path.rglob("*")) if f.is_file()]
        else:
            builtin = spec in GENERATED_SETS
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


def write_manifest(plan: Plan, records: dict[str, dict[str, Any]], argv: list[str] | None, status: str) -> Path:
    import shlex

    config = plan.config
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
        "cuda_available": cuda_available(),
        "stages": {name: {k: r.get(k) for k in ("status", "seconds")} for name, r in records.items()},
        "inputs": used_inputs(plan, records),
        "outputs": output_files(config.run),
    }
    path = config.run / MANIFEST_FILE
    atomic_write_bytes(path, (json.dumps(manifest, indent=2) + "\n").encode())
    return path
