"""Issue 48's protocol for *fine-tuned* levers: grouped K-fold CV on the 857-pair train part of NoveltyBench's 1,000,
then one model on the whole train part scored once on the 143-pair test part and on the packaged checks (the 100
held-out human pairs, the minimal pairs). Every model's per-pair probabilities are kept, so seed ensembles, fold
bags and a head over the fine-tuned score and word overlap are computed afterwards (``--analyse``) without training.

A lever is a classifier preset, option overrides and extra training pairs added to every training side (never to a
held-out side): ``cf`` counterfactual negatives and ``aug`` key-word swaps / sentence shuffles, both made from that
training side (``classifier_check_levers``); ``items`` the item-rule pairs of the start policy's answers
(``item_pairs_lever.py --no-train`` writes them; no NoveltyBench prompt among them).

Levers run as parallel processes (``--jobs``; one GPU shares well), each fold resumable (``classifier_quality.run_fold``
reuses a finished fold). Checkpoints are deleted once a fold is scored.

    python bench/studies/classifier_lever_cv.py --out runs/lever-cv --item-pairs runs/item-pairs-lever/item_pairs.jsonl
    python bench/studies/classifier_lever_cv.py --out runs/lever-cv --levers cpu,cpu+items --jobs 2 --set epochs=1
    python bench/studies/classifier_lever_cv.py --out runs/lever-cv --analyse     # tables from the kept predictions
    python bench/studies/classifier_lever_cv.py --out runs/lever-cv --same-as runs/old-lever-cv  # a rerun changed?
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from classifier_quality import load_pairs, protocol_folds, protocol_split, run_fold  # noqa: E402

START_SCALE = "_start_scale"  # not a config field: the bench sets a's start itself (start_scale_at)

# name -> (preset, overrides, extra pair kinds)
LEVERS: dict[str, tuple[str, dict, tuple[str, ...]]] = {
    "cpu": ("cpu", {}, ()),
    "cpu-seed1": ("cpu", {"seed": 1}, ()),
    "cpu-seed2": ("cpu", {"seed": 2}, ()),
    "cpu+cf": ("cpu", {}, ("cf",)),
    "cpu+aug": ("cpu", {}, ("aug",)),
    "cpu+items": ("cpu", {}, ("items",)),
    "cpu+cf+items": ("cpu", {}, ("cf", "items")),
    "cpu+aug+items": ("cpu", {}, ("aug", "items")),
    "cpu-freeze2": ("cpu", {"freeze_layers": 2}, ()),
    "cpu-epochs5": ("cpu", {"epochs": 5}, ()),
    "cpu-cross": ("cpu-cross", {}, ()),
    "cpu-freeze2+items": ("cpu", {"freeze_layers": 2}, ("items",)),
    "cpu-epochs5+items": ("cpu", {"epochs": 5}, ("items",)),
    "cpu-freeze2-seed1": ("cpu", {"freeze_layers": 2, "seed": 1}, ()),
    "cpu-freeze2-seed2": ("cpu", {"freeze_layers": 2, "seed": 2}, ()),
    "cpu-freeze0": ("cpu", {"freeze_layers": 0}, ()),
    "cpu-freeze0+cf": ("cpu", {"freeze_layers": 0}, ("cf",)),
    # a's start: the fitted decision boundary kept, a itself started at 1 (item folds that started small ranked
    # the minimal pairs better); CoSENT ranks cosines whatever a is (a, b fitted beside it on detached cosines).
    "cpu-a1": ("cpu", {START_SCALE: 1.0}, ()),
    "cpu-a1+items": ("cpu", {START_SCALE: 1.0}, ("items",)),
    "cpu-cosent": ("cpu", {"bi_loss": "cosent"}, ()),
    "cpu-cosent+items": ("cpu", {"bi_loss": "cosent"}, ("items",)),
    # all-mpnet-base-v2 (110M, 12 layers; PyPI in five parts, not packaged): the `cpu` recipe's top 2 layers train.
    # Its folder comes from $DARLING_BENCH_MPNET (not a BERT-family model, so no frozen-layer cache: full forwards).
    "mpnet": ("cpu", {"backbone": "env:DARLING_BENCH_MPNET", "freeze_layers": 10}, ()),
    "mpnet+items": ("cpu", {"backbone": "env:DARLING_BENCH_MPNET", "freeze_layers": 10}, ("items",)),
}
CHECK_SETS = ("noveltybench-heldout", "minimal-pairs")


def extra_pairs(kinds: tuple[str, ...], train: list, item_pairs: list) -> list:
    from classifier_check_levers import augmented, counterfactual_negatives

    made = {"cf": counterfactual_negatives, "aug": augmented}
    return [p for k in kinds for p in (item_pairs if k == "items" else made[k](train))]


def from_env(value):
    """``env:NAME`` is the value of $NAME (a machine's own path); anything else is itself."""
    return os.environ[value[4:]] if isinstance(value, str) and value.startswith("env:") else value


def start_scale_at(scale: float) -> None:
    """Start a at ``scale`` with the fitted decision boundary kept (cos* = -b/a, 0.5 at the defaults): training's
    own start (``init_affine``) runs first, then a and b are rescaled. In this process only; calling it again (the
    next run of the lever) wraps the original start, not the last wrapper."""
    import torch

    from darling.classifier import bi_encoder_training as bt

    fitted = getattr(bt, "_fitted_init_affine", bt.init_affine)
    bt._fitted_init_affine = fitted

    def init_then_rescale(model, *args, **kwargs) -> None:
        fitted(model, *args, **kwargs)
        with torch.no_grad():
            boundary = -float(model.bias) / float(model.scale)
            model.scale.fill_(scale)
            model.bias.fill_(-scale * boundary)

    bt.init_affine = init_then_rescale


def predictions(path: Path) -> dict[str, float]:
    return {r["pair_id"]: r["prob_equivalent"] for r in map(json.loads, path.read_text().splitlines())}


def scored_run(name: str, lever: str, train: list, held: list, folder: Path, item_pairs: list, fixed: dict) -> dict:
    """One model: trained on ``train`` + its extras, its probabilities on ``held`` and on each check."""
    preset, overrides, kinds = LEVERS[lever]
    overrides = {k: from_env(v) for k, v in overrides.items()}
    if START_SCALE in overrides:
        start_scale_at(overrides.pop(START_SCALE))
    extra = extra_pairs(kinds, train, item_pairs)
    fold = run_fold(name, {**overrides, **fixed}, preset, train + extra, held, folder)
    shutil.rmtree(folder / "clf" / "training" / "checkpoints", ignore_errors=True)
    checks = folder / "clf" / "training" / "checks"
    return {
        "held": dict(zip([p.pair_id for p in held], fold["probs"].tolist(), strict=True)),
        "checks": {c: predictions(checks / c / "predictions.jsonl") for c in CHECK_SETS},
        "extra_pairs": len(extra),
        "threshold": fold["threshold"],
        "val_auc": fold["val_auc"],
        "seconds": fold["seconds"],
    }


def run_names(folds: int) -> list[str]:
    return [*(f"fold-{i}" for i in range(folds)), "test-split"]


def run_lever(lever: str, out: Path, folds: int, item_pairs: list, fixed: dict, limit: int = 0, only: str = "") -> None:
    """The lever's folds and its test-split model, or only the run named ``only``."""
    pairs = load_pairs("noveltybench")
    train, test = protocol_split(pairs)
    if limit:  # a dry run of the script, not a measurement
        train, test, item_pairs = train[:limit], test[: limit // 4], item_pairs[: limit // 4]
    sides = [(f"fold-{i}", tr, he) for i, (tr, he) in enumerate(protocol_folds(pairs, train, folds))]
    spec = {"lever": lever, "spec": LEVERS[lever], "fixed": fixed, "limit": limit}
    for run, tr, he in [*sides, ("test-split", train, test)]:
        path = out / lever / f"{run}.json"
        # each run's predictions land as it ends: a cut-short lever keeps its finished folds
        if not path.exists() and only in ("", run):
            row = scored_run(lever, lever, tr, he, out / lever / run, item_pairs, fixed)
            path.write_text(json.dumps({**spec, "run": run, **row}) + "\n")


def launch(levers: list[str], args) -> None:
    """Each lever in its own process, ``--jobs`` at a time; logs in OUT/LEVER.log. With ``--per-run`` each of a
    lever's unfinished runs (fold or test split) is its own process, so a lever's runs go side by side too."""
    if args.per_run:
        done = lambda lever, run: (args.out / lever / f"{run}.json").exists()  # noqa: E731
        levers = [f"{lv}:{run}" for lv in levers for run in run_names(args.folds) if not done(lv, run)]
    pending, running = list(levers), []
    while pending or running:
        while pending and len(running) < args.jobs:
            lever = pending.pop(0)
            cmd = [sys.executable, __file__, "--out", str(args.out), "--one", lever, "--folds", str(args.folds)]
            cmd += [x for s in args.set for x in ("--set", s)]
            cmd += ["--item-pairs", str(args.item_pairs)] if args.item_pairs else []
            cmd += ["--limit", str(args.limit)] if args.limit else []
            log = (args.out / f"{lever}.log").open("w")
            running.append((lever, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), time.time()))
        time.sleep(2)
        for entry in list(running):
            lever, proc, start = entry
            if proc.poll() is not None:
                running.remove(entry)
                print(f"{lever}: rc {proc.returncode} after {time.time() - start:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--levers", default=",".join(LEVERS), help="comma-separated names (default: all)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=4, help="levers trained at once")
    ap.add_argument("--item-pairs", type=Path, default=None, help="jsonl of item-rule pairs (levers with items)")
    ap.add_argument("--set", action="append", default=[], help="KEY=JSON_VALUE for every lever (threads=2)")
    ap.add_argument("--limit", type=int, default=0, help="dry run: the first N train pairs only")
    ap.add_argument("--per-run", action="store_true", help="one process per fold / test split, not per lever")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--analyse", action="store_true", help="tables from the kept predictions; trains nothing")
    ap.add_argument("--same-as", type=Path, default=None, help="per run in both: the largest probability difference")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.same_as:
        from classifier_lever_tables import differences

        differences(args.out, args.same_as)
        return
    if args.analyse:
        from classifier_lever_tables import write_tables

        write_tables(args.out)
        return
    fixed = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    items = list(load_pairs(str(args.item_pairs)).pairs) if args.item_pairs else []
    if args.one:
        lever, _, only = args.one.partition(":")
        run_lever(lever, args.out, args.folds, items, fixed, args.limit, only)
        return
    levers = args.levers.split(",")
    unknown = [lever for lever in levers if lever not in LEVERS]
    if unknown or (not items and any("items" in LEVERS[lever][2] for lever in levers)):
        raise SystemExit(f"unknown lever {unknown} or --item-pairs missing; levers: {', '.join(LEVERS)}")
    launch(levers, args)


if __name__ == "__main__":
    main()
