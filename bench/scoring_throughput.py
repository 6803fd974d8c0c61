"""In-process scoring: batched (length-sorted, dynamic padding) vs one pair at a time, same pairs,
same model, measured side by side in one run.

    python bench/scoring_throughput.py --data noveltybench --pairs 96 --batch-size 32
    python bench/scoring_throughput.py --data noveltybench --pairs 256 --max-tokens 32   # short responses
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from darling.classifier.backbones import load_sequence_classifier
from darling.classifier.config import ClassifierTrainConfig
from darling.classifier.encoding import PairEncoder
from darling.classifier.labelled_pairs import load_pairs
from darling.classifier.scoring import EquivalenceClassifier
from darling.core.encoders import resolve_backbone
from darling.core.local_models import load_tokenizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="noveltybench")
    ap.add_argument("--model", help="an exported classifier; default: the cpu preset's backbone (speed only)")
    ap.add_argument("--pairs", type=int, default=96)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, help="tokens per response (default: the model's budget)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    if args.model:
        batched = EquivalenceClassifier.from_pretrained(args.model, batch_size=args.batch_size)
    else:
        preset = ClassifierTrainConfig.preset_values("cpu-cross")
        backbone = resolve_backbone(preset["backbone"])
        encoder = PairEncoder(load_tokenizer(backbone), preset["max_tokens_per_response"])
        model = load_sequence_classifier(backbone, encoder.special.pad_id)
        batched = EquivalenceClassifier(model, encoder, batch_size=args.batch_size)
    if args.max_tokens:
        batched.encoder = PairEncoder(batched.encoder.tokenizer, args.max_tokens)
    single = EquivalenceClassifier(batched.model, batched.encoder, batch_size=1)
    pairs = [p.texts for p in load_pairs(args.data).pairs[: args.pairs]]
    batched.prob_equivalent(pairs[:4], symmetric=False)  # warm-up

    t = time.perf_counter()
    probs_single = single.prob_equivalent(pairs, symmetric=False)
    single_s = time.perf_counter() - t
    t = time.perf_counter()
    probs_batched = batched.prob_equivalent(pairs, symmetric=False)
    batched_s = time.perf_counter() - t
    print(
        json.dumps(
            {
                "pairs": len(pairs),
                "tokens_per_response": batched.encoder.max_tokens_per_response,
                "threads": args.threads,
                "pairs_per_s_one_at_a_time": len(pairs) / single_s,
                "pairs_per_s_batched": len(pairs) / batched_s,
                "speedup": single_s / batched_s,
                "max_abs_prob_diff": float(abs(probs_single - probs_batched).max()),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
