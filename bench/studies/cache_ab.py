"""Issue 48: what the frozen-layer cache fix (c2e25ff) buys on a GPU. One fold of the ``cpu`` recipe, trained alone,
with the cache computed where the fixed code computes it (the Trainer's device) and where the old code did (the CPU,
by patching ``cache_device``), in the order old, new, new, old so drift shows. Prints seconds per run and the ratio.

    python bench/studies/cache_ab.py --out /tmp/cache-ab
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[1]))

from classifier_quality import load_pairs, protocol_folds, protocol_split, run_fold  # noqa: E402

from darling.classifier.bi_encoder_training import TextPairDataModule  # noqa: E402

FIXED = TextPairDataModule.cache_device


def old_cache_device(self) -> torch.device | None:
    return torch.device("cpu")  # before c2e25ff: the cache was built before the Trainer moved the model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    pairs = load_pairs("noveltybench")
    tr, he = protocol_folds(pairs, protocol_split(pairs)[0], 5)[0]
    rows = []
    for i, which in enumerate(["old", "new", "new", "old"]):
        TextPairDataModule.cache_device = old_cache_device if which == "old" else FIXED
        start = time.perf_counter()
        fold = run_fold(f"ab-{i}", {"threads": args.threads}, "cpu", tr, he, args.out / f"{i}-{which}")
        rows.append({"run": i, "cache": which, "seconds": time.perf_counter() - start, "val_auc": fold["val_auc"]})
        print(json.dumps(rows[-1]), flush=True)
    mean = {w: sum(r["seconds"] for r in rows if r["cache"] == w) / 2 for w in ("old", "new")}
    summary = {
        "rows": rows,
        "mean_seconds": mean,
        "old_over_new": mean["old"] / mean["new"],
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
    }
    (args.out / "cache_ab.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
