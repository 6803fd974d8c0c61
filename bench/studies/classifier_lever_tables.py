"""Tables of ``classifier_lever_cv.py``'s kept predictions: per lever, grouped-CV ROC-AUC on the train part (pooled
out-of-fold, bootstrap interval over pairs), then the one model on the whole train part scored once on the 143-pair
test part, NoveltyBench's 100 held-out pairs and the minimal pairs. Derived levers train nothing:

- ``ensemble(A,B,..)``: the mean probability of levers trained alike with other seeds, fold by fold;
- ``LEVER bag``: the mean of LEVER's five fold models on the checks (CV column: its out-of-fold scores, as LEVER);
- ``LEVER + overlap head``: a logistic regression over LEVER's probability and token Jaccard, fitted on LEVER's
  out-of-fold scores of the train part (its CV column: a second, nested 5-fold CV over those scores).

Writes OUT/levers.json and OUT/levers.md. ``differences(OUT, OTHER)`` prints, per run both folders hold, the largest
difference of any probability (held-out side and checks): a rerun that should not have changed shows ~1e-7.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from darling.classifier.calibration import bootstrap_intervals
from darling.classifier.labelled_pairs import load_pairs
from darling.core.lexical import jaccard

CHECKS = ("noveltybench-heldout", "minimal-pairs")
ENSEMBLES = {"ensemble(cpu, seeds 0-2)": ("cpu", "cpu-seed1", "cpu-seed2")}


def load_runs(out: Path) -> dict[str, dict[str, dict]]:
    runs: dict[str, dict[str, dict]] = {}
    for path in sorted(out.glob("*/*.json")):
        row = json.loads(path.read_text())
        runs.setdefault(row["lever"], {})[row["run"]] = row
    return runs


def differences(out: Path, other: Path) -> None:
    theirs = load_runs(other)
    for lever, runs in load_runs(out).items():
        for run, row in sorted(runs.items()):
            if run in theirs.get(lever, {}):
                ours, old = row, theirs[lever][run]
                sides = [(ours["held"], old["held"])] + [(ours["checks"][c], old["checks"][c]) for c in CHECKS]
                most = max(abs(a[k] - b[k]) for a, b in sides for k in a)
                print(f"{lever} {run}: largest probability difference {most:.1e}")


def pair_table() -> dict[str, tuple[int, float]]:
    """Every pair id of the 1,000 and of the checks -> (label, token Jaccard)."""
    out = {}
    for name in ("noveltybench", *CHECKS):
        out.update({p.pair_id: (int(p.similar), jaccard(*p.texts)) for p in load_pairs(name).pairs})
    return out


def auc_cell(ids: list[str], scores: dict[str, float], pairs) -> dict:
    y = np.array([pairs[i][0] for i in ids])
    s = np.array([scores[i] for i in ids])
    low, high = bootstrap_intervals(y, s, 0.5)["roc_auc"]
    return {"roc_auc": round(float(roc_auc_score(y, s)), 3), "interval": [round(low, 2), round(high, 2)], "n": len(y)}


def lever_scores(runs: dict[str, dict]) -> dict[str, dict[str, float]] | None:
    """A lever's score sets: ``cv`` (out-of-fold on the folds that finished), ``test`` and each check (the
    test-split model, when it finished) and each check's fold bag (the mean of the finished fold models)."""
    folds = [r for name, r in sorted(runs.items()) if name.startswith("fold-")]
    if not folds:
        return None
    sets = {"cv": {k: v for r in folds for k, v in r["held"].items()}}
    for check in CHECKS:
        ids = list(folds[0]["checks"][check])
        sets[f"{check} bag"] = {i: float(np.mean([r["checks"][check][i] for r in folds])) for i in ids}
    if "test-split" in runs:
        sets["test"] = runs["test-split"]["held"]
        sets |= {check: runs["test-split"]["checks"][check] for check in CHECKS}
    return sets


def mean_sets(members: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    keys = set.intersection(*(set(m) for m in members))
    return {k: {i: float(np.mean([m[k][i] for m in members])) for i in members[0][k]} for k in keys}


def overlap_head(sets: dict[str, dict[str, float]], pairs) -> dict[str, dict[str, float]]:
    """LR over (probability, Jaccard): nested 5-fold CV on the out-of-fold scores; fitted on all of them for the
    test part and the checks."""
    ids = list(sets["cv"])
    x = np.array([[sets["cv"][i], pairs[i][1]] for i in ids])
    y = np.array([pairs[i][0] for i in ids])
    nested = np.zeros(len(y))
    for tr, he in StratifiedKFold(5, shuffle=True, random_state=7).split(x, y):
        nested[he] = LogisticRegression(class_weight="balanced").fit(x[tr], y[tr]).predict_proba(x[he])[:, 1]
    model = LogisticRegression(class_weight="balanced").fit(x, y)
    out = {"cv": dict(zip(ids, nested.tolist(), strict=True))}
    for key in ("test", *CHECKS, *(f"{c} bag" for c in CHECKS)):
        if key not in sets:
            continue
        keys = list(sets[key])
        z = np.array([[sets[key][i], pairs[i][1]] for i in keys])
        out[key] = dict(zip(keys, model.predict_proba(z)[:, 1].tolist(), strict=True))
    return out


def write_tables(out: Path) -> None:
    pairs, runs = pair_table(), load_runs(out)
    sets = {lever: s for lever, r in runs.items() if (s := lever_scores(r))}
    for name, members in ENSEMBLES.items():
        if all(m in sets for m in members):
            sets[name] = mean_sets([sets[m] for m in members])
    for lever in [k for k in list(sets) if not k.startswith("ensemble")]:
        sets[f"{lever} + overlap head"] = overlap_head(sets[lever], pairs)
    rows = {}
    for lever, s in sets.items():
        keys = ("cv", "test", *CHECKS, *(f"{c} bag" for c in CHECKS))
        row = {key: auc_cell(list(s[key]), s[key], pairs) for key in keys if key in s}
        finished = runs.get(lever, {})
        row["folds"] = sum(name.startswith("fold-") for name in finished)
        row["worst_fold"] = worst_fold(finished, pairs)
        seconds = [r["seconds"] for r in finished.values() if r.get("seconds")]
        row["seconds_per_run"] = round(float(np.mean(seconds)), 1) if seconds else None
        rows[lever] = row
    jac = {i: v[1] for i, v in pairs.items()}
    ids = {key: list(s[key]) for s in sets.values() for key in s if not key.endswith("bag")}
    cv_ids = list({i: 0 for s in sets.values() for i in s["cv"]})  # every train-part pair any lever held out
    rows["token Jaccard"] = {key: auc_cell(cv_ids if key == "cv" else ids[key], jac, pairs) for key in ids}
    (out / "levers.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "levers.md").write_text(markdown(rows))
    print(markdown(rows))


def worst_fold(finished: dict[str, dict], pairs) -> float | None:
    """The lowest single-fold AUC: a run that ranks its held-out fold backwards (below 0.5) shows here, where the
    pooled figure only sinks."""
    folds = [r["held"] for name, r in finished.items() if name.startswith("fold-")]
    aucs = [roc_auc_score([pairs[i][0] for i in held], list(held.values())) for held in folds]
    return round(float(min(aucs)), 2) if aucs else None


def markdown(rows: dict[str, dict]) -> str:
    def cell(c: dict | None) -> str:
        return f"{c['roc_auc']:.3f} [{c['interval'][0]:.2f}, {c['interval'][1]:.2f}]" if c else "–"

    lines = [
        "| lever | grouped 5-fold CV, 857 | test part, 143 | the 100 | minimal pairs | the 100, fold bag "
        "| minimal, fold bag | folds | worst fold | s / run |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for lever, r in rows.items():
        cells = [cell(r.get(k)) for k in ("cv", "test", *CHECKS, *(f"{c} bag" for c in CHECKS))]
        tail = f" | {r.get('folds', '–')} | {r.get('worst_fold') or '–'} | {r.get('seconds_per_run') or '–'} |"
        lines.append(f"| {lever} | " + " | ".join(cells) + tail)
    return "\n".join(lines) + "\n"
