"""Partitioning an RL batch with a vLLM-served classifier: the reference's way (one /classify request per
pair, all n(n-1)/2 pairs, 16 in flight) vs this project's scorer (a few large requests per pruning round,
transitivity pruning). Same real server, same groups, same token ids, measured side by side in one run.

    python bench/reward_scoring.py --model runs/clf --prompts 16 --n 8 16
    python bench/reward_scoring.py --prompts 16 --n 8 16          # trains a 2-step MiniLM export first (speed only)
    python bench/reward_scoring.py --prompts 16 --n 8 16 --tokens-per-response 32 --equivalent-fraction 0.5

A 2-step export calls almost every pair equivalent, so pruning removes nearly all pairs. With
``--equivalent-fraction f`` the decision threshold is set (before timing, from the model's own
probabilities on the batch) so that a fraction f of all pairs is equivalent: a discriminating classifier,
which prunes less. ``--tokens-per-response`` sets the export's context (short responses: request overhead
dominates; long ones: compute does).

Groups are real multi-model math responses (CHAMP, via `darling datagen rollouts --import champ`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from darling.classifier import ServedEquivalenceClassifier
from darling.classifier.partition import partition_groups, partition_texts
from darling.core.pooling_client import ClassifyClient
from darling.core.schemas import PAIR_FIELDS
from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env
from darling.datagen.rollouts import import_champ, read_rollouts


def champ_groups(work: Path, prompts: int, n: int) -> list[list[str]]:
    import_champ(work / "champ", limit=prompts, progress=False)
    frame = read_rollouts(work / "champ").sort(["problem_id", "model", "sample_index"])
    groups = [g["response"].to_list() for g in frame.partition_by("problem_id", maintain_order=True)]
    return [g[:: max(1, len(g) // n)][:n] for g in groups if len(g) >= n][:prompts]


def reference_way(scorer: ServedEquivalenceClassifier, url: str, groups: list[list[str]]) -> dict:
    """Every pair, one request each (16 concurrent), then union-find: what the official reward does."""
    client = ClassifyClient([url], batch_size=1, max_concurrency=16)
    pairs = [(g, i, j) for g, texts in enumerate(groups) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    start = time.perf_counter()
    ids = [scorer.encoder.encode_pair(groups[g][i], groups[g][j]) for g, i, j in pairs]
    probs = client.classify_ids(ids)[:, 1]
    decided = {p: bool(x >= scorer.threshold) for p, x in zip(pairs, probs, strict=True)}
    classes, _ = partition_groups([len(g) for g in groups], lambda b: [decided[p] for p in b], prune=False)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "requests": client.requests_sent, "pairs_scored": len(pairs), "classes": classes}


def ours(scorer: ServedEquivalenceClassifier, groups: list[list[str]]) -> dict:
    start = time.perf_counter()
    before = scorer.client.requests_sent
    classes, stats = partition_texts(groups, scorer.is_equivalent)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "requests": scorer.client.requests_sent - before,
        "pairs_scored": stats.pairs_decided,
        "rounds": stats.rounds,
        "classes": classes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, help="an exported classifier (default: a 2-step MiniLM export)")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--n", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--vllm-python", default=str(Path.home() / ".cache/darling/vllm-venv/bin/python"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.mkdtemp(prefix="darling-bench-")))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tokens-per-response", type=int, default=254, help="context of the quick export")
    ap.add_argument("--equivalent-fraction", type=float, help="threshold so this fraction of pairs is equivalent")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    model = args.model or quick_export(args.work, args.tokens_per_response)
    env = cpu_server_env(args.work / "vllm-cache", threads=2)
    server = VLLMServer(
        model, python=args.vllm_python, dtype="float32", max_model_len=512, extra_args=CPU_SERVER_ARGS, env=env
    )
    results = {}
    with server:
        url = server.base_url
        scorer = ServedEquivalenceClassifier.from_export(model, ClassifyClient([url], batch_size=256))
        scorer.symmetric = False  # one order per pair on both sides: the same classifier calls per pair
        for n in args.n:
            groups = champ_groups(args.work, args.prompts, n)
            if args.equivalent_fraction is not None:
                scorer = scorer.with_threshold(threshold_for(scorer, groups, args.equivalent_fraction))
            ref, mine = reference_way(scorer, url, groups), ours(scorer, groups)
            mine_classes = mine.pop("classes")
            assert ref.pop("classes") == mine_classes, "served partitions differ"
            pairs = ref["pairs_scored"]
            results[f"n={n}"] = {
                "groups": len(groups),
                "pairs_in_batch": pairs,
                "reference": {**ref, "pairs_per_s": pairs / ref["seconds"]},
                "darling": {**mine, "pairs_per_s": pairs / mine["seconds"]},
                "speedup": ref["seconds"] / mine["seconds"],
                "threshold": scorer.threshold,
                "mean_classes_per_group": sum(len(set(c)) for c in mine_classes) / len(groups),
            }
    print(json.dumps(results, indent=2))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


def threshold_for(scorer: ServedEquivalenceClassifier, groups: list[list[str]], fraction: float) -> float:
    """Untimed: the probability quantile at which ``fraction`` of the batch's pairs are called equivalent."""
    pairs = [(t[i], t[j]) for t in groups for i in range(len(t)) for j in range(i + 1, len(t))]
    probs = sorted(scorer.prob_equivalent(pairs, symmetric=False))
    return float(probs[min(len(probs) - 1, int(len(probs) * (1 - fraction)))])


def quick_export(work: Path, tokens_per_response: int = 254) -> Path:
    from darling.classifier.config import build_config
    from darling.classifier.labelled_pairs import load_pairs
    from darling.classifier.train import train_classifier

    options = dict(max_steps=2, threads=2, max_tokens_per_response=tokens_per_response)
    cfg = build_config("cpu-cross", overrides=options)
    data = work / "pairs.jsonl"
    rows = [{k: getattr(p, k) for k in PAIR_FIELDS} for p in load_pairs("noveltybench").pairs[:64]]
    data.write_text("\n".join(json.dumps(r) for r in rows))
    return train_classifier(cfg, str(data), work / "clf", progress=False).output


if __name__ == "__main__":
    main()
