"""Training throughput of the two classifier kinds on the same pairs, same machine, same run.

Each round trains one epoch of each recipe on the same NoveltyBench pairs (interleaved rounds, so machine
noise hits both) and reports training pairs per second of ``trainer.fit`` (for the bi-encoder this includes
computing the cached frozen layers once, which a real run also pays once per run).

- cross-encoder: the CPU cross-encoder preset (``cpu-cross``): 254 tokens per response, both orders of
  every pair, embeddings + 3 of 6 layers frozen;
- bi-encoder: the CPU bi-encoder preset (``cpu``): 510 tokens per response, one pass per response.

    python bench/kind_throughput.py --pairs 96 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from darling.classifier.config import build_config
from darling.classifier.labelled_pairs import load_pairs
from darling.classifier.train import train_classifier

PRESETS = {"cross-encoder": "cpu-cross", "bi-encoder": "cpu"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path(tempfile.mkdtemp(prefix="darling-bench-")))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [
        {"prompt": p.prompt, "generation_0": p.generation_0, "generation_1": p.generation_1, "similar": p.similar}
        for p in load_pairs("noveltybench").pairs[: args.pairs]
    ]
    data = args.work / "pairs.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    seconds: dict[str, list[float]] = {kind: [] for kind in PRESETS}
    n_train = 0
    for r in range(args.rounds):
        for kind, preset in PRESETS.items():
            cfg = build_config(preset, overrides=dict(epochs=1, max_steps=-1, threads=args.threads))
            result = train_classifier(cfg, data, args.work / f"{kind}-{r}", progress=False)
            seconds[kind].append(result.train_seconds)
            n_train = result.n_train
    report = {
        kind: {
            "preset": PRESETS[kind],
            "train_pairs": n_train,
            "seconds": s,
            "pairs_per_s": round(n_train * len(s) / sum(s), 3),
        }
        for kind, s in seconds.items()
    }
    report["ratio_bi_over_cross"] = round(
        report["bi-encoder"]["pairs_per_s"] / report["cross-encoder"]["pairs_per_s"], 2
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
