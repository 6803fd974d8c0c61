"""``darling serve-classifier`` and ``darling serve-reward-model``: vLLM replicas of an exported classifier or of a
reward model, for ``rl-train`` and ``eval novelty``. Their flags are the fields of ``ServeConfig`` and
``RewardServeConfig`` (cli/options.py); both serve the same way (``serve_replicas``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import typer

from darling.classifier.config import ServeConfig
from darling.classifier.export import ClassifierExport
from darling.cli.common import err, out
from darling.cli.options import config_command
from darling.core.replica_config import ReplicaConfig
from darling.rl.serve_config import RewardServeConfig

if TYPE_CHECKING:
    import subprocess

    from darling.core.vllm_server import VLLMServer

SERVE_DOC = """Serve an exported classifier with vLLM on N replicas (`--runner pooling --convert classify` for a
cross-encoder export, `--convert embed` for a bi-encoder export), in the dtype the export records.

Examples:

    darling serve-classifier --model runs/clf --replicas 8 \\
        --devices 0,1,2,3,4,5,6,7 --check

    darling serve-classifier --model runs/clf --devices cpu --port 0 \\
        --check --exit-after-check

    darling serve-classifier --model runs/clf --replicas 2 --devices 6,7 \\
        --port 8100 --ready-file runs/ready.json &

Then: `darling rl-train --classifier runs/clf --classifier-url http://127.0.0.1:8000 ...` (repeat per replica).
vLLM comes from $DARLING_VLLM_PYTHON, else this environment, else the CPU build .ci/setup.sh makes (--python to
choose). Ctrl-C or SIGTERM stops every replica.
"""


def serve_classifier(config: ServeConfig) -> None:
    from darling.classifier import serve_classifier as serving  # loads polars, httpx, numpy when run

    export = ClassifierExport(config.model)  # read once: the replicas' settings, then both scorers of the check

    def check(servers: list[VLLMServer]) -> bool:
        report = serving.parity_check(export, [s.base_url for s in servers], serving.sample_pairs())
        out.print(
            f"parity {'OK' if report.ok else 'MISMATCH'}: {report.pairs} pairs, max |served - in-process| = "
            f"{report.max_abs_diff:.2e} (tolerance {report.tolerance:g} in {servers[0].dtype}), decisions agree on "
            f"{report.decisions_agree}/{report.pairs}"
            + (
                f" ({report.near_threshold} others within the tolerance of the threshold)"
                if report.near_threshold
                else ""
            )
        )
        return report.ok

    serve_replicas(config, lambda: serving.start_replicas(config, export), check)


REWARD_SERVE_DOC = """Serve a reward model (a sequence classifier with one output) with vLLM on N replicas (`--runner
pooling --convert classify`), for `rl-train --reward-model-url` and `eval novelty --reward-model-url`.

Examples:

    darling serve-reward-model --model runs/rm --replicas 2 --devices 6,7 \\
        --port 8200 --ready-file runs/rm-ready.json &

    darling serve-reward-model --model tiny:reward --devices cpu --port 0 \\
        --check --exit-after-check

Then: `darling rl-train --reward-model M --reward-model-url http://127.0.0.1:8200 ...` (repeat per replica; the
same M: its tokenizer and chat template make the token ids sent). --check compares the served raw scores with the
model's in this process on NoveltyBench (prompt, response) pairs. vLLM comes from $DARLING_VLLM_PYTHON, else this
environment, else the CPU build .ci/setup.sh makes (--python to choose). Ctrl-C or SIGTERM stops every replica.
"""


def serve_reward_model(config: RewardServeConfig) -> None:
    from darling.core.reward_model import RewardServerError  # loads httpx, numpy when run
    from darling.rl import serve_reward_model as serving  # loads polars, httpx, numpy when run

    def check(servers: list[VLLMServer]) -> bool:
        dtype, urls = servers[0].dtype, [s.base_url for s in servers]
        try:
            report = serving.reward_parity_check(str(servers[0].model_dir), urls, dtype, *serving.sample_reward_pairs())
        except RewardServerError as exc:  # e.g. --max-model-len below what the clients send
            err.print(f"[bold red]error:[/] the check got no score ({exc})", highlight=False, soft_wrap=True)
            return False
        low, high = report.score_range
        out.print(
            f"parity {'OK' if report.ok else 'MISMATCH'}: {report.pairs} pairs, max |served - in-process| = "
            f"{report.max_abs_diff:.2e} raw score, {report.max_rel_diff:.2e} of max(1, |score|) (tolerance "
            f"{report.tolerance:g} in {dtype}); in-process scores {low:.3g} to {high:.3g}"
        )
        return report.ok

    serve_replicas(config, lambda: serving.start_reward_replicas(config), check)


def serve_replicas(
    config: ReplicaConfig,
    start: Callable[[], list[VLLMServer]],
    check: Callable[[list[VLLMServer]], bool],
) -> None:
    """What every serve-* command does with its replicas: start them, print where they are, run ``check`` with
    --check (exit 1 unless it passes), write the ready file, then serve until Ctrl-C, SIGTERM or a replica's exit
    (exit 1), stopping all of them on the way out."""
    import time

    from darling.core.replicas import stop_all, stop_on_sigterm, write_ready_file  # loads polars, httpx when run

    stop_on_sigterm()
    servers = start()
    try:
        for server in servers:
            out.print(f"serving {config.model} at {server.base_url}  (log: {server.log_path})")
        if config.check and not check(servers):
            raise typer.Exit(code=1)
        if config.ready_file is not None:
            write_ready_file(config.ready_file, servers)
        if config.exit_after_check:
            return
        out.print("Ctrl-C (or SIGTERM) to stop")
        # ``start`` hands the servers back started: each has its process.
        while all(cast("subprocess.Popen", s.process).poll() is None for s in servers):
            time.sleep(1.0)
        out.print("a replica exited; stopping the others")
        raise typer.Exit(code=1)
    except KeyboardInterrupt:
        pass
    finally:
        stop_all(servers)


serve_classifier_cmd = config_command(ServeConfig, serve_classifier, doc=SERVE_DOC)
serve_reward_model_cmd = config_command(RewardServeConfig, serve_reward_model, doc=REWARD_SERVE_DOC)
