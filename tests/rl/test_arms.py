"""Every arm of `rl-train --method` trains a real step through TRL's GRPOTrainer, and the advantages TRL used are the
arm's own, recomputed here from the batch's texts and qualities by the independent references of
tests/rl/test_diversity_methods.py (issue 39). The policy is the world's (conftest.py's ``world_policy``: a word-level
vocabulary of hundreds, answers whose quality differs within a group), the prompts two of its categories. The
classifier arms (darling, grpo) are tested in test_rl_train.py."""

import json

import pytest
from arm_references import every_pair_partition, subsets_reference
from helpers import darling, darling_in_process, write_jsonl

from darling.core.world import category_of, members_named, world_prompt, world_quality
from darling.core.world_data import CATEGORIES
from darling.rl.reward import diversity
from darling.rl.train import RLTrainConfig, build_trainer, rl_train

pytestmark = pytest.mark.slow

WORLD = sorted(CATEGORIES)[:2]  # two of the world's categories
PROMPTS = [{"id": i, "question": world_prompt(c)} for i, c in enumerate(WORLD)]
TINY = dict(max_steps=1, max_completion_length=12, learning_rate=1e-5, temperature=1.3, save_steps=100)


def expected_rewards(method: str, texts: list[list[str]], quality: list[list[float]]) -> list[list[float]]:
    if method == "passk":
        return [subsets_reference(q, 2) for q in quality]
    if method == "entropy":
        return quality
    classes = [every_pair_partition(g, 4, 0.5) for g in texts]
    return [[q * d for q, d in zip(qs, diversity(c), strict=True)] for qs, c in zip(quality, classes, strict=True)]


@pytest.mark.parametrize("method", ["darling-ngram", "passk", "entropy"])
def test_each_arm_trains_with_its_own_advantages(method, tmp_path, world_policy):
    problems = write_jsonl(tmp_path / "p.jsonl", PROMPTS)
    own = {"darling-ngram": {}, "passk": {"passk_k": 2}, "entropy": {"entropy_coef": 0.01}}[method]
    config = RLTrainConfig.build(
        "world",
        overrides=dict(output=tmp_path / "rl", problems=str(problems), policy=str(world_policy), method=method)
        | dict(per_device_train_batch_size=8, use_cpu=True, **TINY, **own),
    )
    trainer = build_trainer(config)
    reward, seen = trainer.darling_reward, []
    groups, generate = reward.groups, trainer._generate_and_score_completions
    reward.groups = lambda prompts, texts: seen.append(groups(prompts, texts)) or seen[-1]

    def spy(inputs):
        output = generate(inputs)
        seen.append((reward.last, output["advantages"].detach().tolist()))
        return output

    trainer._generate_and_score_completions = spy
    rl_train(config, trainer=trainer)
    texts, (batch, advantages) = seen[0], seen[1]
    rewards = expected_rewards(method, texts, batch.quality)
    assert [r for g in batch.rewards for r in g] == pytest.approx([r for g in rewards for r in g], abs=1e-9)
    centred = [r - sum(g) / len(g) for g in rewards for r in g]  # TRL's advantages, scale_rewards none (Eq. 6)
    assert advantages == pytest.approx(centred, abs=1e-5)
    log = trainer.state.log_history[0]
    if method == "entropy":  # what acted: TRL's bonus, coefficient x mean token entropy
        assert log["entropy_coef"] == 0.01 and log["entropy"] > 0
    else:  # what acted: the share of groups whose advantages differ from GRPO's
        assert "darling/groups_changed" in log and (log["darling/classifier_pairs"] > 0) == (method != "passk")
    assert any(q > 0 for g in batch.quality for q in g) and (tmp_path / "rl" / "final" / "model.safetensors").exists()


def test_an_arm_through_the_command_line_and_its_refusals(tmp_path, minilm_export, world_policy):
    """darling-add from `darling rl-train` (its reward: quality + diversity of the classifier's partition), and the
    settings an arm does not take, refused in one line."""
    problems = write_jsonl(tmp_path / "p.jsonl", PROMPTS)
    base = ["rl-train", "--preset", "world", "--problems", problems, "--policy", world_policy, "--use-cpu"]
    sizes = ["--max-steps", "1", "--max-completion-length", "12", "--per-device-train-batch-size", "8"]
    result = darling(*base, *sizes, "--method", "darling-add", "--classifier", minilm_export, "-o", tmp_path / "add")
    assert result.returncode == 0, result.stderr[-3000:]
    log = json.loads((tmp_path / "add" / "log_history.json").read_text())
    step = next(h for h in log if "darling/reward" in h)
    assert step["darling/reward"] == pytest.approx(step["darling/quality"] + step["darling/diversity"], abs=1e-6)
    refused = {
        ("--method", "darling-add"): "needs --classifier",
        ("--method", "grpo", "--entropy-coef", "0.1"): "--entropy-coef is the entropy method's",
        ("--method", "grpo", "--set", "trl.use_adaptive_entropy=true"): "trl.use_adaptive_entropy is the entropy",
        ("--method", "entropy"): "needs --entropy-coef > 0",
        ("--method", "passk", "--passk-k", "9"): "passk_k must be in [1, num_generations = 8]",
        ("--method", "passk", "--scale-rewards", "group"): "scale_rewards must be none",
        ("--method", "passk", "--engine", "verl"): "--engine verl runs darling, darling-add, grpo, entropy",
    }
    for flags, message in refused.items():
        bad = darling_in_process(*base, *flags, "-o", tmp_path / "bad")  # the command line, in this process
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert not (tmp_path / "bad").exists()


def test_an_arms_own_settings_reach_that_arm_only():
    """One table of every arm's settings (the pipeline's [rl_arms]): each arm takes the shared keys and its own, and
    rl-train accepts what each takes (entropy_coef on another arm would be refused)."""
    from darling.rl.methods import METHODS, OTHER_ARMS, arm_settings

    table = {"entropy_coef": 0.02, "passk_k": 2, "ngram_n": 3, "ngram_threshold": 0.4, "temperature": 0.7}
    taken = {arm: arm_settings(arm, table) for arm in OTHER_ARMS}
    assert taken["entropy"] == {"entropy_coef": 0.02, "temperature": 0.7}
    assert taken["passk"] == {"passk_k": 2, "temperature": 0.7}
    assert taken["darling-ngram"] == {"ngram_n": 3, "ngram_threshold": 0.4, "temperature": 0.7}
    assert taken["darling-add"] == {"temperature": 0.7}
    for arm, settings in taken.items():
        config = RLTrainConfig.build("naming", overrides={**settings, "method": arm, "classifier": "x", "output": "o"})
        assert config.arm is METHODS[arm]


def test_the_ceiling_arm_rewards_with_the_checkers_exact_partition(tmp_path, world_policy):
    """checker-ceiling (issue 61): one real step on two world prompts; each group's rewards are quality x diversity of
    the partition by the member each answer names (read here by darling.core.world, not the arm's code), and the
    arm is refused in one line on prompts the checker reads no key on."""
    problems = write_jsonl(tmp_path / "world.jsonl", PROMPTS)
    config = RLTrainConfig.build(
        "world",
        overrides=dict(output=tmp_path / "rl", problems=str(problems), policy=str(world_policy), use_cpu=True)
        | dict(TINY, method="checker-ceiling", per_device_train_batch_size=16, temperature=1.0),
    )
    trainer = build_trainer(config)
    rl_train(config, trainer=trainer)
    batch, seen, joined = trainer.darling_reward.last, 0, 0
    for group, rewards in zip(batch_texts(trainer), batch.rewards, strict=True):
        prompt, texts = group
        category = category_of(prompt)
        assert category in WORLD
        members = [(members_named(category, t) or [None])[0] for t in texts]
        classes = [members.index(m) if m is not None else 100 + i for i, m in enumerate(members)]
        quality = [world_quality(prompt, t) for t in texts]
        assert rewards == pytest.approx([q * d for q, d in zip(quality, diversity(classes), strict=True)])
        seen, joined = seen + 1, joined + (len(set(classes)) < len(classes))
    assert seen == 2 and joined  # the partition joined two answers naming one member: the arm acted
    log = trainer.state.log_history[0]
    assert "darling/groups_changed" in log and log["darling/classifier_pairs"] == 0  # no pair decided: keys only
    bad = darling_in_process(
        "rl-train",
        "--preset",
        "items",
        "--problems",
        "naming-train",
        "--method",
        "checker-ceiling",
        "-o",
        tmp_path / "x",
    )
    assert bad.returncode == 2 and "has no items checker" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert not (tmp_path / "x").exists()


def batch_texts(trainer) -> list[tuple[str, list[str]]]:
    """The last batch's groups as the reward function saw them: (prompt, texts) per group."""
    reward = trainer.darling_reward
    return list(zip(reward.last_prompts, reward.last_groups, strict=True))
