"""The direction of DARLING's update, through TRL's own code: one optimiser step of `rl-train`'s GRPOTrainer (its
advantage computation, loss type and scaling as the naming preset configures them) on fixed groups of real answers
with repeats, once with the DARLING reward and once with GRPO's. DARLING must move probability from the repeated
answer to the rarer ones more than GRPO does.

The groups are real SmolLM2-135M-Instruct samples (temperature 0.7) of the policy the main job's GRPO run trained for
16 steps, on two naming-train prompts: a policy that already repeats itself. They replace TRL's sampling (its
``_generate_single_turn``); everything after it is TRL's. The classifier is a real bi-encoder export at a threshold
that joins exactly the identical texts, so the classes are the repeated answers themselves.
"""

import json
import math

import pytest
import torch
from helpers import write_jsonl

from darling.rl.reward import batch_advantages
from darling.rl.train import RLTrainConfig, build_trainer, rl_train

pytestmark = pytest.mark.slow

GROUPS = {
    "Name a colour. Answer with the name only.": ["Blue", "green", "Red", "Red", "Blue", "Red", "red", "Red"],
    "Name a country in Europe. Answer with the name only.": [
        *["Europa"] * 6,
        "Albania",
        "Belarus",
    ],
}


def one_step(tmp_path, export, diversity: bool, quality: str) -> dict:
    """One `rl-train` step (naming preset) on GROUPS; per group, log p of each answer before and after, and the
    advantages TRL computed."""
    meta = json.loads((export / "darling.json").read_text())
    identical = 1 / (1 + math.exp(-(meta["scale"] * (1 - 1e-6) + meta["bias"])))  # joins identical texts only
    problems = write_jsonl(tmp_path / "prompts.jsonl", [{"id": i, "question": p} for i, p in enumerate(GROUPS)])
    name = "darling" if diversity else "grpo"
    config = RLTrainConfig.build(
        "naming",
        overrides=dict(
            output=tmp_path / name,
            classifier=export,
            classifier_threshold=identical,
            problems=str(problems),
            limit=None,
            method="darling" if diversity else "grpo",
            quality=quality,
            max_steps=1,
            seed=0,
        ),
    )
    trainer = build_trainer(config)
    tokenizer = trainer.processing_class
    eos = trainer.eos_token_ids[0]
    seen: dict[str, dict] = {}

    def log_probs(prompt_ids: list[int], answers: list[str]) -> dict[str, float]:
        out = {}
        with torch.no_grad():
            for answer in dict.fromkeys(answers):
                ids = tokenizer(answer, add_special_tokens=False)["input_ids"] + [eos]
                logits = trainer.model(torch.tensor([prompt_ids + ids])).logits[0, len(prompt_ids) - 1 : -1]
                out[answer] = float(torch.log_softmax(logits.float(), -1)[range(len(ids)), ids].sum())
        return out

    def fixed_answers(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        completions, k = [], {}
        for ids in prompt_ids:
            prompt = next(p for p in GROUPS if p in tokenizer.decode(ids))
            answers = GROUPS[prompt]
            if prompt not in seen:
                seen[prompt] = {"prompt_ids": list(ids), "before": log_probs(list(ids), answers)}
            k[prompt] = k.get(prompt, -1) + 1
            completions.append(tokenizer(answers[k[prompt]], add_special_tokens=False)["input_ids"] + [eos])
        return completions, None

    trainer._generate_single_turn = fixed_answers
    captured = {}
    generate = trainer._generate_and_score_completions

    def spy(inputs):
        output = generate(inputs)
        captured["advantages"] = output["advantages"].tolist()
        captured["completions"] = tokenizer.batch_decode(output["completion_ids"], skip_special_tokens=True)
        return output

    trainer._generate_and_score_completions = spy
    rl_train(config, trainer=trainer)
    for prompt, record in seen.items():
        record["after"] = log_probs(record["prompt_ids"], GROUPS[prompt])
    reward = trainer.darling_reward.last
    return {"seen": seen, "reward": reward, "config": config, **captured}


def gap_change(record: dict, answers: list[str]) -> float:
    """How far the step moved log p(the repeated answer) against the mean log p of the answers given once."""
    repeated = max(set(answers), key=answers.count)
    once = [a for a in set(answers) if answers.count(a) == 1]
    change = {a: record["after"][a] - record["before"][a] for a in set(answers)}
    return change[repeated] - sum(change[a] for a in once) / len(once)


@pytest.mark.parametrize("quality", ["short-answer", "relevant-short-answer"])
def test_darling_moves_probability_from_repeated_to_rarer_answers_more_than_grpo(
    tmp_path, minilm_bi_export, smollm2_dir, quality
):
    """short-answer: every answer has the same quality (one word), so GRPO's advantages are all 0 and its step
    leaves the policy where it was, while DARLING's lowers the repeated answer against the rarer ones.
    relevant-short-answer (the naming preset's quality): qualities differ; DARLING's step still moves the repeated
    answer down against the rarer ones by more than GRPO's. The advantages TRL used are the ones darling computes
    (batch_advantages at the preset's scale_rewards), and the logged share of groups the term changed is 1."""
    runs = {name: one_step(tmp_path, minilm_bi_export, name == "darling", quality) for name in ("darling", "grpo")}
    for name, run in runs.items():
        reward = run["reward"]
        flat = [a for group in batch_advantages(reward.rewards, run["config"].scale_rewards) for a in group]
        assert run["advantages"] == pytest.approx(flat, abs=1e-6), name
        assert sorted(run["completions"]) == sorted(a for g in GROUPS.values() for a in g)
        assert reward.effect.share_changed == 1.0  # both groups repeat: DARLING's term changes (would change) both
        assert reward.term_applied == (name == "darling")
    for prompt, answers in GROUPS.items():
        darling = gap_change(runs["darling"]["seen"][prompt], answers)
        grpo = gap_change(runs["grpo"]["seen"][prompt], answers)
        print(
            f"{quality}, {prompt!r}: log p(repeated) - log p(once) moved {darling:+.4f} (DARLING), {grpo:+.4f} (GRPO)"
        )
        assert darling < 0, (prompt, darling)  # the repeated answer lost probability against the rarer ones
        assert darling < grpo - 1e-3, (prompt, darling, grpo)
        if quality == "short-answer":  # equal qualities: GRPO has no signal at all, and did not move
            assert runs["grpo"]["advantages"] == [0.0] * 16 and abs(grpo) < 1e-6
