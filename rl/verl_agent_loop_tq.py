"""The DARLING reward in verl 0.9's v1 trainer: each prompt's group is rewarded in the worker that runs it.

The v1 trainer (``trainer.use_v1=True``, the default from verl 0.9) hands whole prompts to agent-loop workers
(``AgentLoopManagerTQ``); a worker's ``_run_prompt`` starts the prompt's ``n`` sessions, each of which scores its
response alone (``_compute_score``: the reward loop, i.e. the user's reward function or reward model) and writes it
to TransferQueue (``_agent_loop_postprocess``); once every session has settled, the prompt is tagged ``finished``
(or ``failure``) and only then can the replay buffer sample it. This worker holds each session after its quality is
known until all ``n`` have arrived, rewards the group with ``group_scores`` (quality x diversity from the
classifier), and lets every session write its trajectory with that reward: so balancing, DAPO's group filter, the
advantage, metrics and validation all see the DARLING reward. Nothing of verl's is copied: ``_run_prompt`` is
wrapped (to know ``n``), ``_run_agent_loop`` is wrapped (a session that fails releases its siblings, which then fail
too, so the group is tagged ``failure`` with no trajectory and never waits), and ``_agent_loop_postprocess`` waits.

Loaded through ``darling.rl.verl_agent_loop.DarlingAgentLoopManager`` (its ``create`` picks this class when
``trainer.use_v1`` is true). Needs verl >= 0.9.0 (``verl.trainer.ppo.v1``).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray
import transfer_queue as tq
from verl.experimental.agent_loop import AgentLoopWorker
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

from darling.rl.verl_reward import EXTRA_KEYS, VerlSettings, check_trainer_config, group_scores

logger = logging.getLogger(__name__)
# The plain class under Ray's actor wrapper: a Ray actor class cannot be subclassed, its class can.
_WorkerTQ = AgentLoopWorkerTQ.__ray_actor_class__


class GroupFailed(RuntimeError):
    """A sibling session failed: this session writes nothing, so the prompt is tagged ``failure`` whole."""


class Group:
    """The sessions of one prompt, held until all ``n`` have their quality (or one has failed)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.finals: dict[int, Any] = {}  # session id -> its final AgentLoopOutput
        self.scored: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def arrive(self, session_id: int, final: Any) -> bool:
        """Record a session; True for the one that completes the group (it scores the group)."""
        self.finals[session_id] = final
        return len(self.finals) == self.n and not self.scored.done()

    def fail(self, error: BaseException) -> None:
        if not self.scored.done():
            self.scored.set_exception(GroupFailed(f"a session of this prompt failed: {error!r}"))
            self.scored.exception()  # retrieved: asyncio need not warn when no sibling is left to wait

    async def wait(self) -> None:
        await asyncio.shield(self.scored)


class DarlingAgentLoopWorkerTQ(_WorkerTQ):  # type: ignore[valid-type,misc]  # a class made at import time
    """``AgentLoopWorkerTQ`` whose sessions write their trajectories only once their group has its DARLING reward."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # AgentLoopWorkerTQ.__init__'s own body, not a call to it: Ray sends an inherited method of the wrapped class
        # by value, and its zero-argument super() then names a copy of the class (a TypeError in the actor).
        AgentLoopWorker.__init__(self, *args, **kwargs)
        tq.init()
        self.background_tasks: set[asyncio.Task] = set()
        self.darling = VerlSettings.from_config(self.config)
        self.groups: dict[str, Group] = {}
        self.scoring = ThreadPoolExecutor(1, thread_name_prefix="darling-reward")  # the classifier blocks

    async def _run_prompt(self, prompt: dict, sampling_params: dict, trajectory: dict, trace: bool = False) -> None:
        rollout = self.config.actor_rollout_ref.rollout
        # the n that verl's _run_prompt pops from the prompt (tests pin that line)
        n = prompt.get("__rollout_n__", rollout.val_kwargs.n if trajectory["validate"] else rollout.n)
        uid = prompt["uid"]
        self.groups[uid] = Group(int(n))
        try:
            await _WorkerTQ._run_prompt(self, prompt, sampling_params, trajectory, trace)
        finally:
            self.groups.pop(uid, None)

    async def _run_agent_loop(self, *args: Any, **kwargs: Any):
        group = self.groups[kwargs["uid"]]
        try:
            return await _WorkerTQ._run_agent_loop(self, *args, **kwargs)
        except BaseException as error:  # the LLM call, the quality, the reward or the write: release the siblings
            group.fail(error)
            raise

    async def _agent_loop_postprocess(self, output: Any, validate: bool, **kwargs: Any) -> None:
        uid, session_id = kwargs["uid"], kwargs["session_id"]
        outputs = output if isinstance(output, list) else [output]
        if not outputs:
            raise RuntimeError(f"session {session_id} of prompt {uid} returned no output: DARLING rewards whole groups")
        await self._compute_score(outputs, kwargs=kwargs)  # the quality, from verl's reward loop
        final = outputs[-1]
        if final.reward_score is None:
            raise RuntimeError("no quality from verl's reward loop: DARLING needs its streaming reward workers")
        group = self.groups[uid]
        if group.arrive(session_id, final):
            await self._reward(group)
        await group.wait()
        # _compute_score leaves a set reward alone: the base method only writes the trajectory (tests pin that)
        await _WorkerTQ._agent_loop_postprocess(self, outputs, validate, **kwargs)

    async def _reward(self, group: Group) -> None:
        """The group's DARLING reward onto each session's final output, then release the sessions."""
        finals = [group.finals[s] for s in sorted(group.finals)]
        texts = [self.tokenizer.decode(o.response_ids, skip_special_tokens=True) for o in finals]
        quality = [float(o.reward_score) for o in finals]
        loop = asyncio.get_running_loop()
        try:
            (scores,) = await loop.run_in_executor(self.scoring, group_scores, [texts], [quality], self.darling)
        except BaseException as error:  # a classifier server down after its retries: no reward, the group fails
            group.fail(error)
            raise
        for final, score in zip(finals, scores, strict=True):
            final.reward_score = score["score"]
            info = dict(final.extra_fields.get("reward_extra_info") or {})
            if "score" in info:  # a reward function's dict result: its "score" was the quality
                info["score"] = score["score"]
            final.extra_fields["reward_extra_info"] = {**info, **{key: score[key] for key in EXTRA_KEYS}}
        group.scored.set_result(None)


class DarlingAgentLoopManagerTQ(AgentLoopManagerTQ):
    """``AgentLoopManagerTQ`` with ``DarlingAgentLoopWorkerTQ`` workers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_trainer_config(
            kwargs["config"] if "config" in kwargs else args[0], kwargs.get("reward_loop_worker_handles")
        )
        super().__init__(*args, **kwargs)
        # after the base __init__, which sets its own worker class; the workers start in create()
        self.agent_loop_workers_class = ray.remote(DarlingAgentLoopWorkerTQ)
