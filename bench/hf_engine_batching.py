"""The hf engine's batching across prompts: seconds and texts, one request a batch against ``max_batch_rows`` rows.

Eval novelty and eval math on CPU are the hf engine generating ``k`` answers a prompt. A batch of one request (its
``k`` rows) reads every weight once a decoding step for ``k`` rows; a batch of several requests reads them once for
all of their rows. Both settings run here one after the other on the same requests (the main job's eval novelty:
SmolLM2, the held-out naming prompts, 8 answers at temperature 0.7, at most 24 tokens, one thread), and the bench
prints each one's seconds, their ratio, and the share of requests whose texts are identical in both (each request
draws its own noise, so only float rounding of padded batches can change a text).

    .venv/bin/python bench/hf_engine_batching.py --prompts 24 --rows 64
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from darling.core.engine_api import ChatRequest, ChatResult, Sampling
from darling.core.hf_engine import HFEngine
from darling.evals.novelty_prompts import load_prompts


def texts(engine: HFEngine, model: str, requests: list[ChatRequest]) -> tuple[float, dict]:
    out: dict = {}

    def keep(result: ChatResult) -> None:
        out[result.request.key] = [c.text for c in result.completions]

    start = time.perf_counter()
    engine.run(model, requests, keep)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--prompts", type=int, default=24, help="held-out naming prompts (default 24, the main job's)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--rows", type=int, default=64, help="max_batch_rows of the batched engine")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    prompts = load_prompts("naming-heldout", args.prompts)
    sampling = [Sampling(args.k, 0.7, 1.0, args.max_tokens, seed) for seed in range(len(prompts))]
    pairs = zip(prompts, sampling, strict=True)
    requests = [ChatRequest(p.prompt_id, ({"role": "user", "content": p.prompt},), s) for p, s in pairs]
    figures = {}
    for name, rows in (("one request a batch", args.k), (f"{args.rows} rows a batch", args.rows)):
        engine = HFEngine(device="cpu", threads=args.threads, max_batch_rows=rows)
        engine.run(args.model, requests[:1], lambda r: None)  # load and warm up outside the clock
        figures[name] = texts(engine, args.model, requests)
        engine.close()
    (one_s, one), (batched_s, batched) = figures.values()
    same = sum(one[key] == batched[key] for key in one) / len(one)
    report = {
        "requests": len(requests),
        "answers": len(requests) * args.k,
        "seconds": {name: round(s, 1) for name, (s, _) in figures.items()},
        "one_over_batched": round(one_s / batched_s, 2),
        "requests_with_identical_texts": round(same, 3),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
