"""Run inside a real verl install (tests/rl/test_verl_agent_loop.py): compose verl's own Hydra trainer config
(``ppo_trainer``, struct mode: an unknown key or a ``+`` missing is refused) with the override lines of a
``main_ppo.sh`` that ``darling rl-train --engine verl --dry-run`` wrote, resolve it as verl's task runner does, read
the DARLING settings back as the agent-loop manager does, and print the values the test checks as JSON.

argv: cases, each a main_ppo.sh file followed by extra override lines (to show a bad one is refused), cases
separated by ``--``; one line per case, in order (one process for all: verl and Hydra import once).
"""

import dataclasses
import json
import shlex
import sys
from pathlib import Path

import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from darling.rl.verl_reward import VerlSettings


def compose_case(script: str, extra: list[str]) -> str:
    words = shlex.split(Path(script).read_text().split("main_ppo", 1)[1].replace("\\\n", " "))
    try:
        with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer/config"), version_base=None):
            config = compose(config_name="ppo_trainer", overrides=[*words, *extra])
        OmegaConf.resolve(config)
    except Exception as error:  # what verl's main_ppo would refuse before anything starts
        return "REFUSED " + f"{type(error).__name__}: {error}".splitlines()[0]
    values = {key: OmegaConf.select(config, key) for key in KEYS}
    values["manager"] = OmegaConf.select(config, "actor_rollout_ref.rollout.agent.agent_loop_manager_class")
    values["darling"] = dataclasses.asdict(VerlSettings.from_config(config)) if config.get("darling") else None
    values["use_v1"] = OmegaConf.select(config, "trainer.use_v1")
    return "RESULT " + json.dumps({"version": verl.__version__, "values": values}, default=list)


KEYS = [
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.temperature",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.loss_agg_mode",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "data.train_batch_size",
    "algorithm.adv_estimator",
    "algorithm.norm_adv_by_std_in_grpo",
    "reward.custom_reward_function.path",
    "reward.custom_reward_function.name",
    "trainer.n_gpus_per_node",
    "trainer.total_training_steps",
    "actor_rollout_ref.model.enable_gradient_checkpointing",
]

if __name__ == "__main__":
    cases: list[list[str]] = [[]]
    for word in sys.argv[1:]:
        if word == "--":
            cases.append([])
        else:
            cases[-1].append(word)
    for script, *extra in cases:
        print(compose_case(script, extra), flush=True)
