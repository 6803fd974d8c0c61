"""``run_pipeline``: the stages in order, each in its own folder of RUN, recorded in ``RUN/stages.json``.

A stage marked ``done`` is skipped on a rerun; one that was interrupted (``running``) or ``failed`` runs again
and resumes through its own API (rollouts, labels, classifier checkpoints, RL checkpoints and evaluations
all continue where they stopped). ``RUN/run.json`` holds the run's identity: a rerun with another preset
or option is refused in one line, before anything is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.shards import atomic_write_bytes
from darling.pipeline.commands import STAGES, StageCommands, write_commands, write_inputs
from darling.pipeline.config import PipelineConfig
from darling.pipeline.report import write_manifest, write_report

IDENTITY_FILE = "run.json"
STAGES_FILE = "stages.json"


def check_identity(config: PipelineConfig) -> None:
    """Record the run's identity on first use; refuse a rerun whose identity differs (names the first field)."""
    run = config.run
    path = run / IDENTITY_FILE
    current = json.loads(json.dumps(config.identity(), default=str))
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except ValueError:
            raise UserInputError(f"{path}: not valid JSON; use a new --output") from None
        for name in [*dict.fromkeys([*saved, *current])]:  # preset first, then the fields in order
            if saved.get(name) != current.get(name):
                raise UserInputError(
                    f"{run}: was made with {name}={saved.get(name)!r}, this run has {name}={current.get(name)!r}; "
                    "use a new --output to change the pipeline's preset or options"
                )
        return
    if run.exists() and any(p.name not in (IDENTITY_FILE,) for p in run.iterdir()):
        raise UserInputError(f"{run}: exists and is not a pipeline run folder (no {IDENTITY_FILE}); use a new --output")
    atomic_write_bytes(path, (json.dumps(current, indent=2) + "\n").encode())


class StageBook:
    """``stages.json``: per stage its status (running | done | failed), wall seconds, outputs and summary."""

    def __init__(self, run: Path):
        self.path = run / STAGES_FILE
        self.records: dict[str, dict[str, Any]] = (
            json.loads(self.path.read_text())["stages"] if self.path.exists() else {}
        )

    def save(self) -> None:
        data = {"stages": {name: self.records[name] for name in STAGES if name in self.records}}
        atomic_write_bytes(self.path, (json.dumps(data, indent=2, default=str) + "\n").encode())

    def done(self, name: str) -> bool:
        return self.records.get(name, {}).get("status") == "done"

    def start(self, name: str) -> None:
        previous = self.records.get(name, {})
        attempts = previous.get("attempts", 0) + 1
        self.records[name] = {"status": "running", "attempts": attempts, "started": _now()}
        self.save()

    def finish(self, name: str, status: str, seconds: float, **fields: Any) -> None:
        self.records[name].update(status=status, seconds=round(seconds, 1), finished=_now(), **fields)
        self.save()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _shell_stage(config: PipelineConfig, stage: StageCommands) -> Callable[[Any], dict[str, Any]]:
    """A paper stage: its commands.sh block, run by bash in RUN (each darling command resumes by itself)."""

    def run(_ctx: Any) -> dict[str, Any]:
        script = "\n".join(["set -euo pipefail", *stage.lines])  # $RUN comes from the environment
        result = subprocess.run(["bash", "-c", script], cwd=config.run, env={**os.environ, "RUN": str(config.run)})
        if result.returncode:
            from darling.pipeline.stages import StageFailed

            raise StageFailed(f"{stage.name}: a command exited with {result.returncode} (see commands.sh)")
        return {"commands": [line for line in stage.lines if not line.startswith("#")]}

    return run


def _write_only(
    config: PipelineConfig, commands: Path, result: dict[str, Any], argv: list[str] | None, log: Callable[[str], None]
) -> dict[str, Any]:
    """A dry run, or a GPU preset on a machine without CUDA: commands.sh and the manifest, no stage runs."""
    if config.dry_run:
        status = "dry-run"
        log(f"dry run: wrote {commands} (nothing was run)")
    else:
        status = "needs-gpu"
        log(
            f"the {config.preset} preset needs CUDA GPUs (torch.cuda.is_available() is False here): wrote "
            f"{commands} and ran nothing; run it on a GPU node (`bash {commands}`, or this command "
            "there)"
        )
    log(commands.read_text())
    records = StageBook(config.run).records  # stages an earlier run finished, if any
    result.update(status=status, stages=records, manifest=write_manifest(config, records, argv, status))
    return result


def _runners(config: PipelineConfig, stage_cmds: list[StageCommands]) -> dict[str, Callable[[Any], dict[str, Any]]]:
    """Stage name -> what runs it: the in-process APIs, or (GPU presets) the stage's commands.sh block."""
    if config.needs_gpu:
        return {s.name: _shell_stage(config, s) for s in stage_cmds}
    from darling.pipeline import policy_stages, stages

    return {**stages.RUNNERS, **policy_stages.RUNNERS}


def run_pipeline(
    config: PipelineConfig,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """Run (or, with ``dry_run`` / a GPU preset on a machine without CUDA, only write) the chain into
    ``config.output``. Returns ``{"status", "run", "commands", "stages", "report", "manifest"}``; status is
    ``done``, ``dry-run`` or ``needs-gpu``. ``argv`` (the CLI's) goes into the manifest."""
    log = log or (lambda line: print(line, flush=True))
    config.validate()
    check_identity(config)
    write_inputs(config)
    commands, stage_cmds = write_commands(config)
    result: dict[str, Any] = {"run": config.run, "commands": commands, "report": None}
    if config.dry_run or (config.needs_gpu and not _cuda_available()):
        return _write_only(config, commands, result, argv, log)
    from darling.pipeline import stages as impl

    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    book = StageBook(config.run)
    ctx = impl.Context(config, progress, log)
    for note in impl.plan_notes(config):  # what the chain does by design, said before it starts
        log(f"note: {note}")
    runners = _runners(config, stage_cmds)
    total = len(stage_cmds)
    for i, stage in enumerate(stage_cmds, 1):
        name = stage.name
        if book.done(name):
            log(f"[{i}/{total}] {name}: done earlier in {book.records[name]['seconds']:.1f} s, skipped")
            continue
        log(f"[{i}/{total}] {name} — {stage.describe()}")
        book.start(name)
        start = time.perf_counter()
        try:
            summary = runners[name](ctx)
        except BaseException as exc:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            book.finish(name, status, time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")
            write_report(config, book.records)
            log(
                f"[{i}/{total}] {name}: {status} after {time.perf_counter() - start:.1f} s; rerun the same "
                "command to resume"
            )
            raise
        seconds = time.perf_counter() - start
        book.finish(name, "done", seconds, outputs=[name], summary=summary)
        log(f"[{i}/{total}] {name}: done in {seconds:.1f} s")
    report = write_report(config, book.records)
    log("manifest: hashing every file under the run folder")
    manifest = write_manifest(config, book.records, argv, "done")
    total_seconds = sum(r.get("seconds") or 0 for r in book.records.values())
    log(f"pipeline done: {total_seconds:.1f} s of stages -> {report}")
    result.update(status="done", stages=book.records, report=report, manifest=manifest)
    return result
