"""Run inside a real verl install (tests/rl/test_verl_reward.py): verl 0.5's own dataset, DataProto steps, batch
balancing, config loader, ``compute_reward`` and ``batch`` reward manager call darling's ``compute_score`` the
way ``RayPPOTrainer.fit`` and ``_validate`` do; prints the results as JSON for the test.

argv: classifier export dir, tokenizer dir, threshold, work dir.
"""

import json
import sys
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl import DataProto
from verl.trainer.ppo.reward import compute_reward, load_reward_manager
from verl_responses import OPTIONS, PROMPTS, RESPONSES, VALIDATION  # beside this script
from verl_trainer import training_batch, validation_batch

import darling.rl.verl_reward as verl_reward
from darling.rl.verl_reward import DarlingRewardManager

classifier, tokenizer_dir, threshold, work = sys.argv[1], sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])
tok = AutoTokenizer.from_pretrained(tokenizer_dir)
WORLD_SIZE = 2  # data-parallel ranks _balance_batch spreads the rows over


def data_files() -> list[str]:
    """One verl-preprocessed Parquet file per prompt, as two datasets' preprocessing scripts write them."""
    files = []
    for g, (question, answer) in enumerate(PROMPTS):
        row = {
            "data_source": f"arith-{g}",
            "prompt": [{"role": "user", "content": question}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": answer},
            "extra_info": {"split": "train", "index": 0},
        }
        files.append(str(work / f"arith-{g}.parquet"))
        pd.DataFrame([row]).to_parquet(files[-1])
    return files


def rows(data: DataProto, texts: list[list[str]]) -> list[list[int]]:
    """[prompt, response] of each row (indices into ``texts``), read back from the batch: where verl put each."""
    prompt_len = data.batch["prompts"].shape[-1]
    lengths = data.batch["attention_mask"][:, prompt_len:].sum(-1)
    out = []
    for i, source in enumerate(data.non_tensor_batch["data_source"]):
        g = int(source.split("-")[1])
        text = tok.decode(data.batch["responses"][i][: lengths[i]], skip_special_tokens=True)
        out.append([g, texts[g].index(text)])
    return out


def at_last_token(reward, data: DataProto) -> list[float]:
    lengths = data.batch["attention_mask"][:, data.batch["prompts"].shape[-1] :].sum(-1)
    elsewhere = reward.clone()
    elsewhere[range(len(lengths)), lengths - 1] = 0
    assert not elsewhere.any(), "reward outside the last response token"
    return reward[range(len(lengths)), lengths - 1].tolist()


def manager(num_examine: int = 0, **options):
    """What verl's main_ppo builds from the README's config lines: reward_fn (num_examine=0) and, from the same
    reward kwargs, val_reward_fn (num_examine=1)."""
    kwargs = {"classifier": classifier, "threshold": threshold, "num_generations": 4, **options}
    config = OmegaConf.create(
        {
            "reward_model": {"reward_manager": "batch", "sandbox_fusion": None},
            "custom_reward_function": {"path": verl_reward.__file__, "name": "compute_score", "reward_kwargs": kwargs},
            "data": {"reward_fn_key": "data_source"},
        }
    )
    return load_reward_manager(config, tok, num_examine=num_examine)


def error_of(fn) -> str:
    try:
        fn()
        return "no error"
    except Exception as exc:  # noqa: BLE001 - the test checks which error surfaced
        return f"{type(exc).__name__}: {exc}"


files = data_files()
reward_fn = manager()
own = DarlingRewardManager(tok, classifier=classifier, threshold=threshold, num_generations=4)
batch = training_batch(files, tok, RESPONSES, WORLD_SIZE)
uids = list(batch.non_tensor_batch["uid"])
reward_tensor, extra = compute_reward(batch, reward_fn)
result = {
    "manager": type(reward_fn).__name__,
    "rows": rows(batch, RESPONSES),
    "contiguous": all(uids[i] == uids[i + 1] or uids[i] not in uids[i + 1 :] for i in range(len(uids) - 1)),
    "batch_rewards": at_last_token(reward_tensor, batch),
    "batch_quality": list(extra["quality"]),
    "batch_distinct": list(extra["distinct"]),
    "manager_rewards": at_last_token(own(batch), batch),
    "options": {name: at_last_token(compute_reward(batch, manager(**kw))[0], batch) for name, kw in OPTIONS.items()},
}
val_reward_fn = manager(num_examine=1)
val = validation_batch(files, tok, VALIDATION, WORLD_SIZE)
val_out = val_reward_fn(val, return_dict=True)
result |= {
    "val_rows": rows(val, VALIDATION),
    "val_rewards": at_last_token(val_out["reward_tensor"], val),
    "val_diversity": list(val_out["reward_extra_info"]["diversity"]),
    "val_manager_rewards": at_last_token(own(val), val),
    "lost_response": error_of(lambda: compute_reward(batch.select_idxs(list(range(len(batch) - 1))), reward_fn)),
    "val_n2": error_of(lambda: val_reward_fn(validation_batch(files, tok, [r[:2] for r in RESPONSES], WORLD_SIZE))),
    "server_down": error_of(
        lambda: DarlingRewardManager(tok, classifier=classifier, classifier_urls=["http://127.0.0.1:9"])(batch)
    ),
}
print("RESULT " + json.dumps(result))
