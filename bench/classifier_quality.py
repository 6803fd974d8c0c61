"""Classifier quality on NoveltyBench's human-labelled pairs: a held-out test split, baselines, and
trained configurations (a sweep when several are given).

The 1,000 pairs are split once (stratified, seed 1234) into 85% train / 15% test. Each configuration
trains on the train part (its own validation split chooses the threshold) and is scored on the test
part, which no choice ever looked at. Lexical baselines (ROUGE-1 F, token Jaccard) are scored on the
same test split for reference.

    python bench/classifier_quality.py --data ../shared/data/noveltybench/pairs-train.jsonl \
        --out runs/quality --preset cpu                      # the preset as shipped
    python bench/classifier_quality.py ... --grid '{"learning_rate": [3e-5, 1e-4]}'   # a sweep
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from pathlib import Path

import numpy as np

from darling.classifier.calibration import binary_metrics, choose_threshold
from darling.classifier.config import build_config
from darling.classifier.data import PairSet, load_pairs, split_pairs
from darling.classifier.scoring import EquivalenceClassifier
from darling.classifier.train import train_classifier

TEST_SEED = 1234
TEST_FRACTION = 0.15


def write_split(pairs: PairSet, out: Path) -> tuple[Path, Path]:
    train, test = split_pairs(pairs, TEST_FRACTION, TEST_SEED)
    paths = out / "train.jsonl", out / "test.jsonl"
    for path, rows in zip(paths, (train, test), strict=True):
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "id": p.pair_id,
                        "prompt": p.prompt,
                        "generation_0": p.generation_0,
                        "generation_1": p.generation_1,
                        "similar": p.similar,
                    }
                )
                + "\n"
                for p in rows
            )
        )
    return paths


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def rouge1_f(a: str, b: str) -> float:
    from collections import Counter

    ca, cb = Counter(_tokens(a)), Counter(_tokens(b))
    overlap = sum((ca & cb).values())
    if not overlap:
        return 0.0
    p, r = overlap / sum(cb.values()), overlap / sum(ca.values())
    return 2 * p * r / (p + r)


def jaccard(a: str, b: str) -> float:
    sa, sb = set(_tokens(a)), set(_tokens(b))
    return len(sa & sb) / max(1, len(sa | sb))


def baseline_rows(train_path: Path, test_path: Path) -> list[dict]:
    """Lexical scores with the threshold chosen on the train part, metrics on the test part."""
    train, test = load_pairs(train_path).pairs, load_pairs(test_path).pairs
    rows = []
    for name, fn in (("rouge1_f", rouge1_f), ("jaccard", jaccard)):
        tr = np.array([fn(*p.texts) for p in train])
        te = np.array([fn(*p.texts) for p in test])
        for objective in ("accuracy", "balanced_accuracy"):
            t = choose_threshold([p.similar for p in train], tr, objective)
            rows.append({"name": f"{name} ({objective})", **binary_metrics([p.similar for p in test], te, t)})
    return rows


def run_config(name: str, overrides: dict, preset: str, train_path: Path, test_path: Path, out: Path) -> dict:
    cfg = build_config(preset, overrides=overrides)
    start = time.perf_counter()
    result = train_classifier(cfg, train_path, out / name, progress=False)
    seconds = time.perf_counter() - start
    clf = EquivalenceClassifier.from_pretrained(out / name)
    test = load_pairs(test_path).pairs
    probs = clf.prob_equivalent([p.texts for p in test])
    labels = [p.similar for p in test]
    return {
        "name": name,
        "overrides": overrides,
        "val": result.metrics,
        "test": binary_metrics(labels, probs, clf.threshold),
        "test_auc_one_order": binary_metrics(
            labels, clf.prob_equivalent([p.texts for p in test], symmetric=False), clf.threshold
        )["roc_auc"],
        "seconds": round(seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--grid", default="{}", help="JSON: option -> list of values (cartesian product)")
    ap.add_argument("--set", action="append", default=[], help="fixed override KEY=JSON_VALUE")
    ap.add_argument("--no-baselines", action="store_true")
    args = ap.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    train_path, test_path = write_split(load_pairs(args.data), args.out)
    results_path = args.out / "results.jsonl"
    if not args.no_baselines:
        for row in baseline_rows(train_path, test_path):
            print(json.dumps(row), flush=True)
            with results_path.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    fixed = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    grid = json.loads(args.grid)
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
        overrides = {**fixed, **dict(zip(keys, values, strict=True))}
        name = "_".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) or "preset"
        row = run_config(name, overrides, args.preset, train_path, test_path, args.out)
        print(json.dumps(row), flush=True)
        with results_path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
