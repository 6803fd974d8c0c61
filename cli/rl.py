"""``darling rl-train`` — a thin wrapper over ``darling.rl.train``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from darling.cli.common import err, out, user_errors

INTERACTIVE = sys.stderr.isatty()


@user_errors
def rl_train_cmd(
    output: Annotated[Path, typer.Option("--output", "-o", help="Checkpoints, logs, final policy.")],
    preset: Annotated[str, typer.Option(help="cpu (SmolLM2, 2 cores) or paper-math (Qwen3-4B-Base, GPUs).")] = "cpu",
    classifier: Annotated[Path | None, typer.Option(help="Exported equivalence classifier (train-classifier).")] = None,
    classifier_url: Annotated[
        list[str] | None, typer.Option(help="vLLM replica serving --classifier (repeatable); default: in-process.")
    ] = None,
    threshold: Annotated[
        float | None, typer.Option(help="Override the classifier's exported decision threshold.")
    ] = None,
    diversity: Annotated[
        str, typer.Option(help="on: DARLING reward; off: the GRPO baseline (quality only), same settings.")
    ] = "on",
    policy: Annotated[str | None, typer.Option(help="Policy model (path, hub name, or smollm2).")] = None,
    problems: Annotated[str | None, typer.Option(help="Training problems: file, hub dataset, or champ.")] = None,
    limit: Annotated[int | None, typer.Option(help="First N problems.")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Optimiser steps.")] = None,
    num_generations: Annotated[int | None, typer.Option("-n", "--num-generations", help="Rollouts per prompt.")] = None,
    max_completion_length: Annotated[int | None, typer.Option(help="Max new tokens per rollout.")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate.")] = None,
    reward_model: Annotated[
        Path | None,
        typer.Option(
            help="Quality from a reward model (HF sequence classifier, one output; sigmoid of its score) "
            "instead of math-verify correctness."
        ),
    ] = None,
    combine: Annotated[
        str | None, typer.Option(help="How quality and diversity make the reward: multiply (paper, Eq. 5) or add.")
    ] = None,
    norm: Annotated[
        str | None, typer.Option(help="Norm() of Eq. 5: identity (default) or minmax (rescaled within each group).")
    ] = None,
    correct_only: Annotated[bool, typer.Option(help="Partition only correct responses (math variant).")] = False,
    floor: Annotated[float, typer.Option(help="Lower bound on diversity (the reference's hidden 0.1); 0 = off.")] = 0.0,
    loss_type: Annotated[str | None, typer.Option(help="TRL loss: dr_grpo (default), grpo, dapo, bnpo.")] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue from the last checkpoint in OUTPUT (same settings; --max-steps may grow).")
    ] = False,
    threads: Annotated[int | None, typer.Option(help="torch CPU threads (cpu preset: 1).")] = None,
) -> None:
    """GRPO / DARLING training on TRL with the DARLING reward (quality x normalised diversity).

    Examples (CPU: SmolLM2-135M policy, built-in arithmetic problems, the classifier from `darling train-classifier`):

        darling rl-train --preset cpu --classifier runs/clf --output runs/rl

        darling rl-train --preset cpu --diversity off --output runs/rl-grpo        # the GRPO baseline

    Multi-GPU: `accelerate launch --config_file deepspeed_zero3.yaml -m darling rl-train --preset paper-math
    --classifier runs/qwen3-clf --classifier-url http://node1:8000 --output runs/rl` (see README).
    """
    from darling.core.errors import UserInputError
    from darling.rl.train import build_config, rl_train

    if diversity not in ("on", "off"):
        raise UserInputError(f"--diversity must be on or off, got {diversity!r}")
    config = build_config(
        preset, output=output, classifier=classifier, classifier_urls=classifier_url or None, reward_model=reward_model,
        classifier_threshold=threshold,
        diversity=diversity == "on", policy=policy, problems=problems, limit=limit, max_steps=max_steps,
        num_generations=num_generations, max_completion_length=max_completion_length, learning_rate=lr,
        correct_only=correct_only or None, floor=floor or None, loss_type=loss_type, threads=threads,
        combine=combine, norm=norm,
    )  # fmt: skip
    from darling.classifier import ClassifierServerError

    try:
        trainer = rl_train(config, resume=resume)
    except ClassifierServerError as exc:
        # No decision, no reward: stop loudly; checkpoints up to the last saved step are intact.
        err.print(f"[bold red]error:[/] the classifier server failed ({exc}); fix it and rerun with --resume",
                  highlight=False, soft_wrap=True)  # fmt: skip
        raise typer.Exit(code=1) from None
    logs = [h for h in trainer.state.log_history if "reward" in h]
    for h in logs:
        out.print(
            f"step {h.get('step')}: reward {h.get('reward', 0):.3f}  quality {h.get('darling/quality', 0):.3f}  "
            f"diversity {h.get('darling/diversity', 0):.3f}  "
            f"distinct/group {h.get('darling/distinct_per_group', 0):.2f}"
        )
    out.print(f"policy saved to {output}/final")


@user_errors
def serve_classifier_cmd(
    model: Annotated[Path, typer.Option("--model", help="An exported classifier directory (train-classifier).")],
    replicas: Annotated[int, typer.Option(help="Number of vLLM servers (one per GPU).")] = 1,
    port: Annotated[int, typer.Option(help="Port of the first replica; the others follow (0 = free ports).")] = 8000,
    host: Annotated[str, typer.Option(help="Bind address (127.0.0.1 unless you need remote access).")] = "127.0.0.1",
    gpus: Annotated[str | None, typer.Option(help="Comma-separated GPU ids, one per replica (e.g. 0,1,2,3).")] = None,
    cpu: Annotated[bool, typer.Option(help="vLLM's CPU build: fp32, eager, small KV cache.")] = False,
    python: Annotated[
        str | None, typer.Option(help="vLLM's Python (default: $DARLING_VLLM_PYTHON or the venv).")
    ] = None,
    check: Annotated[bool, typer.Option(help="Compare served vs in-process probabilities on sample pairs.")] = False,
    exit_after_check: Annotated[bool, typer.Option(help="Stop the servers after --check (scripts, CI).")] = False,
) -> None:
    """Serve an exported classifier with vLLM on N replicas (`--runner pooling --convert classify` for a
    cross-encoder export, `--convert embed` for a bi-encoder export).

    Examples:

        darling serve-classifier --model runs/clf --replicas 8 --gpus 0,1,2,3,4,5,6,7 --check

        darling serve-classifier --model runs/clf --cpu --port 0 --check --exit-after-check

    Then: `darling rl-train --classifier runs/clf --classifier-url http://127.0.0.1:8000 ...` (repeat per replica).
    Ctrl-C stops every replica.
    """
    import time

    from darling.classifier.serve import parity_check, sample_pairs, start_replicas, stop_all

    devices = gpus.split(",") if gpus else None
    servers = start_replicas(model, replicas, python, host, port, devices, cpu)
    try:
        for server in servers:
            out.print(f"serving {model} at {server.base_url}  (log: {server.log_path})")
        if check:
            report = parity_check(model, [s.base_url for s in servers], sample_pairs())
            verdict = "OK" if report.ok else "MISMATCH"
            out.print(f"parity {verdict}: {report.pairs} pairs, max |served - in-process| = {report.max_abs_diff:.2e}, "
                      f"decisions agree on {report.decisions_agree}/{report.pairs}")  # fmt: skip
            if not report.ok:
                raise typer.Exit(code=1)
        if exit_after_check:
            return
        out.print("Ctrl-C to stop")
        while all(s.process.poll() is None for s in servers):
            time.sleep(1.0)
        out.print("a replica exited; stopping the others")
        raise typer.Exit(code=1)
    except KeyboardInterrupt:
        pass
    finally:
        stop_all(servers)
