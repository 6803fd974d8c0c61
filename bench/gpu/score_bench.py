"""GPU bench (not part of the package): in-process scoring of an exported cross-encoder on a device, in fp32 and
bf16, same pairs, same weights. bench/scoring_throughput.py has no device or dtype option (it scores on the CPU in
the export's dtype), so this does the same measurement on a chosen device.

    python bench/gpu/score_bench.py --model EXPORT --device cuda --pairs 256 --out score_bench.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from darling.classifier.backbones import load_exported_strict
from darling.classifier.labelled_pairs import load_pairs
from darling.classifier.scoring import EquivalenceClassifier


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", default="noveltybench")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--pairs", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()

    clf = EquivalenceClassifier.from_pretrained(args.model, device=args.device, batch_size=args.batch_size)
    pairs = [p.texts for p in load_pairs(args.data).pairs[: args.pairs]]
    labels = np.array([p.similar for p in load_pairs(args.data).pairs[: args.pairs]])
    result: dict = {
        "model": args.model,
        "data": args.data,
        "export_dtype": getattr(clf, "dtype", None),
        "device": args.device,
        "device_name": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu",
        "pairs": len(pairs),
        "batch_size": args.batch_size,
        "tokens_per_response": clf.encoder.max_tokens_per_response,
        "threshold": clf.threshold,
        "symmetric": clf.symmetric,
        "torch": torch.__version__,
        "runs": {},
    }
    probs = {}
    for name in ("float32", "bfloat16"):
        # the saved (fp32 master) weights loaded in each dtype, as from_pretrained loads them in the export's dtype
        clf.model = load_exported_strict(args.model, dtype=name).to(args.device).eval()
        clf.prob_equivalent(pairs[:8], symmetric=False)  # warm-up (kernels, allocator)
        if args.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(args.repeats):
            sync(args.device)
            t = time.perf_counter()
            p = clf.prob_equivalent(pairs, symmetric=False)
            sync(args.device)
            times.append(time.perf_counter() - t)
        probs[name] = np.asarray(p, dtype=np.float64)
        run = {
            "seconds_best": min(times),
            "pairs_per_s": len(pairs) / min(times),
            "param_dtype": str(next(clf.model.parameters()).dtype),
            "mean_prob": float(probs[name].mean()),
            "finite": bool(np.isfinite(probs[name]).all()),
            "accuracy_at_threshold": float(((probs[name] >= clf.threshold) == (labels == 1)).mean()),
        }
        if args.device.startswith("cuda"):
            run["peak_memory_mib"] = torch.cuda.max_memory_allocated() / 2**20
        result["runs"][name] = run
    diff = np.abs(probs["float32"] - probs["bfloat16"])
    result["bf16_vs_fp32_max_abs_prob_diff"] = float(diff.max())
    result["bf16_vs_fp32_mean_abs_prob_diff"] = float(diff.mean())
    result["bf16_vs_fp32_decision_agreement"] = float(
        ((probs["float32"] >= clf.threshold) == (probs["bfloat16"] >= clf.threshold)).mean()
    )
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    ok = all(r["finite"] for r in result["runs"].values())
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
