"""One device rule for every in-process model (``--device``, default auto: CUDA when present) and, on a CPU-only
machine, proof that each model's inputs go where its weights are: the model is placed on ``meta`` (a stand-in for
a GPU) and ``device_check.one_device`` records every parameter or input of a forward pass on another device."""

from __future__ import annotations

import pytest
import torch
from device_check import one_device

from darling.core.errors import UserInputError


def test_auto_is_this_ranks_gpu_when_there_is_one(monkeypatch):
    from darling.core.devices import resolve_device

    assert resolve_device("auto") == resolve_device(None) == "cpu"  # no CUDA here
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert resolve_device("auto") == "cuda:1"
    assert resolve_device("meta") == "meta"


def test_where_a_gpu_driver_loads_torch_is_asked(monkeypatch):
    """The driver probe only ever answers "no": where NVIDIA's driver library loads (stood in for here by a loader
    that succeeds), ``cuda_available`` is torch's answer."""
    from darling.core import devices

    if not devices.no_gpu_driver():
        pytest.skip("a GPU driver is on this machine: the stand-in below would prove nothing")
    assert not devices.cuda_available()  # no driver: "no", torch not asked
    monkeypatch.setattr(devices.ctypes, "CDLL", lambda name: object())
    assert not devices.no_gpu_driver() and not devices.cuda_available()  # torch's own answer on this CPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.cuda_available()


def test_a_cuda_device_that_is_not_here_is_refused_in_one_line():
    from darling.core.devices import resolve_device

    with pytest.raises(UserInputError, match=r"--device cuda:0: no CUDA here") as caught:
        resolve_device("cuda:0")
    assert "\n" not in str(caught.value)


def test_a_bi_encoder_scorer_sends_its_inputs_to_its_backbones_device(minilm_bi_export):
    """The H100 crash (index_select: index on cpu, weights on cuda:0): the scorer's device was its first
    parameter's, the scale, which stays on the CPU while the backbone moves."""
    from darling.classifier.scoring import load_scorer

    scorer = load_scorer(minilm_bi_export, device="meta")
    assert scorer.device == torch.device("meta")
    with one_device(scorer.model.backbone) as wrong:
        scorer.embed(["a sunny day", "rain"])
    assert wrong == []


def test_a_cross_encoder_scorer_sends_its_inputs_to_its_models_device(minilm_export):
    from darling.classifier.scoring import load_scorer

    scorer = load_scorer(minilm_export, device="meta")
    with one_device(scorer.model) as wrong:
        scorer.prob_equivalent([("a sunny day", "rain")])
    assert wrong == []


def test_the_hf_engine_generates_on_the_commands_device(monkeypatch, smollm2_dir):
    """eval novelty / datagen --engine hf generated on the CPU whatever the machine had: engine_options passed
    only threads. Now --device reaches the engine, and auto is CUDA when present."""
    from darling.core.engine_api import ChatRequest, Sampling
    from darling.core.engine_config import EngineConfig, engine_options
    from darling.core.engines import build_engine

    engine = build_engine(EngineConfig(engine="hf", device="meta", threads=1))
    engine._load(str(smollm2_dir))
    messages = ({"role": "user", "content": "Name a fruit."},)
    # generate() reads values before its first forward (meta has none): what it is given and the weights are checked
    given = []

    def record(ids, attention_mask, **options):
        given.extend([ids.device, attention_mask.device])
        return torch.zeros((ids.shape[0], ids.shape[1] + 2), dtype=torch.long)

    monkeypatch.setattr(engine._model, "generate", record)
    requests = [ChatRequest(key=i, messages=messages, sampling=Sampling(n=2, max_tokens=2, seed=i)) for i in range(2)]
    engine.run(str(smollm2_dir), requests, lambda result: None)
    assert given == [torch.device("meta")] * 2  # both requests in one batch, on the command's device
    assert {p.device.type for p in engine._model.parameters()} == {"meta"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert engine_options(EngineConfig(engine="hf"))["device"] == "cuda:0"


def test_eval_novelty_scores_on_its_device(tmp_path, minilm_bi_export):
    from darling.evals.config import NoveltyConfig
    from darling.evals.novelty_partition import check_classifier, load_pair_scorer

    config = NoveltyConfig(
        output=tmp_path, classifier=str(minilm_bi_export), prompts="naming-heldout", model=["smollm2"], device="meta"
    )
    scorer = load_pair_scorer(config, check_classifier(config))
    with one_device(scorer.model.backbone) as wrong:
        scorer.embed(["a sunny day", "rain"])
    assert wrong == []


def test_eval_classifiers_zero_shot_backbone_on_its_device(minilm_path):
    from darling.classifier.zero_shot import untrained_classifier

    clf = untrained_classifier(minilm_path, 32, device="meta")
    with one_device(clf.model.backbone) as wrong:
        clf.embed(["a sunny day", "rain"])
    assert wrong == []


def test_eval_compares_quality_encoder_on_its_device():
    from darling.evals.compare import quality_scorer

    score = quality_scorer("relevant-short-answer", 4, device="meta")
    encoder = score.relevance.model
    with one_device(encoder) as wrong:
        score(["Name a fruit."], ["apple"])
    assert wrong == []
    assert quality_scorer("eval", 4) is None  # eval novelty's own quality is read, not recomputed
