"""Cheap levers for the equivalence classifier, measured on the train part only (the test part is never read).

Untrained embedding backbones (cosine of their own pooled embeddings), lexical overlap, and logistic-regression
combinations of them, each scored by grouped 5-fold cross-validation on the same 857-pair train part of
NoveltyBench's human pairs that ``classifier_quality.py --cv 5`` uses (same split seed, same folds): pooled
out-of-fold ROC-AUC, and accuracy at a threshold fitted for accuracy on each fold's training side. The point is
to see, before paying for fine-tuning runs, whether a bigger packaged encoder or a lexical feature beside the
cosine moves the out-of-fold figures at all.

    python bench/studies/classifier_levers.py                                   # MiniLM (packaged) + lexical
    python bench/studies/classifier_levers.py --backbone mpnet=/path/to/all-mpnet-base-v2   # add another encoder
    python bench/studies/classifier_levers.py --tokens 64,128,256 --words 50,100,200        # truncation (issue 37)

``--tokens``: MiniLM's cosine with each response cut to that many tokens (NoveltyBench's classifier reads 128);
``--words``: Jaccard and ROUGE-1 on each response's first that many words.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from darling.classifier.calibration import choose_threshold
from darling.classifier.labelled_pairs import PairSet, kfold_pairs, load_pairs, split_pairs
from darling.classifier.zero_shot import zero_shot_classifier
from darling.core.encoders import PACKAGED_MINILM
from darling.core.lexical import jaccard, rouge1_f

TEST_SEED, TEST_FRACTION, CV_SEED, FOLDS = 1234, 0.15, 7, 5  # as in classifier_quality.py


def cosines(backbone: str, pairs, prompts: bool, tokens: int | None = None) -> dict[str, np.ndarray]:
    """Zero-shot cosine of each pair (each response cut to ``tokens``; default the backbone's budget), and
    (``prompts``) the cosine after removing the shared prompt's direction."""
    fit = [p for p in pairs if p.similar][:4] + [p for p in pairs if not p.similar][:4]
    clf = zero_shot_classifier(backbone, fit, tokens)  # a, b fitted on 8 pairs: only the embeddings are used here
    start = time.perf_counter()
    emb = clf.embed([t for p in pairs for t in p.texts])
    a, b = emb[0::2], emb[1::2]
    out = {"cos": np.einsum("ij,ij->i", a, b), "seconds": np.array(time.perf_counter() - start)}
    if prompts:
        e = clf.embed([p.prompt for p in pairs])
        ra = a - np.einsum("ij,ij->i", a, e)[:, None] * e
        rb = b - np.einsum("ij,ij->i", b, e)[:, None] * e
        out["residual_cos"] = np.einsum("ij,ij->i", ra, rb) / (np.linalg.norm(ra, axis=1) * np.linalg.norm(rb, axis=1))
    return out


def cross_validate(features: dict[str, np.ndarray], columns: list[str], y: np.ndarray, folds) -> dict[str, float]:
    """Pooled out-of-fold AUC of a logistic regression on ``columns``; accuracy at each fold's fitted threshold."""
    x = np.stack([features[c] for c in columns], 1)
    scores, decisions = np.zeros(len(y)), np.zeros(len(y))
    for train, held in folds:
        mu, sd = x[train].mean(0), x[train].std(0) + 1e-9
        model = LogisticRegression(class_weight="balanced", max_iter=2000).fit((x[train] - mu) / sd, y[train])
        fitted = model.predict_proba((x[train] - mu) / sd)[:, 1]
        threshold = choose_threshold(y[train], fitted, "accuracy")
        scores[held] = model.predict_proba((x[held] - mu) / sd)[:, 1]
        decisions[held] = scores[held] >= threshold
    return {"roc_auc": round(float(roc_auc_score(y, scores)), 3), "accuracy": round(float((decisions == y).mean()), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backbone", action="append", default=[], help="NAME=PATH of another embedding backbone")
    ap.add_argument("--tokens", default="", help="comma-separated budgets: MiniLM's cosine cut to each")
    ap.add_argument("--words", default="", help="comma-separated counts: lexical overlap of the first N words")
    args = ap.parse_args()
    pairs = load_pairs("noveltybench")
    train, _ = split_pairs(pairs, TEST_FRACTION, TEST_SEED)  # the test part is dropped here, unread
    position = {id(p): i for i, p in enumerate(train)}
    folds = [
        ([position[id(p)] for p in tr], [position[id(p)] for p in he])
        for tr, he in kfold_pairs(PairSet(train, "train part", pairs.sha256), FOLDS, CV_SEED)
    ]
    y = np.array([p.similar for p in train])
    features = {
        "jaccard": np.array([jaccard(*p.texts) for p in train]),
        "rouge1": np.array([rouge1_f(*p.texts) for p in train]),
    }
    backbones = [("minilm", PACKAGED_MINILM), *(b.split("=", 1) for b in args.backbone)]
    rows = [("jaccard",), ("rouge1",), ("jaccard", "rouge1")]
    for name, path in backbones:
        got = cosines(path, train, prompts=name == "minilm")
        print(f"{name}: {len(train) * 2} texts embedded in {float(got.pop('seconds')):.0f} s", flush=True)
        features.update({f"{name}_{k}": v for k, v in got.items()})
        rows += [
            (f"{name}_cos",),
            (f"{name}_cos", "jaccard"),
            (f"{name}_cos", "rouge1"),
            (f"{name}_cos", "jaccard", "rouge1"),
        ]
    rows += [("minilm_residual_cos",), ("minilm_residual_cos", "rouge1")]
    for budget in [int(t) for t in args.tokens.split(",") if t]:
        features[f"minilm_cos_{budget}"] = cosines(PACKAGED_MINILM, train, prompts=False, tokens=budget)["cos"]
        rows += [(f"minilm_cos_{budget}",), (f"minilm_cos_{budget}", "jaccard")]
    for n in [int(w) for w in args.words.split(",") if w]:
        heads = [tuple(" ".join(t.split()[:n]) for t in p.texts) for p in train]
        features[f"jaccard_{n}"] = np.array([jaccard(*h) for h in heads])
        features[f"rouge1_{n}"] = np.array([rouge1_f(*h) for h in heads])
        rows += [(f"jaccard_{n}",), (f"rouge1_{n}",)]
    for columns in rows:
        result = cross_validate(features, list(columns), y, folds)
        print(json.dumps({"features": " + ".join(columns), **result}), flush=True)


if __name__ == "__main__":
    main()
