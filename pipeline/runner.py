"""``run_pipeline``: each stage's block of ``RUN/commands.sh``, run by bash in RUN as written, recorded in
``RUN/stages.json`` and summarised from the files its commands wrote.

Every preset runs the same way: the CPU chain and the GPU chain are both their commands, launched as the script
launches them. A stage marked ``done`` is skipped on a rerun; one that was interrupted (``running``) or ``failed``
runs again, and its commands resume by themselves (rollouts, labels, classifier and RL checkpoints, evaluations).
``RUN/run.json`` holds the run's identity: a rerun with another preset or setting is refused in one line, before
anything is written. A block's output goes to the console and to ``RUN/logs/<stage>.log``.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from darling.core.devices import cuda_available
from darling.core.errors import UserInputError
from darling.core.gpu_memory import GIB, LOG_ENV, STAGE_ENV
from darling.core.shards import atomic_write_bytes
from darling.evals.study import render_pooled
from darling.pipeline.config import PipelineConfig
from darling.pipeline.gpu_memory import HEADROOM, MEMORY_LOG, fit_side_by_side, stage_peaks
from darling.pipeline.launch_ray import write_ray_job
from darling.pipeline.launch_slurm import write_slurm
from darling.pipeline.report import write_manifest, write_report
from darling.pipeline.script import LOGS, PRELUDE, Block, write_commands, write_inputs, write_study_script
from darling.pipeline.seeds_report import write_seeds_report
from darling.pipeline.stage import Plan, read_json
from darling.pipeline.stages import STAGE, STAGE_NAMES, blocks, check_shared, input_files, plan_notes
from darling.pipeline.stages.compare import ARM_TABLE_METRICS, ARMS_TABLE, STUDY_SCRIPT, study_steps

STUDY_BLOCK = "study"  # RUN/logs/study.log: what RUN/study.sh printed

IDENTITY_FILE = "run.json"
STAGES_FILE = "stages.json"
SHARED_RUN = "shared"  # RUN/shared/: with --seeds and shared_stages, the stages run once for every seed
KEPT_APART = ("logs", "inputs")  # RUN/shared's folders a seed keeps its own of (not linked)


class StageFailed(RuntimeError):
    """A stage's command failed (or left failed items, e.g. judge calls); rerunning the pipeline resumes it."""


class StageRefused(UserInputError):
    """A stage's command refused its input or its result in one line and exit code 2 (a classifier below its floor):
    the pipeline exits 2 with that line; the rerun after the fix resumes the stage."""


REFUSED = 2  # a darling command's exit code for bad input (darling.cli.common.user_errors)
ERROR_PREFIX = "error: "  # how that command's one line starts


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
                    "use a new --output to change the pipeline's preset or settings"
                )
        return
    if run.exists() and any(p.name not in (IDENTITY_FILE,) for p in run.iterdir()):
        raise UserInputError(f"{run}: exists and is not a pipeline run folder (no {IDENTITY_FILE}); use a new --output")
    atomic_write_bytes(path, (json.dumps(current, indent=2) + "\n").encode())


class StageBook:
    """``stages.json``: per stage its status (running | done | failed | interrupted), attempts, wall seconds,
    the commands it ran and its summary."""

    def __init__(self, run: Path):
        self.path = run / STAGES_FILE
        self.records: dict[str, dict[str, Any]] = (
            json.loads(self.path.read_text())["stages"] if self.path.exists() else {}
        )

    def save(self) -> None:
        data = {"stages": {name: self.records[name] for name in STAGE_NAMES if name in self.records}}
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


def block_environment(config: PipelineConfig, stage: str) -> dict[str, str]:
    """The commands' environment: ``$RUN``, this interpreter's scripts first on the PATH (so ``darling``,
    ``torchrun`` and ``accelerate`` are this installation's), Python's output unbuffered (lines arrive as written),
    and where each command records its peak GPU memory (``darling.core.gpu_memory``), under its stage's name."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "RUN": str(config.run),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONUNBUFFERED": "1",
        LOG_ENV: str(config.run / LOGS / MEMORY_LOG),
        STAGE_ENV: stage,
    }


# The signals that stop a block. A child inherits its parent's signal mask: where something left one of them
# blocked in this process, the block's trap (and every command under it) would never see Ctrl-C.
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def restore_stop_signals() -> None:
    """In a block's bash, before it starts: Ctrl-C and SIGTERM delivered and at their default action, whatever this
    process had: a block started with SIGINT blocked (and ignored, as in a script's background job) runs on to its
    end and exits 0 on Ctrl-C instead of 130."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_DFL)


def stop_signals_altered() -> bool:
    """This thread blocks, or this process ignores, Ctrl-C or SIGTERM: only then does a block need
    ``restore_stop_signals`` (a preexec_fn runs Python in the forked child, best avoided beside other threads)."""
    ignored = any(signal.getsignal(stop) == signal.SIG_IGN for stop in STOP_SIGNALS)
    return ignored or bool(STOP_SIGNALS & signal.pthread_sigmask(signal.SIG_BLOCK, []))


def run_block(config: PipelineConfig, stage: Block, attempt: int, log: Callable[[str], None]) -> None:
    """Run the stage's block (after the script's prelude) with bash in RUN; its output goes to ``log`` and to
    ``RUN/logs/<stage>.log``. A non-zero exit is ``StageFailed``, naming the log; a command's refusal (exit 2 and its
    one ``error:`` line) is ``StageRefused`` with that line."""
    refusal = ""
    log_path = config.run / LOGS / f"{stage.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    script = "\n".join([*PRELUDE, *stage.lines])
    with log_path.open("ab") as sink:
        sink.write(f"== {stage.name}, attempt {attempt}, {_now()}\n".encode())
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=config.run,
            env=block_environment(config, stage.name),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=restore_stop_signals if stop_signals_altered() else None,
        )
        assert process.stdout is not None
        for raw in process.stdout:
            sink.write(raw)
            sink.flush()
            line = raw.decode(errors="replace").rstrip("\n")
            log("  " + line)
            if line.startswith(ERROR_PREFIX):
                refusal = line.removeprefix(ERROR_PREFIX)
        code = process.wait()
    if code == REFUSED and refusal:
        raise StageRefused(f"{stage.name}: {refusal} (then rerun the same command: the chain resumes here)")
    if code:
        raise StageFailed(
            f"{stage.name}: a command exited with {code}; see {log_path} (rerun the same command to resume)"
        )


def _write_only(
    plan: Plan, commands: Path, result: dict[str, Any], argv: list[str] | None, log: Callable[[str], None]
) -> dict[str, Any]:
    """A dry run, or a GPU chain on a machine without CUDA: commands.sh and the manifest, no stage runs."""
    config = plan.config
    if config.dry_run or config.launcher != "local":
        status = "dry-run"
        log(f"dry run: wrote {commands} (nothing was run)")
    else:
        status = "needs-gpu"
        log(
            f"the {config.preset} preset needs CUDA GPUs (torch.cuda.is_available() is False here): wrote "
            f"{commands} and ran nothing; run it on a GPU node (`bash {commands}`, or this command there)"
        )
    log(commands.read_text())
    records = StageBook(config.run).records  # stages an earlier run finished, if any
    result.update(status=status, stages=records, manifest=write_manifest(plan, records, argv, status))
    return result


def run_seeds(config: PipelineConfig, log: Callable[[str], None], argv: list[str] | None) -> dict[str, Any]:
    """``seeds``: the chain once per seed into ``RUN/seed-S`` (each its own run: its identity, stages, resumption),
    ``seed_jobs`` of them side by side, then ``eval study`` over their comparisons into ``RUN/study`` (and, with
    ``evaluate_training_prompts``, ``RUN/study-train``). A dry run (or a GPU chain without GPUs) writes every seed's
    commands.sh and no study. A seed that fails stops no other; the study waits for a rerun that completes them."""

    def one_seed(seed: int) -> dict[str, Any]:
        tag = f"[seed {seed}] " if config.seed_jobs > 1 else ""  # side by side: whose line is whose
        log(f"== seed {seed} ({config.seeds.index(seed) + 1}/{len(config.seeds)}) -> {config.run / f'seed-{seed}'}")
        one = replace(config, seed=seed, seeds=[], output=config.run / f"seed-{seed}")
        return run_pipeline(one, lambda line: log(tag + line), argv, shared=shared_run)

    steps = study_steps(config)
    config.run.mkdir(parents=True, exist_ok=True)
    # a dry run (or a GPU chain without GPUs) writes the shared run's commands.sh, then every seed's
    shared_run = run_shared(config, log, argv)["run"] if config.shared_stages else None
    script = write_study_script(config, STUDY_SCRIPT, steps)
    with ThreadPoolExecutor(max_workers=config.seed_jobs) as pool:  # each seed's stages are processes of their own
        futures = {seed: pool.submit(one_seed, seed) for seed in config.seeds}
    errors = {seed: f.exception() for seed, f in futures.items() if f.exception() is not None}
    if errors:
        seed, error = next(iter(errors.items()))
        others = f" (and seeds {', '.join(map(str, list(errors)[1:]))})" if len(errors) > 1 else ""
        log(f"seed {seed} failed{others}: rerun the same command to resume every seed where it stopped")
        raise error  # type: ignore[misc]
    results = {seed: f.result() for seed, f in futures.items()}
    statuses = {r["status"] for r in results.values()}
    if statuses != {"done"}:
        return {"status": statuses.pop(), "run": config.run, "seeds": results, "report": None}
    # The study runs as RUN/study.sh, as every stage runs as its block of commands.sh: rerunning it makes the same.
    start = time.perf_counter()
    run_block(config, Block(STUDY_BLOCK, "CPU, seconds", [f"bash {shlex.quote(str(script))}"], steps), 1, log)
    study_seconds = time.perf_counter() - start
    pooled = {step.name: read_json(Path(step.config.output) / "study.json") for step in steps}
    for step in steps:
        result = pooled[step.name]
        for metric, figures in result["metrics"].items():
            lo, hi = figures["pooled"]["interval"]
            log(f"{step.name}: {metric}: {result['pair']} = {figures['pooled']['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    if config.arms:  # one table of every pair, beside each pair's own study.md
        table = render_pooled(pooled, ARM_TABLE_METRICS)
        atomic_write_bytes(config.run / ARMS_TABLE, table.encode())
        log(f"every pair pooled: {config.run / ARMS_TABLE}")
    written = write_seeds_report(config, pooled, study_seconds)
    log(f"pipeline done: {written['seconds']:.1f} s of stages, every seed's -> {written['report']}")
    return {"status": "done", "run": config.run, "seeds": results, "report": written["report"], "manifest": None}


def run_shared(config: PipelineConfig, log: Callable[[str], None], argv: list[str] | None) -> dict[str, Any]:
    """``shared_stages``: the chain's first stages once, into ``RUN/shared`` with the chain's seed, before any seed's
    chain reads them (a dry run writes their commands.sh)."""
    whole = Plan(replace(config, seeds=[]))
    check_shared(whole)
    shared = replace(config, seeds=[], output=config.run / SHARED_RUN)
    log(f"== shared stages ({', '.join(config.shared_stages)}), once for every seed -> {shared.run}")
    return run_pipeline(shared, log, argv, only=tuple(config.shared_stages))


def link_shared(plan: Plan, book: StageBook) -> None:
    """A seed's chain reads the shared stages' output where it was made: each folder of ``RUN/shared`` (but its logs
    and inputs) linked into the seed's run, and each shared stage recorded as done there (``shared``: where it ran;
    its time is the shared run's, not the seed's)."""
    assert plan.shared is not None
    run = plan.run
    for entry in sorted(plan.shared.iterdir()):
        link = run / entry.name
        if entry.is_dir() and entry.name not in KEPT_APART and not (link.exists() or link.is_symlink()):
            link.symlink_to(os.path.relpath(entry, run))  # relative: RUN moves as one folder
    shared_records = StageBook(plan.shared).records
    where = os.path.relpath(plan.shared, run)
    for name in plan.config.shared_stages:
        record = shared_records[name]
        book.records[name] = {
            "status": "done",
            "shared": where,
            "shared_seconds": record.get("seconds"),
            "summary": record.get("summary"),
        }
    book.save()


def card_memory_gib() -> float | None:
    """The first CUDA device's memory in GiB, None without one (torch loads only where CUDA may be)."""
    if not cuda_available():
        return None
    import torch

    return torch.cuda.get_device_properties(0).total_memory / GIB


def fitted_to_card(config: PipelineConfig, log: Callable[[str], None]) -> PipelineConfig:
    """With ``gpu_memory_per_process``: ``jobs`` and ``seed_jobs`` cut so the GPU commands at once fit the card
    (``gpu_memory``, else the card found); unchanged without a card or when they fit."""
    per_process = config.gpu_memory_per_process
    card = config.gpu_memory or (card_memory_gib() if per_process else None)
    if not per_process or not card:
        return config
    jobs, seed_jobs = fit_side_by_side(card, per_process, config.jobs, config.seed_jobs)
    if (jobs, seed_jobs) == (config.jobs, config.seed_jobs):
        return config
    parallel = f"{seed_jobs} seed(s) x {jobs} command(s)" if config.seeds else f"{jobs} command(s)"
    log(
        f"note: a {card:.0f} GiB card holds {int(card * HEADROOM // per_process)} GPU commands of "
        f"~{per_process:g} GiB each: {parallel} at once (the preset asks {config.seed_jobs} x {config.jobs})"
    )
    return replace(config, jobs=jobs, seed_jobs=seed_jobs)


def run_stage(plan: Plan, stage: Block, book: StageBook, counter: str, log: Callable[[str], None]) -> None:
    """One stage's block, recorded in ``book`` (done, failed or interrupted, with its time); skipped when an
    earlier run finished it. A failure writes the report of what ran and propagates: a rerun resumes there."""
    name = stage.name
    if book.done(name):
        record = book.records[name]
        when = (
            f"shared: ran once for every seed in {record['shared']}"
            if record.get("shared")
            else (f"done earlier in {record['seconds']:.1f} s")
        )
        log(f"{counter} {name}: {when}, skipped")
        return
    log(f"{counter} {name} — {stage.describe()}")
    book.start(name)
    start = time.perf_counter()
    try:
        run_block(plan.config, stage, book.records[name]["attempts"], log)
        summary = STAGE[name].summary(plan)
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        book.finish(name, status, time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")
        write_report(plan, book.records)
        log(f"{counter} {name}: {status} after {time.perf_counter() - start:.1f} s; rerun the same command to resume")
        raise
    seconds = time.perf_counter() - start
    ran = [line for line in stage.lines if not line.startswith("#")]
    peaks = stage_peaks(plan.run / LOGS / MEMORY_LOG, name, plan.run)  # none on a CPU
    book.finish(name, "done", seconds, commands=ran, summary=summary, **({"gpu_memory": peaks} if peaks else {}))
    log(f"{counter} {name}: done in {seconds:.1f} s")


def run_pipeline(
    config: PipelineConfig,
    log: Callable[[str], None] | None = None,
    argv: list[str] | None = None,
    *,
    only: tuple[str, ...] | None = None,
    shared: Path | None = None,
) -> dict[str, Any]:
    """Run (or, with ``dry_run`` / a CUDA preset on a machine without CUDA, only write) the chain into
    ``config.output``. Returns ``{"status", "run", "commands", "stages", "report", "manifest"}``; status is
    ``done``, ``dry-run`` or ``needs-gpu``. ``argv`` (the CLI's) goes into the manifest. With ``seeds``: the chain
    once per seed, then the study (``run_seeds``); ``only`` and ``shared`` are a study's (``Plan``)."""
    log = log or (lambda line: print(line, flush=True))
    config = fitted_to_card(config, log)
    if config.seeds:
        return run_seeds(config, log, argv)
    plan = Plan(config, only, shared)
    stages = blocks(plan)  # builds, and so checks, every command's settings before anything is written
    check_identity(config)
    write_inputs(input_files(plan))
    commands = write_commands(config, stages)
    result: dict[str, Any] = {"run": config.run, "commands": commands, "report": None}
    if config.launcher == "slurm":
        jobs = write_slurm(config, stages)
        log(f"slurm: wrote {len(jobs) - 1} jobs; submit them with `bash {jobs[-1]}` (nothing was run here)")
        result["slurm"] = jobs
    if config.launcher == "ray":
        job = write_ray_job(config)
        log(f"ray: wrote {job}; submit the chain to your cluster with `bash {job}` (nothing was run here)")
        result["ray"] = job
    if config.dry_run or config.launcher != "local" or (config.requires_cuda and not cuda_available()):
        return _write_only(plan, commands, result, argv, log)
    book = StageBook(config.run)
    if shared is not None:
        link_shared(plan, book)
    for note in plan_notes(plan):  # what the chain does by design, said before it starts
        log(f"note: {note}")
    for i, stage in enumerate(stages, 1):
        run_stage(plan, stage, book, f"[{i}/{len(stages)}]", log)
    report = write_report(plan, book.records)
    log("manifest: hashing every file under the run folder")
    manifest = write_manifest(plan, book.records, argv, "done")
    total_seconds = sum(r.get("seconds") or 0 for r in book.records.values())  # a shared stage's is the shared run's
    log(f"pipeline done: {total_seconds:.1f} s of stages -> {report}")
    result.update(status="done", stages=book.records, report=report, manifest=manifest)
    return result
