"""The chain's policies, which every room that trains, evaluates or compares them shares: where the RL runs start
(the warm-up's policy), the runs that train them (DARLING, GRPO, the other arms) with the classifier they score with,
and the name -> model every evaluation compares. The rooms build on this module, never on one another."""

from __future__ import annotations

from typing import Any

from darling.classifier.config import ServeConfig
from darling.pipeline.folders import (
    BASE_POLICY,
    CLASSIFIER_FOLDER,
    DARLING_POLICY,
    GRPO_POLICY,
    GRPO_RUN,
    RL_FOLDER,
    WARMUP_FOLDER,
    arm_folder,
    arm_policy,
)
from darling.pipeline.rl_runs import rl_run
from darling.pipeline.stage import Plan, memoised
from darling.pipeline.steps import Step, shown, stage_config, table_values
from darling.rl.config import RLTrainConfig
from darling.rl.methods import CHECKER, DARLING, GRPO, METHODS, arm_settings

SERVERS_FILE = "classifier-servers.json"  # serve-classifier's ready file, in rl/


# -- where the runs start ------------------------------------------------------------------------------------------
def start_policy(plan: Plan) -> str:
    """The policy every RL run starts from: the warm-up's (``rl-warmup/final``), else ``[rl]``'s own."""
    if plan.config.rl_warmup:
        return str(plan.run / WARMUP_FOLDER / "final")
    return rl_settings(plan).policy


@memoised
def rl_settings(plan: Plan) -> RLTrainConfig:
    """``[rl]`` as its runs read it (its preset, then its entries): their prompts, template and sampling."""
    c = plan.config
    # read for its prompts, template and sampling only: as GRPO, which needs no classifier
    return stage_config(c, "rl", RLTrainConfig, {"output": plan.run / RL_FOLDER, "method": GRPO.name})


def start(plan: Plan) -> dict[str, Any]:
    """Where every run starts: the warm-up's policy when there is one (else [rl]'s own, no setting)."""
    return {"policy": start_policy(plan)} if plan.config.rl_warmup else {}


# -- the classifier the runs score with ----------------------------------------------------------------------------
@memoised
def serve_step(plan: Plan) -> Step:
    return _serve_step(plan)


def _serve_step(plan: Plan) -> Step:
    c = plan.config
    wired = {"model": c.run / CLASSIFIER_FOLDER, "ready_file": c.run / RL_FOLDER / SERVERS_FILE}
    config = stage_config(c, "serve", ServeConfig, wired)
    return Step("serve-classifier", ("serve-classifier",), config, explicit=shown(c, wired, "serve"))


def classifier_urls(plan: Plan) -> list[str]:
    serve = serve_step(plan).config
    return [f"http://{serve.host}:{serve.port + k}" for k in range(serve.replicas)]


def served(plan: Plan) -> dict[str, Any]:
    """The classifier every run after the classifier stage scores with (GRPO's only to measure distinct per group):
    the export, and its replicas with ``serve_classifier``."""
    c = plan.config
    urls = {"classifier_urls": classifier_urls(plan)} if c.serve_classifier else {}
    return {"classifier": c.run / CLASSIFIER_FOLDER, **urls}


# -- the runs ------------------------------------------------------------------------------------------------------
@memoised
def rl_step(plan: Plan, grpo: bool = False) -> Step:
    """DARLING (``rl/``), or with ``grpo`` its GRPO baseline (``rl-grpo/``): the same settings and seeds, quality
    only, plus what ``[rl_grpo]`` changes; the classifier then only measures distinct per group for the logs. With a
    warm-up, both start from its policy."""
    c = plan.config
    own = {**(table_values(c, "rl_grpo") if grpo else {}), **start(plan)}
    folder, method = (GRPO_RUN, GRPO.name) if grpo else (RL_FOLDER, DARLING.name)
    tables = ("rl", "rl_grpo") if grpo else ("rl",)
    return rl_run(plan, folder, method, own, c.threads, tables, wired_more=served(plan))


@memoised
def arm_step(plan: Plan, method: str) -> Step:
    """Another arm (``rl-<method>/``): ``[rl]`` plus what ``[rl_arms]`` sets that this arm reads (an arm's own
    settings reach that arm only), from the same start as DARLING and GRPO, with the same seeds."""
    c = plan.config
    own = arm_settings(method, table_values(c, "rl_arms"))
    folder = arm_folder(method)
    settings = {**own, **start(plan)}
    checker = {"checker": c.checker} if METHODS[method].partition == CHECKER else {}  # the task's, chain-wide
    wired = {**served(plan), **checker}
    return rl_run(plan, folder, method, settings, c.threads, ("rl",), tuple(own), wired)


def rl_steps(plan: Plan) -> list[Step]:
    """Every RL run the evaluations compare: DARLING, GRPO (with grpo_baseline), then each of ``arms``."""
    c = plan.config
    grpo = [rl_step(plan, grpo=True)] if c.grpo_baseline else []
    return [rl_step(plan), *grpo, *(arm_step(plan, method) for method in c.arms)]


# -- what the evaluations compare ----------------------------------------------------------------------------------
def policies(plan: Plan) -> dict[str, str]:
    """Before RL, after DARLING, after GRPO (with grpo_baseline) and after each other arm: name -> model (hub
    name, alias or path)."""
    c = plan.config
    return {
        BASE_POLICY: rl_step(plan).config.policy,
        **{n: str(c.run / f / "final") for n, f in run_folders(plan).items()},
    }


def run_folders(plan: Plan) -> dict[str, str]:
    """The trained policies' run folders (their training logs), by policy name: DARLING, GRPO, the other arms."""
    c = plan.config
    grpo = {GRPO_POLICY: GRPO_RUN} if c.grpo_baseline else {}
    return {DARLING_POLICY: RL_FOLDER, **grpo, **{arm_policy(m): arm_folder(m) for m in c.arms}}


def training_prompts(plan: Plan) -> dict[str, Any]:
    """The prompts the RL runs trained on, as eval novelty's ``prompts`` and ``limit``."""
    rl = rl_step(plan).config
    return {"prompts": str(rl.problems), "limit": rl.limit}
