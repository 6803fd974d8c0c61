"""Where meaning and wording part (issue 49): the start policy's answers to the item prompts, partitioned three ways.

Per prompt, k answers of a policy (``darling eval novelty``'s generations, made here when absent) are partitioned

- by **item**: the category member each answer names, read off by rule (``darling.core.items``; no classifier). An
  answer that names none is a class of its own;
- by each **classifier** given (DARLING's training partition: union-find over pair decisions at its threshold);
- by the **n-gram rule** (the ``darling-ngram`` arm's partition: 4-gram Jaccard >= 0.5, ``darling.classifier.ngram``).

Reported per partition: classes per prompt; over the pairs of answers that name the same item, the share it splits;
over pairs that name two different items, the share it joins; and per pair of partitions, the share of answer pairs
on which they decide differently and the share of prompts on which they agree exactly. The task is right for the
n-gram ablation when the n-gram rule splits same-item pairs far more often than the classifier does.

    python bench/studies/item_partitions.py --out runs/item-partitions --classifier main=runs/pipeline/classifier
    python bench/studies/item_partitions.py --out DIR --classifier A=DIR --classifier B=DIR --model smollm2 --k 8

Answer pairs are counted within prompts (k(k-1)/2 per prompt); intervals are bootstrap 95% over prompts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from darling.core.items import category_of, item_of

PROMPT_SETS = ("items-train", "items-heldout")
NO_ITEM = 1000  # class ids from here on: answers that name no member, each a class of its own (never "same item")
N_BOOT = 2000


def generations(out: Path, prompts: str, model: str, k: int, classifier: str) -> list[tuple[str, list[str]]]:
    """(prompt, its k answers in sample order) per prompt; ``darling eval novelty`` generates them once (resumable)."""
    import polars as pl

    folder = out / "generations" / prompts
    if not (folder / "scores.parquet").exists():
        darling = Path(sys.executable).with_name("darling")
        command = [str(darling), "eval", "novelty", "--prompts", prompts, "--model", model, "--engine", "hf"]
        command += ["--k", str(k), "--temperature", "0.7", "--max-tokens", "48", "--threads", "2"]
        subprocess.run([*command, "--classifier", classifier, "--output", str(folder)], check=True)
    frame = pl.read_parquet(folder / "scores.parquet").sort("prompt_id", "sample_index")
    return [
        (group["prompt"][0], [t.strip() for t in group["response"].to_list()])
        for _, group in frame.group_by("prompt_id", maintain_order=True)
    ]


def item_classes(prompt: str, answers: list[str]) -> list[int]:
    category = category_of(prompt)
    assert category is not None, prompt
    items = [item_of(category, a) for a in answers]
    ids: dict[str, int] = {}
    return [ids.setdefault(item, len(ids)) if item else NO_ITEM + i for i, item in enumerate(items)]


def scorer_classes(groups: list[list[str]], scorer) -> list[list[int]]:
    from darling.classifier.partition import partition_texts

    classes, _ = partition_texts(groups, scorer)
    return classes


def same(classes: list[int]) -> np.ndarray:
    """The upper triangle of "these two answers share a class", one entry per answer pair."""
    return np.array([classes[i] == classes[j] for i, j in itertools.combinations(range(len(classes)), 2)])


def interval(per_prompt: list[tuple[float, float]], seed: int = 0) -> list[float]:
    """Ratio of sums over prompts (numerator, denominator per prompt) and its bootstrap 95% interval over prompts."""
    values = np.array(per_prompt, dtype=float)
    rng = np.random.default_rng(seed)
    draws = values[rng.integers(0, len(values), (N_BOOT, len(values)))].sum(1)
    ratios = draws[:, 0] / np.maximum(draws[:, 1], 1)
    total = values.sum(0)
    return [round(total[0] / max(total[1], 1), 3), *np.percentile(ratios, [2.5, 97.5]).round(3).tolist()]


def summarise(partitions: dict[str, list[list[int]]], items: list[list[int]]) -> dict:
    rows = {}
    item_same = [same(c) for c in items]
    named = [np.array([c < NO_ITEM for c in cs]) for cs in items]
    both_named = [np.array([n[i] and n[j] for i, j in itertools.combinations(range(len(n)), 2)]) for n in named]
    for name, parts in partitions.items():
        joins = [same(c) for c in parts]
        rows[name] = {
            "classes_per_prompt": round(float(np.mean([len(set(c)) for c in parts])), 3),
            "splits_same_item": interval([(((~j) & s).sum(), s.sum()) for j, s in zip(joins, item_same, strict=True)]),
            "joins_different_items": interval(
                [((j & ~s & b).sum(), (~s & b).sum()) for j, s, b in zip(joins, item_same, both_named, strict=True)]
            ),
        }
    disagreement = {}
    for a, b in itertools.combinations(partitions, 2):
        pa, pb = partitions[a], partitions[b]
        disagreement[f"{a} / {b}"] = {
            "pairs_decided_differently": interval(
                [((same(x) != same(y)).sum(), len(same(x))) for x, y in zip(pa, pb, strict=True)]
            ),
            "prompts_agreeing_exactly": round(
                float(np.mean([(same(x) == same(y)).all() for x, y in zip(pa, pb, strict=True)])), 3
            ),
        }
    return {"partitions": rows, "disagreement": disagreement}


def markdown(result: dict) -> str:
    def cell(v):
        return f"{v[0]:.3f} [{v[1]:.2f}, {v[2]:.2f}]"

    lines = []
    for prompts, r in result["sets"].items():
        lines += [
            f"**{prompts}** ({r['prompts']} prompts x {r['k']} answers; share of answers naming a member: "
            f"{r['named_share']:.3f})",
            "",
        ]
        lines += [
            "| partition | classes per prompt | splits same-item pairs | joins different-item pairs |",
            "| --- | ---: | ---: | ---: |",
        ]
        for name, p in r["partitions"].items():
            lines.append(
                f"| {name} | {p['classes_per_prompt']:.2f} | {cell(p['splits_same_item'])} | "
                f"{cell(p['joins_different_items'])} |"
            )
        lines += [
            "",
            "| partitions | answer pairs decided differently | prompts agreeing exactly |",
            "| --- | ---: | ---: |",
        ]
        for pair, d in r["disagreement"].items():
            lines.append(f"| {pair} | {cell(d['pairs_decided_differently'])} | {d['prompts_agreeing_exactly']:.3f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--classifier", action="append", required=True, help="NAME=DIR: an exported classifier")
    ap.add_argument("--model", default="smollm2", help="the policy whose answers are partitioned (the start policy)")
    ap.add_argument("--k", type=int, default=8)
    args = ap.parse_args()
    from darling.classifier.ngram import ngram_scorer
    from darling.classifier.scoring import load_scorer

    scorers = {name: load_scorer(path) for name, path in (spec.split("=", 1) for spec in args.classifier)}
    scorers["4-gram rule"] = ngram_scorer()
    first = args.classifier[0].split("=", 1)[1]
    result = {"model": args.model, "sets": {}}
    for prompts in PROMPT_SETS:
        data = generations(args.out, prompts, args.model, args.k, first)
        groups = [answers for _, answers in data]
        items = [item_classes(p, answers) for p, answers in data]
        partitions = {"item (by rule)": items}
        partitions |= {name: scorer_classes(groups, s) for name, s in scorers.items()}
        summary = summarise(partitions, items)
        named = float(np.mean([c < NO_ITEM for cs in items for c in cs]))
        result["sets"][prompts] = {"prompts": len(groups), "k": args.k, "named_share": named, **summary}
    (args.out / "item_partitions.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "item_partitions.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
