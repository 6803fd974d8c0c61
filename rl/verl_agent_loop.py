"""The DARLING reward in verl 0.7.1-0.9.x: an agent-loop manager, the one verl hook that sees a prompt's whole group.

From verl 0.7.1 every rollout is scored alone as it finishes (the reward loop's ``run_single`` on a reward worker
picked at random), so no reward function or reward manager sees the ``n`` responses of a prompt together. The
agent-loop manager does: verl loads it from ``actor_rollout_ref.rollout.agent.agent_loop_manager_class`` (a dotted
class name) in both of its trainers. One line selects this class for either:

* **v0** (``RayPPOTrainer``: verl 0.7.1-0.8.0, and 0.9.x with ``trainer.use_v1=False``): ``generate_sequences``
  returns the whole step's batch, each response's quality (the reward loop's score: the user's reward function or
  reward model) in ``rm_scores``; the manager regroups the rows by the ``uid`` the trainer gives each prompt and
  rewrites ``rm_scores`` to the DARLING reward before the trainer reads it.
* **v1** (verl 0.9.x's default trainer): sessions are streamed into TransferQueue one by one, so the rewrite happens
  in the agent-loop worker that runs all ``n`` sessions of a prompt (``darling.rl.verl_agent_loop_tq``).

The settings are a ``darling`` node of the trainer config (``+darling.classifier=DIR`` ...: ``VerlSettings``); the
reward is ``group_scores``, the same function of (texts, qualities) as every other entry point. Each response's
``quality``, ``diversity`` and group ``distinct`` go to verl's reward extra info (its metrics and dumps).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from verl.experimental.agent_loop import AgentLoopManager
from verl.utils.ray_utils import auto_await

from darling.rl.verl_reward import EXTRA_KEYS, VerlSettings, check_trainer_config, group_scores, rows_to_score


def load_tokenizer(config: Any):
    """The policy's tokenizer, as verl loads it (``copy_to_local`` for remote paths; remote code only if asked)."""
    from transformers import AutoTokenizer
    from verl.utils.fs import copy_to_local

    model = config.actor_rollout_ref.model
    path = copy_to_local(model.get("tokenizer_path") or model.path)
    return AutoTokenizer.from_pretrained(path, trust_remote_code=bool(model.get("trust_remote_code", False)))


class DarlingAgentLoopManager(AgentLoopManager):
    """verl's ``AgentLoopManager`` with the DARLING reward (v0 trainer); for the v1 trainer ``create`` returns
    ``DarlingAgentLoopManagerTQ``. Load with ``+actor_rollout_ref.rollout.agent.agent_loop_manager_class=
    darling.rl.verl_agent_loop.DarlingAgentLoopManager``."""

    @classmethod
    def create(cls, *args: Any, **kwargs: Any):
        config = kwargs["config"] if "config" in kwargs else args[0]
        if config.trainer.get("use_v1", False):
            from darling.rl.verl_agent_loop_tq import DarlingAgentLoopManagerTQ  # loads verl's v1 (verl >= 0.9)

            return DarlingAgentLoopManagerTQ.create(*args, **kwargs)
        settings = check_trainer_config(config, kwargs.get("reward_loop_worker_handles"))  # verl passes keywords
        manager = super().create(*args, **kwargs)
        manager.darling, manager.tokenizer = settings, load_tokenizer(config)
        return manager

    @auto_await
    async def generate_sequences(self, prompts):
        uids = [str(u) for u in prompts.non_tensor_batch["uid"]]  # the output has no uid; its rows keep this order
        validate = bool(prompts.meta_info.get("validate", False))
        output = await super().generate_sequences(prompts)
        rollout = self.config.actor_rollout_ref.rollout
        n = rollout.val_kwargs.n if validate else rollout.n
        # the classifier blocks: off the event loop that verl's async calls share
        await asyncio.to_thread(rewrite_batch, output, uids, n, validate, self.tokenizer, self.darling)
        return output


def rewrite_batch(output, uids: Sequence[str], n: int, validate: bool, tokenizer, settings: VerlSettings) -> None:
    """``rm_scores`` (quality at each response's last token) -> the DARLING reward, in place, with the extra info."""
    if "rm_scores" not in output.batch.keys():  # noqa: SIM118 - TensorDict refuses `in` without .keys()
        raise RuntimeError("no rm_scores after generation: DARLING needs verl's streaming reward loop")
    scores = output.batch["rm_scores"]
    prompt_len = output.batch["prompts"].size(1)
    lengths = output.batch["attention_mask"][:, prompt_len:].sum(dim=-1)
    quality = scores.sum(dim=-1).tolist()
    groups = rows_to_score(uids, n, validate)
    texts = [
        tokenizer.decode(output.batch["responses"][i][: int(lengths[i])], skip_special_tokens=True)
        for i in range(len(uids))
    ]
    scored = group_scores(
        [[texts[i] for i in rows] for rows in groups], [[quality[i] for i in rows] for rows in groups], settings
    )
    # rows left out (validation padding) keep their quality as reward, alone in their group
    extra = {"quality": np.array(quality), "diversity": np.ones(len(quality)), "distinct": np.ones(len(quality))}
    for rows, group in zip(groups, scored, strict=True):
        for row, score in zip(rows, group, strict=True):
            end = max(int(lengths[row]), 1) - 1  # where verl put the quality (the last response token)
            scores[row].zero_()
            scores[row, end] = score["score"]
            for key in EXTRA_KEYS:
                extra[key][row] = score[key]
    output.non_tensor_batch.update(extra)
    keys = list(output.meta_info.get("reward_extra_keys", []))
    output.meta_info["reward_extra_keys"] = keys + [k for k in EXTRA_KEYS if k not in keys]
