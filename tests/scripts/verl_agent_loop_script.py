"""Run inside a real verl >= 0.8 install (tests/rl/test_verl_agent_loop.py): darling's agent-loop manager, loaded
by its dotted name from verl's own Hydra config, generates through verl's agent-loop workers, scores quality with
verl's reward loop (darling's ``compute_quality`` as the custom reward function), and the step goes on through the
trainer's own methods (v1: the replay buffer, ``_balance_batch``, ``_compute_advantage``; v0: ``DataProto.union``,
``_balance_batch``, ``extract_reward``, ``compute_advantage``; validation: ``_validate``'s repeat and padding).

Only the LLM is stood in for (the machine has no GPU for verl's vLLM replicas): a Ray actor hands out fixed
responses per prompt, the first request of a prompt finishing last, and can fail a chosen request (a dropped
connection) - the faults and the finishing order a real server cannot be made to produce on demand.

argv: mode (v1 | v0), classifier export dir, model dir, threshold, output JSON path.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import time
import types
import uuid
import warnings
from pathlib import Path

import numpy as np
import ray
import torch
import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.experimental.reward_loop import RewardLoopManager
from verl.protocol import DataProto, pad_dataproto_to_divisor, unpad_dataproto
from verl.utils.import_utils import load_class_from_fqn
from verl.workers.rollout.replica import TokenOutput
from verl_agent_loop_cases import FAILING, QUESTIONS, TRAINING, VALIDATION  # beside this script

warnings.filterwarnings("ignore")
MODE, EXPORT, MODEL, THRESHOLD, OUT = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), Path(sys.argv[5])
N = 4
VERSION = verl.__version__
HAS_V1 = tuple(int(x) for x in VERSION.split(".")[:2]) >= (0, 9)
MANAGER = "darling.rl.verl_agent_loop.DarlingAgentLoopManager"
tok = AutoTokenizer.from_pretrained(MODEL)


def overrides(workers: int) -> list[str]:
    """The recipe's DARLING lines (docs/rl.md) plus what a CPU test needs."""
    lines = [
        f"actor_rollout_ref.model.path={MODEL}",
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={N}",
        f"actor_rollout_ref.rollout.agent.num_workers={workers}",
        "actor_rollout_ref.actor.ppo_mini_batch_size=1",
        "reward.num_workers=1",
        "algorithm.adv_estimator=grpo",
        "algorithm.norm_adv_by_std_in_grpo=False",
        "reward.custom_reward_function.path=pkg://darling.rl.verl_reward",
        "reward.custom_reward_function.name=compute_quality",
        f"+actor_rollout_ref.rollout.agent.agent_loop_manager_class={MANAGER}",
        f"+darling.classifier={EXPORT}",
        f"+darling.threshold={THRESHOLD}",
    ]
    if HAS_V1:
        lines.append(f"trainer.use_v1={MODE == 'v1'}")
    if MODE == "v1":
        lines += [
            "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
            "transfer_queue.backend.SimpleStorage.total_storage_size=1000",
        ]
    return lines


def load_config(workers: int):
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer/config"), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides(workers))
    if MODE == "v1":
        config.transfer_queue.enable = True  # as TaskRunnerV1.run sets it
    OmegaConf.resolve(config)
    return config


@ray.remote
class Responder:
    """The stand-in LLM server: prompt -> its fixed responses in order; earlier requests answer later."""

    def __init__(self, table: dict[str, list[str]], fail: dict[str, int]):
        self.table = {
            q: [tok.encode(t, add_special_tokens=False) + [tok.eos_token_id] for t in ts] for q, ts in table.items()
        }
        self.fail, self.count = fail, dict.fromkeys(table, 0)

    async def generate(self, prompt_ids: list[int]) -> list[int]:
        text = tok.decode(prompt_ids)
        question = next(q for q in self.table if q in text)
        i = self.count[question]
        self.count[question] += 1
        await asyncio.sleep(0.1 * (N - i % N))  # uneven finishing: a prompt's first session ends last
        if self.fail.get(question) == i:
            raise ConnectionError(f"injected: the LLM server dropped request {i} of {question!r}")
        return self.table[question][i % len(self.table[question])]


class StandInLLM:
    """What verl's agent loops call (``LLMServerClient.generate``), answering from ``Responder``."""

    def __init__(self, responder):
        self.responder = responder

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        return TokenOutput(token_ids=await self.responder.generate.remote(list(prompt_ids)), extra_fields={})


def prompt_rows(questions: list[str]) -> dict:
    return {
        "raw_prompt": np.array([[{"role": "user", "content": q}] for q in questions], dtype=object),
        "data_source": np.array(["arith"] * len(questions), dtype=object),
        "reward_model": np.array([{"ground_truth": QUESTIONS[q]} for q in questions], dtype=object),
        "extra_info": np.array([{"index": i} for i in range(len(questions))], dtype=object),
        "index": np.arange(len(questions)),
        "uid": np.array([str(uuid.uuid4()) for _ in questions], dtype=object),
    }


def decode(ids) -> str:
    return tok.decode([int(t) for t in ids], skip_special_tokens=True)


def trainer_self(config, **fields):
    """The trainer's ``self`` for calling its own methods unbound, with a data-parallel size of 2."""
    wg = types.SimpleNamespace(_dispatch_info={"actor": [0, 1]}, world_size=2, _query_dispatch_info=lambda r: [0, 1])
    me = types.SimpleNamespace(config=config, tokenizer=tok, actor_rollout_wg=wg, use_critic=False, global_steps=1)
    for name, value in fields.items():
        setattr(me, name, types.MethodType(value, me) if callable(value) else value)
    return me


def start(config, fail: dict[str, int]):
    table = {**TRAINING, **FAILING, **VALIDATION}
    responder = Responder.remote(table, fail)
    rewards = RewardLoopManager(config=config, rm_resource_pool=None)
    handles = getattr(rewards, "reward_loop_worker_handles", None) or rewards.reward_loop_workers
    manager_cls = load_class_from_fqn(config.actor_rollout_ref.rollout.agent.agent_loop_manager_class)
    manager = manager_cls.create(
        config=config, llm_client=StandInLLM(responder), teacher_client=None, reward_loop_worker_handles=handles
    )
    return manager


def settled(tq, uids, partition: str) -> dict[str, str]:
    """Each prompt's terminal status (``finished`` / ``failure``), waiting until every one has one."""
    while True:
        tags = tq.kv_list(partition_id=partition).get(partition, {})
        status = {uid: tags.get(uid, {}).get("status") for uid in uids}
        if all(s in ("finished", "failure") for s in status.values()):
            return status
        time.sleep(0.2)


def run_v1(config) -> dict:
    import transfer_queue as tq
    import verl.utils.tensordict_utils as tu
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer as TrainerBase

    tq.init(config.transfer_queue)
    questions = [*TRAINING, *FAILING]
    manager = start(config, fail={q: 2 for q in FAILING})
    result = {
        "manager": type(manager).__name__,
        "worker": manager.agent_loop_workers_class.__ray_actor_class__.__name__,
    }

    def submit(questions: list[str], partition: str, validate: bool) -> dict:
        rows = prompt_rows(questions)
        batch = tu.get_tensordict(rows)
        tu.assign_non_tensor_data(batch, "global_steps", 1)
        if validate:
            tu.assign_non_tensor_data(batch, "validate", True)
        tags = [{"is_prompt": True, "status": "pending", "global_steps": 1}] * len(questions)
        tq.kv_batch_put(keys=list(rows["uid"]), partition_id=partition, tags=tags)
        manager.generate_sequences(batch)
        return dict(zip(rows["uid"], questions, strict=True))

    me = trainer_self(config, trainer_mode="sync", _add_prompts_to_generate=lambda self, k: 0)
    me._resolve_filter_groups_metric = types.MethodType(TrainerBase._resolve_filter_groups_metric, me)
    me._get_required_batch_multiple = types.MethodType(TrainerBase._get_required_batch_multiple, me)
    buffer = TrainerBase._build_replay_buffer(me)
    buffer.poll_interval = 0.2
    uid_question = submit(questions, "train", validate=False)
    result["status"] = {uid_question[uid]: status for uid, status in settled(tq, uid_question, "train").items()}
    meta, _ = buffer.sample(global_steps=1, partition_id="train", batch_size=len(questions))
    order = list(meta.keys)
    meta = TrainerBase._balance_batch(me, meta, metrics={})
    meta = TrainerBase._compute_advantage(me, meta, metrics={})
    fields = ["uid", "responses", "rm_scores", "advantages", "extra_fields"]
    data = tq.kv_batch_get(keys=meta.keys, partition_id="train", select_fields=fields)
    result["reordered"] = list(meta.keys) != order
    result["train"] = [
        {
            "question": uid_question[str(uid)],
            "text": decode(resp),
            "reward": float(rm.sum()),
            "advantage": float(adv.flatten()[0]),  # GRPO: one value over the response
            "extra": {k: float(v) for k, v in extra["reward_extra_info"].items()},
        }
        for uid, resp, rm, adv, extra in zip(
            data["uid"],
            data["responses"].unbind(0),
            data["rm_scores"].unbind(0),
            data["advantages"].unbind(0),
            data["extra_fields"],
            strict=True,
        )
    ]

    uid_question = submit(list(VALIDATION), "val", validate=True)
    meta, _ = buffer.sample(global_steps=1, partition_id="val", batch_size=len(VALIDATION))
    data = tq.kv_batch_get(keys=meta.keys, partition_id="val", select_fields=["uid", "responses", "rm_scores"])
    result["val"] = [
        {"question": uid_question[str(uid)], "text": decode(resp), "reward": float(rm.sum())}
        for uid, resp, rm in zip(data["uid"], data["responses"].unbind(0), data["rm_scores"].unbind(0), strict=True)
    ]
    tq.close()
    return result


def questions_of(data) -> list[str]:
    """The question of each row, read back from its prompt tokens (v0 outputs carry no uid)."""
    return [next(q for q in QUESTIONS if q in decode(ids)) for ids in data.batch["prompts"]]


def responses_of(data) -> list[str]:
    prompt_len = data.batch["prompts"].size(1)
    lengths = data.batch["attention_mask"][:, prompt_len:].sum(-1)
    return [decode(ids[: int(n)]) for ids, n in zip(data.batch["responses"], lengths, strict=True)]


def run_v0(config) -> dict:
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage
    from verl.trainer.ppo.reward import extract_reward

    manager = start(config, fail={q: 2 for q in FAILING})
    result = {"manager": type(manager).__name__}
    me = trainer_self(config)
    if hasattr(RayPPOTrainer, "_get_dp_size"):
        me._get_dp_size = types.MethodType(RayPPOTrainer._get_dp_size, me)

    def generate(questions: list[str], n: int, meta: dict, pad_to: int = 0):
        # RLHFDataset's one tensor: agent loops tokenize raw_prompt themselves
        rows = {**prompt_rows(questions), "dummy_tensor": torch.zeros(len(questions), 1, dtype=torch.uint8)}
        batch = DataProto.from_single_dict(rows)
        gen = RayPPOTrainer._get_gen_batch(me, batch)  # the trainer's own split: uid stays with the prompts
        gen = gen.repeat(repeat_times=n, interleave=True)
        gen.meta_info.update(meta)
        pad = 0
        if pad_to:
            gen, pad = pad_dataproto_to_divisor(gen, pad_to)
        out = manager.generate_sequences(gen)
        return batch.repeat(repeat_times=n, interleave=True), unpad_dataproto(out, pad_size=pad) if pad else out

    batch, out = generate(list(TRAINING), N, {"global_steps": 1})
    batch = batch.union(out)
    before = questions_of(batch)
    RayPPOTrainer._balance_batch(me, batch, metrics={})  # reorders the rows in place
    result["reordered"] = questions_of(batch) != before
    reward, extra = extract_reward(batch)
    batch.batch["token_level_scores"] = batch.batch["token_level_rewards"] = reward
    batch = compute_advantage(batch, adv_estimator="grpo", norm_adv_by_std_in_grpo=False)
    texts = responses_of(batch)
    result["train"] = [
        {
            "question": question,
            "text": text,
            "reward": float(reward[i].sum()),
            "advantage": float(batch.batch["advantages"][i, 0]),
            "extra": {k: float(extra[k][i]) for k in ("quality", "diversity", "distinct")},
        }
        for i, (question, text) in enumerate(zip(questions_of(batch), texts, strict=True))
    ]
    try:
        generate([*FAILING, *list(TRAINING)[:2]], N, {"global_steps": 1})  # 12 rows: an equal share per worker
        result["failed"] = "no error"
    except Exception as error:  # verl's v0 step stops on a failed session: it must not become a reward
        result["failed"] = f"{type(error).__name__}: {error}"
    # validation as RayPPOTrainer._validate: val_kwargs.n responses, padded to a multiple of the workers
    workers = config.actor_rollout_ref.rollout.agent.num_workers
    batch, out = generate(list(VALIDATION), 1, {"validate": True, "global_steps": 1}, pad_to=workers)
    result["val"] = [
        {"question": q, "text": t, "reward": float(out.batch["rm_scores"][i].sum())}
        for i, (q, t) in enumerate(zip(questions_of(out), responses_of(out), strict=True))
    ]
    return result


def pins() -> dict[str, str]:
    """What darling relies on in verl's private code: each check names the method it reads."""
    from verl.experimental.agent_loop import AgentLoopWorker

    found = {}
    source = inspect.getsource(AgentLoopWorker._compute_score)
    found["AgentLoopWorker._compute_score skips a set reward"] = str("reward_score is None" in source)
    if HAS_V1:
        from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

        worker = AgentLoopWorkerTQ.__ray_actor_class__
        run_prompt = inspect.getsource(worker._run_prompt)
        found["AgentLoopWorkerTQ._run_prompt pops __rollout_n__ as darling reads it"] = str(
            'prompt.pop("__rollout_n__", config.n if not trajectory["validate"] else config.val_kwargs.n)' in run_prompt
        )
        found["AgentLoopWorkerTQ._run_prompt runs sessions through self._run_agent_loop"] = str(
            "self._run_agent_loop(" in run_prompt and "session_id=i" in run_prompt
        )
        found["AgentLoopWorkerTQ._run_prompt tags finished only after settling"] = str(
            run_prompt.index("_settle_session_tasks(tasks)") < run_prompt.index('status = "finished"')
        )
        init = inspect.getsource(worker.__init__)
        found["AgentLoopWorkerTQ.__init__ is what darling's worker repeats"] = str(
            all(
                line in init
                for line in ("super().__init__(*args, **kwargs)", "tq.init()", "self.background_tasks = set()")
            )
        )
        post = inspect.signature(worker._agent_loop_postprocess)
        found["AgentLoopWorkerTQ._agent_loop_postprocess(self, output, validate, **kwargs)"] = str(
            [p for p in post.parameters if p != "_ray_trace_ctx"] == ["self", "output", "validate", "kwargs"]
        )
    return found


def main() -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # v0: 4 workers, 3 of the 12 rows each, so every prompt's 4 rows span two of them (6 workers cost ~20 CPU-s
    # more a case in actor start-up, for no path 4 do not take; validation still pads 3 rows to 4)
    config = load_config(workers=2 if MODE == "v1" else 4)
    ray.init(
        address="local",  # a cluster of its own, never one another test started
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=os.environ.get("VERL_SCRIPT_LOGS") == "1",
        runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "RAY_USAGE_STATS_ENABLED": "0"}},
    )
    try:
        result = run_v1(config) if MODE == "v1" else run_v0(config)
    finally:
        ray.shutdown()
    result.update(version=VERSION, pins=pins())
    OUT.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
