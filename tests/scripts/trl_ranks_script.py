"""Run by test_rl_train.py::test_two_processes_score_whole_groups under torchrun (2 CPU ranks, gloo).

Each rank records the prompts of every block its DARLING reward function received, so the test can check
that TRL's per-process slices held whole groups and that the ranks saw different prompts.
argv: classifier export, problems file, output dir.
"""

import json
import sys

import torch.distributed as dist

from darling.rl.train import RLTrainConfig, build_trainer, rl_train

if __name__ == "__main__":
    export, problems, output = sys.argv[1:4]
    config = RLTrainConfig.build(
        "cpu",
        overrides=dict(
            output=output,
            classifier=export,
            classifier_threshold=0.999,
            problems=problems,
            limit=4,
            max_steps=1,
            max_completion_length=12,
            save_steps=1,
        ),
    )
    trainer = build_trainer(config)
    reward = trainer.darling_reward
    seen: list[list[str]] = []
    split = reward.groups

    def recording_groups(prompts, texts):
        blocks = split(prompts, texts)
        n = reward.num_generations
        seen.append([prompts[k][-1]["content"] for k in range(0, len(prompts), n)])
        return blocks

    reward.groups = recording_groups
    rl_train(config, trainer=trainer)
    metrics = [k for row in trainer.state.log_history for k in row if k.startswith("darling/")]
    rank = dist.get_rank() if dist.is_initialized() else -1
    world = dist.get_world_size() if dist.is_initialized() else 1
    completions = len(reward.last.rewards) * reward.num_generations
    result = {"rank": rank, "world": world, "blocks": seen, "metrics": sorted(set(metrics)), "completions": completions}
    print("RESULT " + json.dumps(result), flush=True)
