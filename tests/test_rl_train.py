"""`rl-train` on the CPU: the real SmolLM2 policy, a real MiniLM classifier export, TRL's GRPOTrainer.

Checks what the paper's method requires of the loop: the DARLING reward is what TRL optimises, the
advantages TRL uses are r - mean(r) per group (no std), and the policy's weights move.
"""

import pytest
import torch
from helpers import write_jsonl

from darling.errors import UserInputError
from darling.rl.train import build_config, build_trainer, rl_train

pytestmark = pytest.mark.slow

EASY = [{"id": i, "question": f"What is {a} + {b}?", "answer": str(a + b)}
        for i, (a, b) in enumerate([(2, 3), (1, 1), (4, 4), (10, 5)])]  # fmt: skip


def test_group_splitting_settings_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="multiple of num_generations"):
        build_config("cpu", output=tmp_path, diversity=False, num_generations=3, per_device_train_batch_size=4).check()
    with pytest.raises(UserInputError, match="--classifier"):
        build_config("cpu", output=tmp_path).check()


def test_two_darling_steps_on_smollm2(tmp_path, any_export, smollm2_dir):
    """Either classifier kind: a bi-encoder export takes the embedding path (every response embedded once)."""
    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    config = build_config("cpu", output=tmp_path / "rl", classifier=any_export, problems=str(problems),
                          max_steps=2, max_completion_length=24, learning_rate=1e-5, temperature=1.2,
                          # A 2-step classifier calls everything equivalent at its own threshold, so every
                          # multiplicative reward would be 0 and nothing would train: make it call pairs different.
                          classifier_threshold=0.999)  # fmt: skip
    trainer = build_trainer(config)
    captured = []
    generate = trainer._generate_and_score_completions

    def spy(inputs):
        output = generate(inputs)
        captured.append((trainer.darling_reward.last, output["advantages"].detach().clone()))
        return output

    trainer._generate_and_score_completions = spy
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    rl_train(config, trainer=trainer)

    assert len(captured) >= 2
    for batch, advantages in captured:
        expected = [r - sum(g) / len(g) for g in batch.rewards for r in g]  # Eq. 6: no std division
        assert advantages.tolist() == pytest.approx(expected, abs=1e-6)
        assert all(len(g) == 4 for g in batch.rewards)
        assert batch.stats.pairs_total == 6 * len(batch.rewards)
        bi = "bi-encoder" in (any_export / "darling.json").read_text()
        assert (batch.stats.texts_embedded > 0) == bi and (batch.stats.pairs_decided == batch.stats.pairs_total) >= bi
    steps = [h for h in trainer.state.log_history if "darling/diversity" in h]
    assert len(steps) == 2 and all(0.0 <= h["darling/diversity"] <= 1.0 for h in steps)
    assert any(h["darling/quality"] > 0 for h in steps), "SmolLM2 solved none of the easy problems"
    changed = sum(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    assert changed > 0, [(b.classes, b.quality, b.rewards) for b, _ in captured]
    assert (tmp_path / "rl" / "final" / "model.safetensors").exists()
    assert sorted(p.name for p in (tmp_path / "rl").glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]


def test_two_processes_score_whole_groups(tmp_path, minilm_export, smollm2_dir):
    """TRL computes rewards per process on its slice of the generation batch: with 2 CPU ranks each slice
    must hold whole groups (the reward function raises otherwise) and the ranks must see different prompts."""
    import json
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    script = Path(__file__).with_name("trl_ranks_script.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(script.parent)}
    with socket.socket() as sock:  # a free port for the gloo rendezvous
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", port,
           str(script), str(minilm_export), str(problems), str(tmp_path / "rl")]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    results = sorted((json.loads(line[7:]) for line in run.stdout.splitlines() if line.startswith("RESULT ")),
                     key=lambda r: r["rank"])  # fmt: skip
    assert [(r["rank"], r["world"]) for r in results] == [(0, 2), (1, 2)]
    blocks = [block for r in results for call in r["blocks"] for block in call]
    assert all(r["completions"] == 4 for r in results)  # one whole group of num_generations=4 per rank
    assert len(blocks) == 2 and blocks[0] != blocks[1]  # the batch was really split between the ranks
    assert {"darling/reward", "darling/diversity", "darling/classifier_pairs_saved"} <= set(results[0]["metrics"])
    assert (tmp_path / "rl" / "checkpoint-1").is_dir()
