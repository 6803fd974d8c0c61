"""Where the classifier partition and the n-gram partition (the darling-ngram arm) can differ, measured.

Two yardsticks, neither of which chose anything (the n-gram rule's n = 4 and threshold 0.5 are the paper's ablation
and this toolkit's defaults, fixed; the classifier's threshold was calibrated on its own training split):

- **Human pairs of long open-ended answers** (NoveltyBench's ``pairs-train.jsonl``, minus every pair the classifier
  trained on): each rule's decision "equivalent" against the human label, accuracy and balanced accuracy with
  bootstrap 95% intervals over pairs, and how often the two rules disagree.
- **Groups of short answers** (``eval novelty``'s generations on the naming prompts, ``scores.parquet``): each
  prompt's responses partitioned by both rules; classes per prompt by each and the share of prompts whose
  partitions differ. On a one-word answer the n-gram order falls to 1 (min(n, the shorter's words)), so the rule
  is "same word after lower-casing": where the two partitions coincide, the arms can differ only through chance.

    .venv/bin/python bench/studies/partition_rules.py --classifier runs/pipeline/classifier \\
        --human ../shared/data/noveltybench/pairs-train.jsonl --exclude runs/pipeline/training-pairs/pairs.jsonl \\
        --groups runs/levers-p4top10/start-16-s1/eval-heldout/start runs/levers-p4top10/start-16-s1/eval-train/start
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score

from darling.classifier import load_scorer
from darling.classifier.ngram import ngram_scorer
from darling.classifier.partition import partition_texts
from darling.core.numbers import percentile_interval

N_BOOT = 2000


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def key(row: dict) -> tuple[str, str, str]:
    return row["prompt"], row["generation_0"], row["generation_1"]


def with_interval(metric, labels: np.ndarray, decided: np.ndarray, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(labels), len(labels)) for _ in range(N_BOOT)]
    resampled = [metric(labels[d], decided[d]) for d in draws]
    return {"mean": float(metric(labels, decided)), "interval": percentile_interval(resampled)}


def human_pairs(args, rules: dict) -> dict:
    rows = read_jsonl(args.human)
    seen = {key(r) for path in args.exclude for r in read_jsonl(path)}
    rows = [r for r in rows if key(r) not in seen]
    labels = np.array([int(r["similar"]) for r in rows])
    pairs = [(r["generation_0"], r["generation_1"]) for r in rows]
    decided = {name: np.asarray(rule.is_equivalent(pairs), dtype=int) for name, rule in rules.items()}
    words = np.array([min(len(a.split()), len(b.split())) for a, b in pairs])
    out = {"pairs": len(rows), "excluded": len(seen), "equivalent_share": float(labels.mean())}
    out["median_words"] = float(np.median(words))
    for name, d in decided.items():
        out[name] = {
            "accuracy": with_interval(accuracy_score, labels, d),
            "balanced_accuracy": with_interval(balanced_accuracy_score, labels, d),
            "called_equivalent": float(d.mean()),
        }
    a, b = decided.values()
    out["disagree"] = float((a != b).mean())
    return out


def short_groups(folders: list[Path], rules: dict) -> dict:
    import polars as pl

    groups = []
    for folder in folders:
        frame = pl.read_parquet(folder / "scores.parquet").sort("prompt_id", "sample_index")
        for _, group in frame.group_by("prompt_id", maintain_order=True):
            groups.append([str(t).strip() for t in group["response"].to_list()])
    classes = {name: partition_texts(groups, rule)[0] for name, rule in rules.items()}
    counts = {name: np.array([len(set(c)) for c in cs]) for name, cs in classes.items()}
    a, b = classes.values()
    same = [canonical(x) == canonical(y) for x, y in zip(a, b, strict=True)]
    words = [len(t.split()) for g in groups for t in g]
    return {
        "prompts": len(groups),
        "median_words": float(np.median(words)),
        **{f"classes_{name}": float(c.mean()) for name, c in counts.items()},
        "prompts_partitioned_differently": 1 - float(np.mean(same)),
    }


def canonical(classes: list[int]) -> tuple[int, ...]:
    """A partition's class ids renumbered by first appearance, so equal partitions compare equal."""
    first: dict[int, int] = {}
    return tuple(first.setdefault(c, len(first)) for c in classes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", type=Path, required=True)
    parser.add_argument("--human", type=Path, required=True, help="Human-labelled pairs (NoveltyBench's format).")
    parser.add_argument("--exclude", type=Path, nargs="*", default=[], help="Pairs the classifier trained on.")
    parser.add_argument("--groups", type=Path, nargs="*", default=[], help="eval novelty output folders.")
    parser.add_argument("--out", type=Path, default=None, help="Write the figures as JSON here too.")
    args = parser.parse_args()
    rules = {"classifier": load_scorer(args.classifier), "ngram": ngram_scorer()}
    result = {"classifier_threshold": rules["classifier"].threshold, "human": human_pairs(args, rules)}
    if args.groups:
        result["short"] = short_groups(args.groups, rules)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
