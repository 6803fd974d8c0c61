"""The ray engine's own logic, without a cluster: a request of n samples becomes n rows and comes back as one
result once all n are in (in sample order, whatever order Ray returns them), errors stay failures, and the engine's
flags are checked before anything starts; on CPU the engines tokenize for themselves."""

from __future__ import annotations

from helpers import assert_one_line_error, darling_in_process

from darling.core.engine_api import ChatRequest, Sampling
from darling.core.ray_engine import Gatherer, RayDataEngine, request_rows, row_shape, seed_for_sample


def requests() -> list[ChatRequest]:
    user = ({"role": "user", "content": "2 + 2?"},)
    return [
        ChatRequest("a", user, Sampling(n=3, temperature=1.0, max_tokens=8, seed=5)),
        ChatRequest("b", user, Sampling(n=1, temperature=0.0, max_tokens=8), choices=("[[yes]]", "[[no]]")),
    ]


def test_a_request_of_n_samples_is_n_rows_each_seeded_apart():
    rows = request_rows(requests())
    assert [(r["request"], r["sample"]) for r in rows] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    seeds = [r["sampling_params"]["seed"] for r in rows[:3]]
    assert seeds == [seed_for_sample(5, i) for i in range(3)] and len(set(seeds)) == 3
    assert rows[3]["sampling_params"]["structured_outputs"] == {"choice": ["[[yes]]", "[[no]]"]}
    assert "seed" not in rows[3]["sampling_params"]
    assert row_shape(rows[0]) != row_shape(rows[3])  # two schemas: two datasets


def test_samples_are_gathered_in_order_once_and_errors_stay_failures():
    got = []
    gatherer = Gatherer(requests(), got.append)
    out = {"generated_text": "", "num_generated_tokens": 8}
    gatherer.add({"request": 0, "sample": 2, **out, "generated_text": "c"})
    gatherer.add({"request": 0, "sample": 0, **out, "generated_text": "a", "num_generated_tokens": 3})
    assert not got and gatherer.missing() == [0, 1]
    gatherer.add({"request": 0, "sample": 1, **out, "generated_text": "b"})
    gatherer.add({"request": 0, "sample": 1, **out, "generated_text": "b again"})  # a retried batch's copy
    assert len(got) == 1 and [c.text for c in got[0].completions] == ["a", "b", "c"]
    assert [c.finish_reason for c in got[0].completions] == ["stop", "length", "length"]
    gatherer.add({"request": 1, "sample": 0, "__inference_error__": "prompt too long"})
    assert len(got) == 2 and not got[1].ok and got[1].error == "prompt too long" and not got[1].completions
    assert gatherer.missing() == []


def test_bad_ray_settings_are_one_line_errors(tmp_path):
    args = ["datagen", "rollouts", "--problems", "arithmetic", "--limit", 1, "--model", "smollm2"]
    result = darling_in_process(*args, "--engine", "ray", "--data-parallel-size", 0, "--output", tmp_path / "o")
    assert_one_line_error(result, "--engine ray", "replicas")
    assert not (tmp_path / "o").exists()


def test_on_cpu_the_engines_tokenize_and_detokenize_themselves():
    """On CPU, Ray Data's tokenizer and detokenizer stages would be two more actor pools (a worker process each,
    importing transformers) on the engines' own cores: the engines do both, as vLLM's server does. On GPUs they stay
    Ray Data's, off the GPU workers. (The rows equal today's engine's: tests/core/test_ray_engine.py.) The driver's
    Ray Data is part of the README's set-up (the ray-driver extra): no skip."""
    cpu = RayDataEngine(devices="cpu").processor_config("m")
    gpu = RayDataEngine(devices="auto").processor_config("m")
    assert cpu.tokenize_stage is False and cpu.detokenize_stage is False
    assert gpu.tokenize_stage is True and gpu.detokenize_stage is True
    assert cpu.chat_template_stage is True and gpu.chat_template_stage is True  # the template: Ray Data's on both
