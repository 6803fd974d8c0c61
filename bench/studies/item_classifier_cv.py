"""Issue 67: a classifier recipe that learns the item prompts' equivalence in every seed, chosen where the held-out
categories choose nothing.

Data (``item_classifier_data.sh``): per seed, the item chain's warm-up and its answers (``answers/warm-T07``: 32 per
items-train prompt at 0.7, the chain takes the first 16; ``warm-T10``; ``base-T07``: SmolLM2 untrained; ``heldout``:
the warm-up on the 30 held-out categories, 8 per prompt at 0.7).

- ``diagnose-chain``: per seed, the item chain's own classifier as the chain made it (``item_chain_classifier.sh``):
  its answers (how many name no member, one, several), its pairs, its validation split (categories, labels, pairs
  with an answer naming several members) and on that split its AUC (all pairs, one-member pairs, the others) beside
  the untrained backbone's cosine and the content-word rule; its score on the packaged item check.
- ``cv``: grouped K-fold over the 18 *training* categories (3 folds of 6 categories, the same per seed): each lever
  (a data lever x a recipe lever) trains on two folds' pairs (its own validation split inside them, grouped by
  prompt, chooses the threshold and, with early stopping, the epoch) and is scored on every keyed answer pair of the
  third fold's categories (the warm-up's first 16 answers at 0.7: the same pairs for every lever): AUC, the share of
  same-item pairs it calls different (splits) and of different-item pairs it calls the same (joins), beside the
  content-word rule's.
- ``heldout``: the chosen recipe trained on all of a seed's training-category pairs, as the chain trains it, then on
  the warm-up's answers to the 30 held-out categories: AUC on their checker-labelled pairs, and the partition's
  splits and joins (``darling eval partitions``' figures), beside the content-word rule, the 4-gram rule and the
  checker.

Every result is one JSON file under ``--out`` (rerun: finished ones are read back).

    .venv/bin/python bench/studies/item_classifier_cv.py diagnose-chain --data /work/runs/items67 --out /work/runs/cv67
    .venv/bin/python bench/studies/item_classifier_cv.py cv --data /work/runs/items67 --out /work/runs/cv67 \\
        --seeds 0,1,2 --levers chain/today,chain/cross
    .venv/bin/python bench/studies/item_classifier_cv.py heldout --data /work/runs/items67 --out /work/runs/cv67 \\
        --lever chain/cross
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from sklearn.metrics import roc_auc_score

from darling.classifier.config import build_config
from darling.classifier.labelled_pairs import PairSet, split_pairs
from darling.classifier.scoring import load_scorer
from darling.core.checkers import ITEMS
from darling.core.items import category_of
from darling.core.lexical import CONTENT_KEY, CONTENT_THRESHOLD, overlap_scores
from darling.core.schemas import LabelledPair, stable_id, stable_pair_id
from darling.datagen.config import PairConfig
from darling.datagen.pairs import balanced, drop_duplicate_texts, key_pairs

FOLDS = 3
# The chain's recipe today: the cpu preset at the cpu chain's [classifier] table.
TODAY = ("cpu", {"max_steps": 12, "max_tokens_per_response": 64, "warmup_steps": 2})
RECIPES: dict[str, tuple[str, dict[str, Any]]] = {
    "today": TODAY,
    "bi-3ep": ("cpu", {"max_tokens_per_response": 64}),  # the cpu preset's own schedule: 3 passes
    "bi-10ep": ("cpu", {"max_tokens_per_response": 64, "epochs": 10}),
    "bi-10ep-f2": ("cpu", {"max_tokens_per_response": 64, "epochs": 10, "freeze_layers": 2}),
    "bi-20ep": ("cpu", {"max_tokens_per_response": 64, "epochs": 20}),
    "bi-10ep-cosent": ("cpu", {"max_tokens_per_response": 64, "epochs": 10, "bi_loss": "cosent"}),
    "bi-10ep-lr2": ("cpu", {"max_tokens_per_response": 64, "epochs": 10, "learning_rate": 1e-4, "min_learning_rate": 1e-5}),
    "bi-10ep-es": ("cpu", {"max_tokens_per_response": 64, "epochs": 10, "early_stopping_patience": 3}),
    "bi-10ep-f2-es": (
        "cpu",
        {"max_tokens_per_response": 64, "epochs": 10, "freeze_layers": 2, "early_stopping_patience": 3},
    ),
    "bi-10ep-f2-v30": ("cpu", {"max_tokens_per_response": 64, "epochs": 10, "freeze_layers": 2, "val_fraction": 0.3}),
    "bi-10ep-f0": ("cpu", {"max_tokens_per_response": 64, "epochs": 10, "freeze_layers": 0}),
    "bi-5ep-f2": ("cpu", {"max_tokens_per_response": 64, "epochs": 5, "freeze_layers": 2}),
    "cross": ("cpu-cross", {"max_tokens_per_response": 64}),  # 2 passes, both orders, class weights
    "cross-5ep": ("cpu-cross", {"max_tokens_per_response": 64, "epochs": 5}),
    "cross-5ep-f0": ("cpu-cross", {"max_tokens_per_response": 64, "epochs": 5, "freeze_layers": 0}),
    "cross-10ep": ("cpu-cross", {"max_tokens_per_response": 64, "epochs": 10}),
}
# data lever -> (answer sets and how many of each set's answers per prompt, pairs of each label per prompt)
DATA: dict[str, tuple[dict[str, int], int]] = {
    "chain": ({"warm-T07": 16}, 12),
    "n32": ({"warm-T07": 32}, 24),
    "policies": ({"warm-T07": 16, "warm-T10": 16, "base-T07": 16}, 24),
}
ONE = "-one"  # a data lever's suffix: only answers that name exactly one member are paired


def members_named(prompt: str, answer: str) -> int:
    """How many members of the prompt's category the answer names (the checker reads the first)."""
    from darling.core.items import _pattern

    category = category_of(prompt)
    assert category is not None
    return sum(1 for member in category.members if any(_pattern(n).search(answer) for n in member))


def one_member(pair: LabelledPair) -> bool:
    return all(members_named(pair.prompt, text) == 1 for text in pair.texts)


def read_answers(seed_dir: Path, name: str, per_prompt: int) -> list[dict[str, Any]]:
    """One answer set's rows (ok, the first ``per_prompt`` per prompt), its model named after the set."""
    frame = pl.read_parquet(seed_dir / "answers" / name / "*.parquet")
    frame = frame.filter((pl.col("status") == "ok") & (pl.col("sample_index") < per_prompt))
    rows = frame.sort("problem_id", "sample_index").to_dicts()
    for row in rows:
        row["model"] = name
        row["rollout_id"] = stable_id(row["problem_id"], name, row["sample_index"])
    return rows


def by_prompt(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["problem"], []).append(row)
    return out


def training_pairs(seed_dir: Path, data: str, seed: int) -> list[LabelledPair]:
    """A data lever's checker-labelled pairs, made as ``datagen pairs --checker items`` + ``datagen label`` make
    them: duplicate texts dropped, pairs of keyed answers capped per prompt and label, both labels balanced."""
    sets, cap = DATA[data.removesuffix(ONE)]
    rows = [row for name, n in sets.items() for row in read_answers(seed_dir, name, n)]
    if data.endswith(ONE):
        rows = [row for row in rows if members_named(row["problem"], row["response"]) == 1]
    config = PairConfig(rollouts=seed_dir, output=seed_dir, max_pairs_per_problem=cap, checker="items", seed=seed)
    found: dict[int, list[dict]] = {0: [], 1: []}
    for prompt, group in sorted(by_prompt(rows).items()):
        group, _ = drop_duplicate_texts(group)
        keys = ITEMS.keys(prompt, [r["response"] for r in group])
        for label, pairs in key_pairs(group, keys, config).items():
            found[label] += pairs
    pairs, _ = balanced(found, seed)
    return [
        LabelledPair(p["prompt"], p["generation_0"], p["generation_1"], int(p["answer"] is not None), p["pair_id"])
        for p in pairs
    ]


def all_keyed_pairs(rows: list[dict[str, Any]]) -> list[LabelledPair]:
    """Every pair of two keyed, different answer texts of one prompt, labelled by the checker (not balanced)."""
    out = []
    for prompt, group in sorted(by_prompt(rows).items()):
        texts = list(dict.fromkeys(r["response"].strip() for r in group))
        keys = ITEMS.keys(prompt, texts)
        for (a, ka), (b, kb) in itertools.combinations(zip(texts, keys, strict=True), 2):
            if ka is not None and kb is not None:
                out.append(LabelledPair(prompt, a, b, int(ka == kb), stable_pair_id(prompt, a, b)))
    return out


def category_folds(prompts: list[str]) -> list[list[str]]:
    """The 18 training categories in ``FOLDS`` fixed folds (sorted by category key, dealt round-robin)."""
    ordered = sorted(set(prompts), key=lambda p: category_of(p).key)  # type: ignore[union-attr]
    return [ordered[i::FOLDS] for i in range(FOLDS)]


# -- figures ------------------------------------------------------------------------------------------------------
def auc(labels: list[int], scores: np.ndarray) -> float | None:
    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else None


def decisions(labels: list[int], same: np.ndarray) -> dict[str, Any]:
    """Splits (same-item pairs called different) and joins (different-item pairs called the same)."""
    y = np.array(labels, dtype=bool)
    return {
        "splits": float((~same[y]).mean()) if y.any() else None,
        "joins": float(same[~y].mean()) if (~y).any() else None,
        "same_pairs": int(y.sum()),
        "different_pairs": int((~y).sum()),
    }


def content_row(pairs: list[LabelledPair]) -> dict[str, Any]:
    scores = overlap_scores(pairs, CONTENT_KEY)
    labels = [p.similar for p in pairs]
    return {"auc": auc(labels, scores), **decisions(labels, scores >= CONTENT_THRESHOLD)}


def scorer_row(scorer, pairs: list[LabelledPair]) -> dict[str, Any]:
    probs = scorer.prob_equivalent([p.texts for p in pairs])
    labels = [p.similar for p in pairs]
    return {"auc": auc(labels, probs), **decisions(labels, probs >= scorer.threshold), "threshold": scorer.threshold}


def train(recipe: str, pairs: list[LabelledPair], output: Path, seed: int) -> tuple[Any, dict[str, Any]]:
    """The recipe trained on ``pairs`` as ``train-classifier`` trains (its validation split inside them). A recipe
    ``NAME@T`` is NAME deciding at the fixed threshold T (the validation split then chooses nothing but the floor)."""
    from darling.classifier.train import train_classifier

    recipe, _, fixed = recipe.partition("@")
    preset, overrides = RECIPES[recipe]
    threads = int(os.environ.get("STUDY_THREADS", "2"))  # 1 when two studies share 2 cores (OpenMP threads spin)
    config = build_config(preset, overrides={**overrides, "seed": seed, "threads": threads, "checks": ["none"]})
    config = replace(config, report_to=["none"])
    shutil.rmtree(output, ignore_errors=True)
    start = time.perf_counter()
    result = train_classifier(config, PairSet(pairs, "study", "-"), output, progress=False)
    seconds = time.perf_counter() - start
    scorer = load_scorer(output)
    if fixed:
        scorer = scorer.with_threshold(float(fixed))
    shutil.rmtree(output / "training" / "checkpoints", ignore_errors=True)
    shutil.rmtree(output / "model.safetensors", ignore_errors=True)
    val = result.metrics
    return scorer, {
        "seconds": round(seconds, 1),
        "steps": result.global_step,
        "n_train": result.n_train,
        "n_val": result.n_val,
        "val_auc": val.get("roc_auc"),
        "threshold": scorer.threshold,
        "best_epoch": (result_schedule(output) or {}).get("best_epoch"),
    }


def result_schedule(output: Path) -> dict[str, Any] | None:
    return json.loads((output / "darling.json").read_text()).get("schedule")


def cached(path: Path, make) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text())
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1))
    return value


def zero_shot_row(pairs: list[LabelledPair]) -> dict[str, Any]:
    """The untrained backbone's cosine (the packaged MiniLM, mean pooling): AUC only, no threshold of its own."""
    from darling.classifier.zero_shot import untrained_classifier

    clf = untrained_classifier("packaged:all-MiniLM-L6-v2", 64)
    emb = clf.embed([t for p in pairs for t in p.texts])
    return {"auc": auc([p.similar for p in pairs], np.einsum("ij,ij->i", emb[0::2], emb[1::2]))}


# -- the commands -------------------------------------------------------------------------------------------------
def seed_dirs(data: Path, seeds: list[int]) -> dict[int, Path]:
    return {s: data / f"seed-{s}" for s in seeds if (data / f"seed-{s}" / "answers" / "heldout").exists()}


def diagnose_chain(data: Path, out: Path, seeds: list[int]) -> None:
    """The item chain's own classifier per seed (``item_chain_classifier.sh``: the chain's commands as at 9815d51): its
    answers, pairs, validation split (categories, labels, pairs with an answer naming several members) and, on that
    split, its AUC on all pairs, on the pairs of two one-member answers and on the others, beside the untrained
    backbone's cosine and the content-word rule; its packaged item check."""
    from darling.classifier.labelled_pairs import load_pairs

    for seed in seeds:
        chain = data / f"seed-{seed}" / "chain"
        if not (chain / "classifier" / "darling.json").exists():
            continue

        def make(seed=seed, chain=chain) -> dict[str, Any]:
            frame = pl.read_parquet(chain / "datagen" / "*.parquet").filter(pl.col("status") == "ok")
            named = Counter(
                min(members_named(p, a), 2) for p, a in zip(frame["problem"], frame["response"], strict=True)
            )
            pairs = load_pairs(chain / "training-pairs" / "pairs.jsonl")
            _, val = split_pairs(pairs, 0.15, seed)
            meta = json.loads((chain / "classifier" / "darling.json").read_text())
            predictions = (chain / "classifier" / "training" / "validation" / "predictions.jsonl").read_text()
            prob = {json.loads(line)["pair_id"]: json.loads(line)["prob_equivalent"] for line in predictions.splitlines() if line}
            one = np.array([one_member(p) for p in val])
            labels = np.array([p.similar for p in val])
            probs = np.array([prob[p.pair_id] for p in val])
            by_category = Counter(category_of(p.prompt).key for p in val)  # type: ignore[union-attr]
            return {
                "answers": {"none": named[0], "one": named[1], "several": named[2]},
                "pairs": len(pairs),
                "val": {
                    "pairs": len(val),
                    "categories": dict(by_category),
                    "labels": dict(Counter(labels.tolist())),
                    "one_member_pairs": int(one.sum()),
                    "auc": auc(labels.tolist(), probs),
                    "auc_interval": meta["validation_metrics"]["intervals_95"]["roc_auc"],
                    "auc_one_member": auc(labels[one].tolist(), probs[one]),
                    "auc_several": auc(labels[~one].tolist(), probs[~one]),
                    "content_rule": content_row(val)["auc"],
                    "zero_shot": zero_shot_row(val)["auc"],
                },
                "check_item_pairs_heldout": meta["checks"]["item-pairs-heldout"]["classifier"]["roc_auc"],
            }

        row = cached(out / "diagnose-chain" / f"seed-{seed}.json", make)
        print(seed, json.dumps(row))


def cv(data: Path, out: Path, seeds: list[int], levers: list[str]) -> None:
    for seed, folder in seed_dirs(data, seeds).items():
        scored = all_keyed_pairs(read_answers(folder, "warm-T07", 16))
        folds = category_folds([p.prompt for p in scored])
        for lever in levers:
            data_lever, recipe = lever.split("/")
            pairs = training_pairs(folder, data_lever, seed)
            for k, held in enumerate(folds):

                def make(pairs=pairs, held=held, recipe=recipe, k=k, seed=seed) -> dict[str, Any]:
                    train_part = [p for p in pairs if p.prompt not in held]
                    test = [p for p in scored if p.prompt in held]
                    scorer, trained = train(recipe, train_part, out / "models" / f"{seed}-{k}", seed)
                    one = [p for p in test if one_member(p)]
                    return {
                        "model": {**scorer_row(scorer, test), **trained},
                        "content_rule": content_row(test),
                        "one_member": {"model": scorer_row(scorer, one), "content_rule": content_row(one)},
                    }

                row = cached(out / "cv" / lever.replace("/", "+") / f"seed-{seed}-fold-{k}.json", make)
                m = row["model"]
                print(f"seed {seed} fold {k} {lever}: auc {m['auc']:.3f} (val {m['val_auc']:.3f}) "
                      f"splits {m['splits']:.2f} joins {m['joins']:.2f}  rule auc {row['content_rule']['auc']:.3f} "
                      f"{m['seconds']} s", end="")
                if "one_member" in row:
                    one = row["one_member"]
                    print(f" | one-member: auc {one['model']['auc']:.3f} rule {one['content_rule']['auc']:.3f}", end="")
                print(flush=True)


def heldout(data: Path, out: Path, seeds: list[int], levers: list[str]) -> None:
    """Each lever trained on all of a seed's training-category pairs, then measured on the warm-up's answers to the
    30 held-out categories: AUC on their checker-labelled pairs (all, and those of two one-member answers), and the
    partition's splits and joins as ``darling eval partitions`` counts them, beside the rules and the checker."""
    from darling.classifier.ngram import ngram_scorer
    from darling.classifier.partition import ContentWordPartition
    from darling.evals.partitions import NGRAM_NAME, answers_table

    for seed, folder in seed_dirs(data, seeds).items():
        rows = read_answers(folder, "heldout", 8)
        answers = [(prompt, [r["response"].strip() for r in group]) for prompt, group in sorted(by_prompt(rows).items())]
        pairs = all_keyed_pairs(rows)
        one = [p for p in pairs if one_member(p)]
        rules = cached(
            out / "heldout" / f"rules-seed-{seed}.json",
            lambda: {
                "content_rule": {"all": content_row(pairs), "one_member": content_row(one)},
                "partitions": answers_table(
                    answers, {NGRAM_NAME: ngram_scorer(), "content-word rule": ContentWordPartition()}, "items", seed
                ),
            },
        )
        print(f"seed {seed}: {len(pairs)} held-out pairs ({len(one)} of one-member answers); content rule auc "
              f"{rules['content_rule']['all']['auc']:.3f} / {rules['content_rule']['one_member']['auc']:.3f}")
        for lever in levers:

            def make(lever=lever, seed=seed, folder=folder) -> dict[str, Any]:
                data_lever, recipe = lever.split("/")
                train_pairs = training_pairs(folder, data_lever, seed)
                scorer, trained = train(recipe, train_pairs, out / "models" / f"heldout-{seed}", seed)
                table = answers_table(answers, {"classifier": scorer}, "items", seed)
                return {
                    "trained": trained,
                    "all": scorer_row(scorer, pairs),
                    "one_member": scorer_row(scorer, one),
                    "partition": table["partitions"]["classifier"],
                    "keyed_share": table["keyed_share"],
                }

            r = cached(out / "heldout" / lever.replace("/", "+") / f"seed-{seed}.json", make)
            part = r["partition"]
            print(
                f"  {lever}: val auc {r['trained']['val_auc']:.3f}; held out: auc {r['all']['auc']:.3f} "
                f"(one-member {r['one_member']['auc']:.3f}); partition splits "
                f"{part['splits_same_key']['share']:.3f} joins {part['joins_different_keys']['share']:.3f}; "
                f"{r['trained']['seconds']} s",
                flush=True,
            )


def package(data: Path, seed: int, target: Path) -> None:
    """The packaged item pairs (``darling.classifier``'s built-in sets ``item-pairs``, ``item-pairs-heldout``): one
    seed's training-category pairs as the chain makes them, and every keyed pair of its warm-up's held-out answers."""
    import gzip

    folder = data / f"seed-{seed}"
    sets = {
        "item-pairs": training_pairs(folder, "chain", seed),
        "item-pairs-heldout": all_keyed_pairs(read_answers(folder, "heldout", 8)),
    }
    for name, pairs in sets.items():
        rows = []
        for p in pairs:
            category = category_of(p.prompt)
            assert category is not None
            rows.append(
                {
                    "id": p.pair_id,
                    "prompt": p.prompt,
                    "generation_0": p.generation_0,
                    "generation_1": p.generation_1,
                    "similar": p.similar,
                    "category": category.key,
                    "keys": ITEMS.keys(p.prompt, list(p.texts)),
                    "members_named": [members_named(p.prompt, t) for t in p.texts],
                }
            )
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (target / f"{name}.jsonl.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        print(name, len(rows), Counter(r["similar"] for r in rows), len({r["category"] for r in rows}), "categories")


def cv_table(out: Path) -> None:
    """Every lever's grouped-CV figures as a markdown table: means over every seed's folds, each seed's mean beside
    (AUC on all keyed pairs and on one-member pairs; splits and joins at the threshold its validation split chose)."""
    rows = []
    for folder in sorted((out / "cv").iterdir()):
        results = {f.stem: json.loads(f.read_text()) for f in sorted(folder.glob("seed-*-fold-*.json"))}
        if not results or any("one_member" not in r for r in results.values()):
            continue
        seeds = sorted({name.split("-")[1] for name in results})

        def mean(get, only=None):
            values = [get(r) for name, r in results.items() if only is None or name.split("-")[1] == only]
            values = [v for v in values if v is not None]
            return float(np.mean(values)) if values else float("nan")

        per_seed = " / ".join(f"{mean(lambda r: r['one_member']['model']['auc'], seed):.3f}" for seed in seeds)
        one = "one_member"
        rows.append(
            f"| `{folder.name.replace('+', '/')}` | {len(results)} | {mean(lambda r: r['model']['val_auc']):.3f} | "
            f"{mean(lambda r: r['model']['auc']):.3f} | {mean(lambda r: r['content_rule']['auc']):.3f} | "
            f"{mean(lambda r: r['model']['splits']):.3f} | {mean(lambda r: r['model']['joins']):.3f} | "
            f"{mean(lambda r: r[one]['model']['auc']):.3f} ({per_seed}) | {mean(lambda r: r[one]['content_rule']['auc']):.3f} | "
            f"{mean(lambda r: r[one]['model']['splits']):.3f} | {mean(lambda r: r[one]['model']['joins']):.3f} | "
            f"{mean(lambda r: r['model']['seconds']):.0f} |"
        )
    print(
        "| lever (data/recipe) | folds | validation AUC | AUC, all keyed pairs | content-word rule | split | joined | "
        "AUC, one-member pairs (per seed) | content-word rule | split | joined | s per fold |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


def heldout_table(out: Path, seeds: list[int], levers: list[str]) -> None:
    """The ``heldout`` results as one markdown table: per seed, each lever and each rule (AUC on every keyed pair and
    on those of two one-member answers; its partition's splits and joins over every keyed pair)."""

    def share(part: dict[str, Any], key: str) -> str:
        return f"{part[key]['share']:.3f}"

    print(
        "| seed | scored by | validation AUC | held-out AUC, all keyed pairs | one-member pairs | partition: splits | "
        "joins |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for seed in seeds:
        rules = json.loads((out / "heldout" / f"rules-seed-{seed}.json").read_text())
        for lever in levers:
            path = out / "heldout" / lever.replace("/", "+") / f"seed-{seed}.json"
            if not path.exists():
                continue
            r = json.loads(path.read_text())
            print(
                f"| {seed} | `{lever}` | {r['trained']['val_auc']:.3f} | {r['all']['auc']:.3f} | "
                f"{r['one_member']['auc']:.3f} | {share(r['partition'], 'splits_same_key')} | "
                f"{share(r['partition'], 'joins_different_keys')} |"
            )
        content = rules["content_rule"]
        for name, part in rules["partitions"]["partitions"].items():
            aucs = (
                f"{content['all']['auc']:.3f} | {content['one_member']['auc']:.3f}"
                if name == "content-word rule"
                else "— | —"
            )
            print(
                f"| {seed} | {name} | — | {aucs} | {share(part, 'splits_same_key')} | "
                f"{share(part, 'joins_different_keys')} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("diagnose-chain", "cv", "cv-table", "heldout", "heldout-table", "package"))
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--levers", default="chain/today")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.command == "diagnose-chain":
        diagnose_chain(args.data, args.out, seeds)
    elif args.command == "cv-table":
        cv_table(args.out)
    elif args.command == "cv":
        cv(args.data, args.out, seeds, args.levers.split(","))
    elif args.command == "heldout":
        heldout(args.data, args.out, seeds, args.levers.split(","))
    elif args.command == "heldout-table":
        heldout_table(args.out, seeds, args.levers.split(","))
    else:  # the pairs of the first seed, into --out (classifier/resources)
        package(args.data, seeds[0], args.out)


if __name__ == "__main__":
    main()
