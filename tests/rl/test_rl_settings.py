"""What `rl-train` and the verl entry point hand to the models and to TRL, checked without training: where the
in-process reward models run (each rank's accelerator, or the device given), how the policy loads, the paper's
prompt, every GRPOConfig field reachable (and a typo refused), TRL's vLLM settings."""

from pathlib import Path

import pytest
import torch
from helpers import assert_one_line_error, darling

from darling.core.errors import UserInputError
from darling.rl.config import RLTrainConfig, trl_fields
from darling.rl.train import build_quality, build_scorer, grpo_args


def test_the_default_device_is_this_ranks_accelerator(monkeypatch):
    """Under torchrun / accelerate each rank's in-process models go to its own GPU (LOCAL_RANK), not its CPU."""
    from darling.core.devices import rank_device

    assert rank_device() == "cpu"  # no CUDA here
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert rank_device() == "cuda:3"
    monkeypatch.delenv("LOCAL_RANK")
    assert rank_device() == "cuda:0"


@pytest.fixture(scope="module")
def tiny_reward_model(tmp_path_factory, tiny_bert_dir) -> Path:
    """A one-output sequence classifier (a reward model's shape) on the tiny BERT: plumbing, not judgement."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    path = tmp_path_factory.mktemp("tiny-rm")
    config = BertConfig.from_pretrained(tiny_bert_dir, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(path)
    return path


def test_in_process_reward_models_go_to_the_device_given_or_the_ranks(
    tmp_path, monkeypatch, any_export, tiny_reward_model
):
    """The classifier, a reward model and the relevance encoder each follow their device option; left unset, each
    goes where rank_device() says (here replaced by "meta", a device the CPU has, to see where they land)."""
    import darling.core.devices
    from darling.rl.verl_reward import VerlSettings, scorer

    def where(model) -> str:  # a bi-encoder's encoder (its a and b stay plain numbers on the CPU)
        return next(getattr(model, "backbone", model).parameters()).device.type

    base = {"output": tmp_path, "classifier": any_export}
    scored = build_scorer(RLTrainConfig.build("cpu", overrides={**base, "classifier_device": "meta"}))
    assert where(scored.model) == "meta"
    monkeypatch.setattr(darling.core.devices, "rank_device", lambda: "meta")  # what --device auto resolves to
    assert where(build_scorer(RLTrainConfig.build("cpu", overrides=base)).model) == "meta"
    reward_model = build_quality(RLTrainConfig.build("cpu", overrides={**base, "reward_model": tiny_reward_model}))
    assert where(reward_model.model.model) == "meta"
    relevance = build_quality(RLTrainConfig.build("naming", overrides={**base, "reward_model_device": "cpu"}))
    assert where(relevance.score.relevance.model) == "cpu"  # given: not the rank's
    assert where(scorer(VerlSettings(classifier=str(any_export), threshold=0.11)).model) == "meta"
    served = build_scorer(RLTrainConfig.build("cpu", overrides={**base, "classifier_urls": ["http://127.0.0.1:9"]}))
    assert not hasattr(served, "model")  # served replicas: nothing loads in this process


def test_paper_math_reaches_trl_as_the_official_runs_set_it(tmp_path):
    """The base-model prompt (not the CPU presets' "Give a short answer"), the policy loaded in bf16 when training in
    bf16 (TRL's own default is fp32), the grpo table's vLLM memory, sleep and tensor-parallel settings, logging."""
    overrides = {"output": tmp_path, "classifier": tmp_path, "use_cpu": True, "use_vllm": False}
    config = RLTrainConfig.build("paper-math", overrides=overrides)
    # The official math runs' prompt (verl's math preprocessing, used by DARLING's math scripts; rl/presets/paper-math)
    official = "{problem} Let's think step by step and output the final answer within \\boxed{}."
    assert config.user_template == official and "Give a short answer" not in config.user_template
    args = grpo_args(config)
    assert args.model_init_kwargs == {"dtype": "bfloat16"} and args.bf16
    assert (args.vllm_gpu_memory_utilization, args.vllm_enable_sleep_mode, args.vllm_tensor_parallel_size) == (
        0.4,
        True,
        1,
    )
    assert args.report_to == ["tensorboard"] and args.scale_rewards == "none" and args.loss_type == "dapo"
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.steps_per_generation) == (8, 8, 32)
    fp32 = grpo_args(RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo"}))
    assert fp32.model_init_kwargs == {"dtype": "float32"} and fp32.report_to == []  # "none": no logger
    server = RLTrainConfig.build(
        "cpu",
        overrides={"output": tmp_path, "method": "grpo", "vllm_mode": "server", "vllm_server_port": 8200},
    )
    assert (grpo_args(server).vllm_server_host, grpo_args(server).vllm_server_port) == ("127.0.0.1", 8200)


def test_any_grpo_config_field_after_the_commands_own(tmp_path):
    more = {
        "output": tmp_path,
        "method": "grpo",
        "trl.epsilon_high": 0.28,
        "trl.model_init_kwargs": '{"dtype": "bfloat16"}',
    }
    args = grpo_args(RLTrainConfig.build("cpu", overrides=more))
    assert args.epsilon_high == 0.28 and args.model_init_kwargs == {"dtype": "bfloat16"}
    with pytest.raises(
        UserInputError, match="trl.learning_rate: rl-train sets it from its own setting; use --learning-rate"
    ):
        RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", "trl.learning_rate": 1})
    with pytest.raises(UserInputError, match="trl.epsilon_hihg: not a field of TRL"):
        grpo_args(RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", "trl.epsilon_hihg": 1}))
    typo = darling(
        "rl-train",
        "--preset",
        "cpu",
        "--method",
        "grpo",
        "--set",
        "trl.epsilon_hihg=1",
        "--output",
        str(tmp_path / "x"),
    )
    assert_one_line_error(typo, "trl.epsilon_hihg: not a field of TRL")  # before any model loads
    assert not (tmp_path / "x").exists()


# rl-train's settings that are darling's own (data, the reward, devices, the verl recipe): they never reach TRL
DARLING_OWN = {
    "policy", "problems", "limit", "user_template", "method", "classifier", "classifier_urls",
    "classifier_threshold", "classifier_device", "quality", "max_words", "strict_length", "reward_model",
    "reward_model_urls", "reward_model_device", "server_timeout", "server_retries", "norm", "correct_only",
    "floor", "ngram_n", "ngram_threshold", "passk_k", "checker", "prune_checkpoints", "threads", "engine", "verl_gpus",
    "verl_nodes", "dry_run", "trl", "trainable_layers", "eval_problems", "eval_limit", "eval_groups",
}  # fmt: skip


def test_every_setting_reaches_trl_once_or_is_darlings_own(tmp_path):
    """One source per setting: a field marked for TRL reaches GRPOConfig under that name (grpo_args builds it from
    the marks), a field named here never does, and no field is both or neither; `--set trl.X` cannot set a TRL field
    a second time."""
    from dataclasses import fields

    from trl import GRPOConfig

    names = {f.name for f in fields(RLTrainConfig)}
    to_trl = trl_fields()
    assert set(to_trl.values()) | DARLING_OWN == names and not set(to_trl.values()) & DARLING_OWN
    assert set(to_trl) <= {f.name for f in fields(GRPOConfig)}
    config = RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", "learning_rate": 3e-5})
    args = grpo_args(config)
    for trl_name, name in to_trl.items():
        want = str(config.output) if name == "output" else getattr(config, name)
        if name == "steps_per_generation" and want is None:  # TRL's default: the accumulation steps
            want = config.gradient_accumulation_steps
        assert getattr(args, trl_name) == (want if name != "report_to" else []), trl_name  # "none": TRL's []
    for trl_name in to_trl:
        with pytest.raises(UserInputError, match=f"trl.{trl_name}: rl-train sets it from its own setting"):
            RLTrainConfig.build("cpu", overrides={"output": tmp_path, "method": "grpo", f"trl.{trl_name}": 1})


def test_the_darling_reward_settings_are_checked_once_for_rl_train_and_verl():
    """correct_only with floor 0 and a floor out of range: refused by RewardConfig, in both entry points' words."""
    from darling.rl.reward import RewardConfig
    from darling.rl.verl_reward import VerlSettings

    for bad, message in [({"correct_only": True}, "correct_only with floor 0"), ({"floor": 2.0}, "floor must be in")]:
        with pytest.raises(ValueError, match=message):
            RewardConfig(**bad).check_learning_signal()
        with pytest.raises(ValueError, match=message):
            VerlSettings.from_kwargs({"classifier": "clf", **bad})
        with pytest.raises(UserInputError, match=message):
            RLTrainConfig.build("cpu", overrides={"output": "x", "classifier": "clf", **bad})
    RewardConfig(correct_only=True, combine="quality").check_learning_signal()  # the GRPO baseline: allowed
    RewardConfig(correct_only=True)  # what the baseline measures DARLING's term with: it may hold them
    RLTrainConfig.build("cpu", overrides={"output": "x", "method": "grpo", "correct_only": True})


def test_the_cpu_presets_train_without_recomputing_activations(tmp_path):
    """TRL's GRPO recomputes every layer in the backward pass by default (gradient_checkpointing); a small policy on
    CPU has memory to spare, so the CPU presets turn it off (a forward pass a step); the flag turns it back on."""
    for preset in ("naming", "cpu"):
        config = RLTrainConfig.build(preset, overrides={"output": tmp_path, "method": "grpo"})
        assert grpo_args(config).gradient_checkpointing is False, preset
    on = RLTrainConfig.build("naming", overrides={"output": tmp_path, "method": "grpo", "gradient_checkpointing": True})
    assert grpo_args(on).gradient_checkpointing is True
    from dataclasses import fields

    from trl import GRPOConfig

    default = {f.name: f.default for f in fields(RLTrainConfig)}["gradient_checkpointing"]
    assert default is {f.name: f.default for f in fields(GRPOConfig)}["gradient_checkpointing"] is True  # TRL's


def test_the_naming_preset_trains_where_the_device_rule_says(tmp_path):
    """The naming preset (the cpu chain's RL) leaves use_cpu off: TRL then takes this rank's GPU where CUDA is
    present, and the CPU here; `--use-cpu` still pins the CPU."""
    config = RLTrainConfig.build("naming", overrides={"output": tmp_path, "method": "grpo"})
    args = grpo_args(config)
    assert args.use_cpu is False
    assert args.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    pinned = RLTrainConfig.build("naming", overrides={"output": tmp_path, "method": "grpo", "use_cpu": True})
    assert grpo_args(pinned).use_cpu is True
