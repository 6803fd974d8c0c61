"""`rl-train` on the CPU: the real SmolLM2 policy, a real MiniLM classifier export, TRL's GRPOTrainer.

Checks what the paper's method requires of the loop: the DARLING reward is what TRL optimises, the
advantages TRL uses are r - mean(r) per group (no std), and the policy's weights move.
"""

from dataclasses import replace

import pytest
import torch
from helpers import assert_one_line_error, darling, darling_in_process, write_jsonl

from darling.core.errors import UserInputError
from darling.rl.reward import RewardConfig
from darling.rl.train import RLTrainConfig, build_trainer, rl_train

pytestmark = pytest.mark.slow

EASY = [
    {"id": i, "question": f"What is {a} + {b}?", "answer": str(a + b)}
    for i, (a, b) in enumerate([(2, 3), (1, 1), (4, 4), (10, 5)])
]


def test_group_splitting_settings_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="multiple of num_generations"):
        RLTrainConfig.build(
            "cpu", overrides=dict(output=tmp_path, method="grpo", num_generations=3, per_device_train_batch_size=4)
        )
    with pytest.raises(UserInputError, match="--classifier"):
        RLTrainConfig.build("cpu", overrides=dict(output=tmp_path))


def test_two_darling_steps_on_smollm2(tmp_path, minilm_export, smollm2_dir):
    """A cross-encoder export (a bi-encoder's embedding path runs in the cpu pipeline chain, tests/pipeline, and in
    tests/rl/test_rl_served.py's partitions)."""
    any_export = minilm_export
    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    config = RLTrainConfig.build(
        "cpu",
        overrides=dict(
            output=tmp_path / "rl",
            classifier=any_export,
            problems=str(problems),
            max_steps=2,
            max_completion_length=24,
            learning_rate=1e-5,
            temperature=1.2,
            # A 2-step classifier calls everything equivalent at its own threshold, so every
            # multiplicative reward would be 0 and nothing would train: make it call pairs different.
            classifier_threshold=0.999,
        ),
    )
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

    # The run's checkpoints are now there: a fresh run over them, or a resumed run with other settings, is refused.
    with pytest.raises(UserInputError, match="already holds checkpoint-2; pass --resume"):
        rl_train(config, resume=False)
    changed_lr = replace(config, learning_rate=3e-5)
    with pytest.raises(UserInputError, match="started with learning_rate=1e-05, now learning_rate=3e-05"):
        rl_train(changed_lr, resume=True)


def test_reward_ablation_options_reach_the_reward(tmp_path):
    config = RLTrainConfig.build(
        "cpu",
        overrides=dict(
            output=tmp_path, classifier=tmp_path, method="darling-add", norm="minmax", floor=0.1, correct_only=True
        ),
    )
    assert config.reward() == RewardConfig(combine="add", norm="minmax", floor=0.1, correct_only=True)
    baseline = RLTrainConfig.build("cpu", overrides=dict(output=tmp_path, method="grpo", norm="minmax"))
    assert baseline.reward().combine == "quality"
    bad = darling(
        "rl-train", "--preset", "cpu", "--method", "grpo", "--norm", "zscore", "--output", str(tmp_path / "x")
    )
    assert_one_line_error(bad, "norm must be one of identity, minmax")
    assert not (tmp_path / "x").exists()


def test_resume_needs_a_checkpoint_and_a_policy_must_exist(tmp_path):
    """Both refused with one line before any model loads and before anything is written (the first as a user runs it,
    the others through the same command line in this process)."""
    resumed = darling("rl-train", "--preset", "cpu", "--method", "grpo", "--resume", "--output", str(tmp_path / "a"))
    assert_one_line_error(resumed, "--resume given, but there is no checkpoint")
    missing = darling_in_process(
        "rl-train",
        "--preset",
        "cpu",
        "--method",
        "grpo",
        "--policy",
        str(tmp_path / "no" / "model"),
        "--output",
        str(tmp_path / "b"),
    )
    assert_one_line_error(missing, "--policy", "no such model folder")
    not_a_model = darling_in_process(
        "rl-train", "--preset", "cpu", "--method", "grpo", "--policy", str(tmp_path), "--output", str(tmp_path / "c")
    )
    assert_one_line_error(not_a_model, "not a model folder (no config.json)")
    assert not any((tmp_path / name).exists() for name in "abc")


def test_rewards_and_advantages_when_the_classifier_joins_responses(tmp_path, minilm_bi_export, smollm2_dir):
    """A real classifier that joins some responses, so diversity is not 1 everywhere: the bi-encoder export at a
    threshold that joins exactly the responses whose texts are identical (identical token ids -> cosine 1).
    The rewards and the advantages TRL used are checked against quality x diversity computed by hand from the
    completions (classes = identical texts, Eq. 4), not from darling's own partition."""
    import json
    import math

    meta = json.loads((minilm_bi_export / "darling.json").read_text())
    at_cos = lambda c: 1 / (1 + math.exp(-(meta["scale"] * c + meta["bias"])))  # noqa: E731
    problems = write_jsonl(tmp_path / "easy.jsonl", EASY)
    config = RLTrainConfig.build(
        "cpu",
        overrides=dict(
            output=tmp_path / "rl",
            classifier=minilm_bi_export,
            problems=str(problems),
            max_steps=2,
            max_completion_length=8,
            temperature=0.5,
            learning_rate=1e-5,
            classifier_threshold=at_cos(1 - 1e-6),
        ),
    )
    assert at_cos(1 - 1e-6) < at_cos(1.0)  # the export's a > 0: identical texts are above the threshold
    trainer = build_trainer(config)
    seen = []

    def quality(prompts, completions, columns):  # any callable may be the quality (README); this one is known
        seen.append(list(completions))
        return [1.0 if any(ch.isdigit() for ch in text) else 0.5 for text in completions]

    trainer.darling_reward.quality = quality
    captured = []
    generate = trainer._generate_and_score_completions

    def spy(inputs):
        output = generate(inputs)
        captured.append(output["advantages"].detach().clone().tolist())
        return output

    trainer._generate_and_score_completions = spy
    rl_train(config, trainer=trainer)

    joined = 0
    for texts, advantages in zip(seen, captured, strict=True):
        for k in range(0, len(texts), 4):
            group = texts[k : k + 4]
            div = [(4 - group.count(t)) / 3 for t in group]  # Eq. 4 with classes = identical texts
            rewards = [(1.0 if any(ch.isdigit() for ch in t) else 0.5) * d for t, d in zip(group, div, strict=True)]
            mean = sum(rewards) / 4
            assert advantages[k : k + 4] == pytest.approx([r - mean for r in rewards], abs=1e-6), group
            joined += len(set(group)) < 4
    assert joined > 0, seen  # some group really had responses joined, so diversity mattered
    assert any(a != 0 for adv in captured for a in adv)


def test_resume_skips_a_checkpoint_whose_save_was_cut_short(tmp_path):
    """A kill or a full disk during a save leaves checkpoint-N without trainer_state.json (the Trainer writes it
    last): resuming takes the newest complete one, in step order (checkpoint-10 after checkpoint-8)."""
    from darling.rl.train import last_complete_checkpoint

    assert last_complete_checkpoint(tmp_path) is None
    for step, complete in ((2, True), (8, True), (10, True), (12, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x")
        if complete:
            (folder / "trainer_state.json").write_text("{}")
    assert last_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-10"


def test_trainable_layers_trains_the_top_layers_only(tmp_path, minilm_bi_export, world_policy):
    """`rl-train --trainable-layers 1` through its command line: after a step, the top one of the world policy's 2
    layers and the final norm moved; every other weight (embeddings, tied head, layer 0) is the starting policy's."""
    from safetensors.torch import load_file

    from darling.core.world import world_prompt
    from darling.core.world_data import CATEGORIES

    problems = write_jsonl(tmp_path / "world.jsonl", [{"id": 0, "question": world_prompt(sorted(CATEGORIES)[0])}])
    result = darling(
        "rl-train", "--preset", "world", "--policy", world_policy, "--output", tmp_path / "rl",
        "--classifier", minilm_bi_export, "--problems", problems, "--method", "grpo", "--max-steps", "1",
        "--per-device-train-batch-size", "8", "--save-steps", "100", "--learning-rate", "1e-2",
        "--trainable-layers", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    start, end = (
        load_file(world_policy / "model.safetensors"),
        load_file(tmp_path / "rl" / "final" / "model.safetensors"),
    )
    moved = {name for name in start if not torch.equal(start[name], end[name])}
    assert moved and all(n.startswith(("model.layers.1.", "model.norm.")) for n in moved), moved
    assert any(n.startswith("model.layers.1.") for n in moved) and "model.embed_tokens.weight" in start
