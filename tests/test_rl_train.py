"""`rl-train` on the CPU: the real SmolLM2 policy, a real MiniLM classifier export, TRL's GRPOTrainer.

Checks what the paper's method requires of the loop: the DARLING reward is what TRL optimises, the
advantages TRL uses are r - mean(r) per group (no std), and the policy's weights move.
"""

import pytest
import torch
from helpers import synthetic_pairs, write_jsonl

from darling.classifier.config import build_config as classifier_config
from darling.classifier.train import train_classifier
from darling.errors import UserInputError
from darling.rl.train import build_config, build_trainer, rl_train

pytestmark = pytest.mark.slow

EASY = [{"id": i, "question": f"What is {a} + {b}?", "answer": str(a + b)}
        for i, (a, b) in enumerate([(2, 3), (1, 1), (4, 4), (10, 5)])]  # fmt: skip


@pytest.fixture(scope="module")
def minilm_classifier(tmp_path_factory, minilm_path):
    tmp = tmp_path_factory.mktemp("rl-clf")
    data = write_jsonl(tmp / "pairs.jsonl", synthetic_pairs(40))
    cfg = classifier_config("cpu", overrides=dict(max_steps=2, max_tokens_per_response=32, num_threads=1))
    return train_classifier(cfg, data, tmp / "clf", progress=False).output


def test_group_splitting_settings_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="multiple of num_generations"):
        build_config("cpu", output=tmp_path, diversity=False, num_generations=3, per_device_train_batch_size=4).check()
    with pytest.raises(UserInputError, match="--classifier"):
        build_config("cpu", output=tmp_path).check()


def test_two_darling_steps_on_smollm2(tmp_path, minilm_classifier, smollm2_dir):
    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    config = build_config("cpu", output=tmp_path / "rl", classifier=minilm_classifier, problems=str(problems),
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
    steps = [h for h in trainer.state.log_history if "darling/diversity" in h]
    assert len(steps) == 2 and all(0.0 <= h["darling/diversity"] <= 1.0 for h in steps)
    assert any(h["darling/quality"] > 0 for h in steps), "SmolLM2 solved none of the easy problems"
    changed = sum(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    assert changed > 0, [(b.classes, b.quality, b.rewards) for b, _ in captured]
    assert (tmp_path / "rl" / "final" / "model.safetensors").exists()
    assert sorted(p.name for p in (tmp_path / "rl").glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
