"""Issue 48's lever "key-item swaps from the naming categories", taken from the policy's own answers: pairs labelled by
the item rule (issue 49's ``darling.core.items``), no judge and no human.

The start policy answers each ``items-train`` prompt k times (``darling eval novelty``'s generations, made once). Two
answers to one prompt that name the same category member are a rule-labelled *equivalent* pair (the same content in
their own wording); two that name different members are *not equivalent* (often the same template around another
item: the minimal pair the classifier fails). Answers that name no member are left out. Per prompt, at most ``--cap``
of each label are drawn (seeded), so no prompt or label dominates.

The classifier then trains with ``bench/classifier_quality.py``'s protocol on the 857-pair train part of the 1,000 plus
these pairs, is scored once on the 143-pair test part, and ``train_classifier`` scores the packaged checks (the 100
held-out human pairs, the minimal pairs; no item category is among the minimal pairs' categories). The ``items-heldout``
categories are never read, so ``bench/studies/item_partitions.py`` on them stays out of sample.

    python bench/studies/item_pairs_lever.py --out runs/item-pairs-lever --classifier runs/pipeline/classifier
    python bench/studies/item_pairs_lever.py --out DIR --classifier CLF --k 32 --cap 12 --no-train   # the pairs only
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from classifier_quality import (  # noqa: E402  # noqa: E402
    TEST_FRACTION,
    TEST_SEED,
    PairSet,
    load_pairs,
    metrics_with_intervals,
    run_fold,
    split_pairs,
    write_pairs,
)

from darling.core.items import category_of, item_of  # noqa: E402
from darling.core.schemas import LabelledPair  # noqa: E402


def answers_by_prompt(out: Path, k: int, seed: int, classifier: str) -> list[tuple[str, list[str]]]:
    """The start policy's k answers per items-train prompt (temperature 1.0: the warm-up's sampling), generated once."""
    import polars as pl

    folder = out / "generations"
    if not (folder / "scores.parquet").exists():
        darling = Path(sys.executable).with_name("darling")
        command = [str(darling), "eval", "novelty", "--prompts", "items-train", "--model", "smollm2", "--engine", "hf"]
        command += ["--k", str(k), "--temperature", "1.0", "--max-tokens", "48", "--threads", "2", "--seed", str(seed)]
        subprocess.run([*command, "--classifier", classifier, "--output", str(folder)], check=True)
    frame = pl.read_parquet(folder / "scores.parquet").sort("prompt_id", "sample_index")
    return [
        (group["prompt"][0], [t.strip() for t in group["response"].to_list()])
        for _, group in frame.group_by("prompt_id", maintain_order=True)
    ]


def item_pairs(data: list[tuple[str, list[str]]], cap: int, seed: int) -> list[LabelledPair]:
    """Per prompt, up to ``cap`` same-item pairs (label 1) and ``cap`` different-item pairs (label 0), drawn at random
    from the answers that name a member; identical texts are no pair."""
    rng = random.Random(seed)
    out: list[LabelledPair] = []
    for prompt, answers in data:
        category = category_of(prompt)
        assert category is not None, prompt
        named = [(a, item) for a in dict.fromkeys(answers) if (item := item_of(category, a))]
        by_label: dict[int, list[tuple[str, str]]] = {0: [], 1: []}
        for (a, x), (b, y) in itertools.combinations(named, 2):
            by_label[int(x == y)].append((a, b))
        for label, pairs in by_label.items():
            for a, b in rng.sample(pairs, min(cap, len(pairs))):
                pid = f"item:{len(out)}"
                out.append(LabelledPair(prompt, a, b, label, pair_id=pid, extra={"category": category.key}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--data", default="noveltybench", help="the human pairs (split 857 / 143 as classifier_quality)")
    ap.add_argument("--classifier", required=True, help="an exported classifier: eval novelty needs one (any will do)")
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--cap", type=int, default=12, help="pairs per label per prompt, at most")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-train", action="store_true", help="write the pairs and their counts only")
    args = ap.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    extra = item_pairs(answers_by_prompt(args.out, args.k, args.seed, args.classifier), args.cap, args.seed)
    counts = {
        "pairs": len(extra),
        "equivalent": sum(p.similar for p in extra),
        "prompts": len({p.prompt for p in extra}),
    }
    print(json.dumps(counts))
    write_pairs(args.out / "item_pairs.jsonl", extra)  # classifier_lever_cv.py --item-pairs
    if args.no_train:
        return
    pairs = load_pairs(args.data)
    train, test = split_pairs(pairs, TEST_FRACTION, TEST_SEED)
    train_part = PairSet(train, f"{pairs.source} (train part)", pairs.sha256)
    name = f"{args.preset}+item-pairs"
    fold = run_fold(name, {}, args.preset, train_part.pairs + extra, test, args.out / "test-split")
    checks = json.loads((args.out / "test-split" / "clf" / "darling.json").read_text())["checks"]
    row = {
        "name": name,
        "item_pairs": counts,
        "protocol": f"trained on the {len(train_part)}-pair train part + the item pairs, scored once on the "
        f"{len(test)}-pair test part",
        "test": metrics_with_intervals([p.similar for p in test], fold["probs"], fold["threshold"]),
        "checks": {name: check["classifier"] for name, check in checks.items()},
        "seconds": fold["seconds"],
    }
    (args.out / "result.json").write_text(json.dumps(row, indent=1) + "\n")
    print(json.dumps(row))


if __name__ == "__main__":
    main()
