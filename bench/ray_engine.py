"""`--engine ray` against the single-process engine (`vllm`: a vLLM server this process starts) on the same CPU work:
SmolLM2 rollout-like requests (free text) and judge-like requests (regex-structured verdicts), greedy, at two sizes,
each engine cold as a command runs it (the vLLM server or the Ray Data pipeline and its vLLM actor started, used,
stopped). A line through the two sizes separates the fixed cost (start-up) from the cost per request; Ray's overhead
per request is the difference of the slopes. Side by side in one run, on one local Ray node started with the Python
of vLLM's CPU build (its workers import vLLM), one vLLM replica for each engine.

    python bench/ray_engine.py --sizes 8 40 --out bench/results/ray_engine.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from darling.core.engine_api import ChatRequest, ChatResult, Sampling
from darling.core.local_models import smollm2_dir
from darling.core.ray_engine import RayDataEngine
from darling.core.vllm_engine import VLLMServerEngine
from darling.core.vllm_server import cpu_server_env, default_vllm_python, free_port
from darling.datagen.judge import verdict_regex


def requests(kind: str, size: int) -> list[ChatRequest]:
    greedy = Sampling(n=1, temperature=0.0, max_tokens=32)
    if kind == "rollouts":
        return [ChatRequest(i, ({"role": "user", "content": f"What is {i} + {2 * i}?"},), greedy) for i in range(size)]
    prompt = "Do these two solutions use different strategies? A: {a}. B: {b}. Answer [[yes]] or [[no]]."
    return [
        ChatRequest(
            i,
            ({"role": "user", "content": prompt.format(a=f"add {i}", b=f"count to {i}")},),
            greedy,
            regex=verdict_regex(32),
        )
        for i in range(size)
    ]


def timed_run(engine, model: str, batch: list[ChatRequest]) -> dict:
    results: list[ChatResult] = []
    start = time.perf_counter()
    engine.run(model, batch, results.append)
    engine.close()
    seconds = time.perf_counter() - start
    failed = sum(not r.ok for r in results)
    return {"seconds": round(seconds, 2), "requests": len(batch), "failed": failed}


def fit(points: list[dict]) -> dict:
    (s1, r1), (s2, r2) = [(p["seconds"], p["requests"]) for p in points]
    per_request = (s2 - s1) / (r2 - r1)
    return {"startup_s": round(s1 - per_request * r1, 2), "per_request_s": round(per_request, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=2, default=[8, 40])
    parser.add_argument("--out", type=Path, default=Path("bench/results/ray_engine.json"))
    args = parser.parse_args()
    ray = Path(default_vllm_python()).parent / "ray"
    scratch = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    env = {**os.environ, **cpu_server_env(scratch / "cache"), "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    # Once any ray.init() on this machine has saved ~/.ray/auth_token, `ray start --head` turns token auth on and this
    # process (which does not load the token) cannot connect: the cluster's mode is set here, not inherited.
    env["RAY_AUTH_MODE"] = "disabled"
    port = free_port()
    head = [ray, "start", "--head", "--port", str(port), "--num-cpus", "2", "--node-ip-address", "127.0.0.1"]
    subprocess.run(
        [*head, "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", scratch / "r"],
        env=env,
        check=True,
        capture_output=True,
    )
    model = str(smollm2_dir())
    results: dict = {"model": "SmolLM2-135M-Instruct (fp32, CPU)", "sizes": args.sizes, "engines": {}}
    try:
        for kind in ("rollouts", "judge"):
            for name in ("vllm", "ray"):
                points = []
                for size in args.sizes:
                    if name == "vllm":
                        engine = VLLMServerEngine(devices="cpu", threads=2, concurrency=32)
                    else:
                        engine = RayDataEngine(address=f"127.0.0.1:{port}", devices="cpu", threads=2, batch_size=8)
                    points.append(timed_run(engine, model, requests(kind, size)))
                    print(kind, name, points[-1], flush=True)
                results["engines"].setdefault(kind, {})[name] = {"runs": points, **fit(points)}
            pair = results["engines"][kind]
            pair["ray_overhead_per_request_s"] = round(pair["ray"]["per_request_s"] - pair["vllm"]["per_request_s"], 4)
            pair["ray_over_vllm_throughput"] = round(
                (args.sizes[1] / pair["ray"]["runs"][1]["seconds"])
                / (args.sizes[1] / pair["vllm"]["runs"][1]["seconds"]),
                3,
            )
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
