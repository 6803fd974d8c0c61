"""Levers for the equivalence classifier against the packaged checks (issue 48), with untrained features only.

Protocol: every lever is chosen by grouped 5-fold cross-validation on NoveltyBench's 1,000 human pairs (folds
stratified by label and grouped by prompt, seed 7: pooled out-of-fold ROC-AUC, bootstrap 95% interval over pairs);
then each is fitted once on the 1,000 and scored once on the two packaged checks, which chose nothing:
``noveltybench-heldout`` (NoveltyBench's 100 held-out pairs) and ``minimal-pairs`` (meaning over wording). A lever
here is a logistic-regression head over per-pair features of the untrained packaged MiniLM and of word overlap:

- ``cos``: cosine of the two responses' mean-pooled MiniLM embeddings (510 tokens each);
- ``diff_cos``: cosine of the embeddings of what the two responses do *not* share: each response's words that the
  other lacks, in order (a response whose every word the other has keeps its whole text). A paraphrase's leftover
  words still say the same thing; a key-item swap leaves just the two items ("apple" against "pear");
- ``residual_cos``: the cosine after removing each embedding's component along the prompt's embedding;
- ``jaccard``, ``rouge1``: word overlap (``darling.core.lexical``); ``len_ratio``: shorter / longer in words.

Embeddings are cached in ``--out`` (``features.npz``), so a rerun recomputes nothing.

    python bench/studies/classifier_check_levers.py --out runs/check-levers
    python bench/studies/classifier_check_levers.py --out runs/check-levers --export main=runs/pipeline/classifier

``--augment``: also the levers trained with synthetic pairs made from the 1,000 (never from a check): key-word swaps
and sentence shuffles (``augmented``), and counterfactual negatives (``counterfactual_negatives``); each fold trains on
those made from its own training side, and its held-out side's give a dev AUC of meaning (the synthetic column).

``--item-pairs FILE``: also the levers trained with the item-rule pairs of the start policy's answers
(``item_pairs_lever.py``; no NoveltyBench prompt among them), added whole to every fold's training side: real
near-identical answers that name different items (not equivalent) beside same-item answers in other words.

``--export NAME=DIR``: a trained export scored on the two checks as it is (no cross-validation: it may have trained on
some of the 1,000), for the table's reference rows.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from darling.classifier.calibration import binary_metrics, bootstrap_intervals, choose_threshold
from darling.classifier.config import CHECK_NAMES
from darling.classifier.labelled_pairs import kfold_pairs, load_pairs
from darling.classifier.zero_shot import untrained_classifier
from darling.core.encoders import PACKAGED_MINILM
from darling.core.lexical import jaccard, rouge1_f, tokens

CV_SEED, FOLDS = 7, 5
LEVERS = [
    ("jaccard",),
    ("rouge1",),
    ("cos",),
    ("diff_cos",),
    ("cos", "diff_cos"),
    ("cos", "jaccard", "rouge1"),
    ("cos", "jaccard", "rouge1", "len_ratio"),
    ("cos", "residual_cos", "jaccard", "rouge1", "len_ratio"),
    ("cos", "diff_cos", "jaccard", "rouge1", "len_ratio"),
    ("cos", "diff_cos", "residual_cos", "jaccard", "rouge1", "len_ratio"),
]

AUGMENTED_LEVERS = [
    ("cos", "diff_cos"),
    ("cos", "diff_cos", "jaccard", "rouge1", "len_ratio"),
    ("cos", "diff_cos", "residual_cos", "jaccard", "rouge1", "len_ratio"),
]


def leftover(a: str, b: str) -> str:
    """The words of ``a`` that ``b`` lacks, in order; all of ``a`` when ``b`` has every one of them."""
    others = set(tokens(b))
    words = [w for w in re.findall(r"\w+", a) if w.lower() not in others]
    return " ".join(words) if words else a


SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def rare_words(docs: list[str]) -> set[str]:
    """Words of 4+ letters in at most 2% of the documents: the likeliest names of what a response is about."""
    from collections import Counter

    df = Counter(w for d in docs for w in set(tokens(d)))
    return {w for w, n in df.items() if n <= 0.02 * len(docs) and w.isalpha() and len(w) >= 4}


def key_word(text: str, rare: set[str]) -> str | None:
    """The response's most repeated rare word (4+ letters): the likeliest name of what it is about."""
    words = [w for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() in rare]
    return max(set(words), key=lambda w: (words.count(w), w)) if words else None


def swap(text: str, word: str, other: str) -> str:
    """Every occurrence of ``word`` (any case) replaced by ``other`` in the same case."""

    def same_case(m: re.Match) -> str:
        found = m.group(0)
        return other.upper() if found.isupper() else other.capitalize() if found[0].isupper() else other.lower()

    return re.sub(rf"\b{re.escape(word)}\b", same_case, text, flags=re.IGNORECASE)


def augmented(pairs, seed: int = 0) -> list:
    """Pairs made from the 1,000's own responses, never from a check: per response, the same text with its key word
    swapped for another response's (not equivalent) and with its sentences reordered (equivalent)."""
    import random

    from darling.core.schemas import LabelledPair

    rng = random.Random(seed)
    docs = [p.generation_0 for p in pairs]
    rare = rare_words(docs)
    keys = [key_word(d, rare) for d in docs]
    out = []
    for i, p in enumerate(pairs):
        word = keys[i]
        others = [
            k for j, k in enumerate(keys) if k and pairs[j].prompt != p.prompt and k.lower() != (word or "").lower()
        ]
        if word and others:
            text = swap(p.generation_0, word, rng.choice(others))
            out.append(LabelledPair(p.prompt, p.generation_0, text, 0, pair_id=f"swap:{p.pair_id}"))
        parts = [s for s in SENTENCE.split(p.generation_0) if s.strip()]
        if len(parts) >= 3:
            rng.shuffle(parts)
            out.append(LabelledPair(p.prompt, p.generation_0, " ".join(parts), 1, pair_id=f"shuffle:{p.pair_id}"))
    return out


def counterfactual_negatives(pairs, seed: int = 0) -> list:
    """Hard negatives from the human-equivalent pairs (issue 48's "key-item swaps from the data you have"): for each
    equivalent pair whose two responses share a rare word (4+ letters, in at most 2% of responses), the second
    response with every occurrence of that word swapped for another prompt's key word, neither response has: the
    same wording difference as the human pair, plus a changed key item. Pair ids ``cf:SOURCE``."""
    import random

    from darling.core.schemas import LabelledPair

    rng = random.Random(seed)
    docs = [t for p in pairs for t in p.texts]
    rare = rare_words(docs)
    keys = [(p.prompt, key_word(p.generation_0, rare)) for p in pairs]
    out = []
    for p in pairs:
        a, b = tokens(p.generation_0), tokens(p.generation_1)
        shared = [w for w in set(a) & set(b) if w in rare]
        if not p.similar or not shared:
            continue
        word = max(shared, key=lambda w: (a.count(w) + b.count(w), w))
        others = [k for q, k in keys if k and q != p.prompt and k.lower() not in set(a) | set(b)]
        text = swap(p.generation_1, word, rng.choice(others))
        out.append(LabelledPair(p.prompt, p.generation_0, text, 0, pair_id=f"cf:{p.pair_id}"))
    return out


def embed_features(pairs, embed) -> dict[str, np.ndarray]:
    texts = [t for p in pairs for t in p.texts]
    rest = [x for p in pairs for x in (leftover(*p.texts), leftover(*reversed(p.texts)))]
    e, d, q = embed(texts), embed(rest), embed([p.prompt for p in pairs])

    def cos(u, v):
        return np.einsum("ij,ij->i", u, v) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))

    a, b = e[0::2], e[1::2]
    ra = a - np.einsum("ij,ij->i", a, q)[:, None] * q
    rb = b - np.einsum("ij,ij->i", b, q)[:, None] * q
    words = np.array([sorted((len(tokens(x)), len(tokens(y)))) for x, y in (p.texts for p in pairs)], dtype=float)
    return {
        "cos": cos(a, b),
        "diff_cos": cos(d[0::2], d[1::2]),
        "residual_cos": cos(ra, rb),
        "jaccard": np.array([jaccard(*p.texts) for p in pairs]),
        "rouge1": np.array([rouge1_f(*p.texts) for p in pairs]),
        "len_ratio": words[:, 0] / np.maximum(words[:, 1], 1),
    }


def features_of(sets: dict[str, list], cache: Path) -> dict[str, dict[str, np.ndarray]]:
    if cache.exists():
        flat = np.load(cache)
        return {s: {k.split("/", 1)[1]: flat[k] for k in flat.files if k.startswith(s + "/")} for s in sets}
    clf = untrained_classifier(PACKAGED_MINILM, None, 32, False, "cpu")
    start = time.perf_counter()
    out = {name: embed_features(pairs, clf.embed) for name, pairs in sets.items()}
    print(f"features of {sum(map(len, sets.values()))} pairs in {time.perf_counter() - start:.0f} s", flush=True)
    np.savez(cache, **{f"{s}/{k}": v for s, f in out.items() for k, v in f.items()})
    return out


def scored(y: np.ndarray, scores: np.ndarray, threshold: float) -> dict:
    m, iv = binary_metrics(y, scores, threshold), bootstrap_intervals(y, scores, threshold)
    return {k: [round(m[k], 3), *(round(x, 3) for x in iv[k])] for k in ("roc_auc", "balanced_accuracy")}


class Head:
    """Standardised features -> logistic regression (balanced classes), or gradient-boosted trees (``trees``: lets
    overlap and the leftover's cosine interact); threshold for balanced accuracy."""

    def __init__(self, x: np.ndarray, y: np.ndarray, trees: bool = False):
        from sklearn.ensemble import HistGradientBoostingClassifier

        self.mu, self.sd = x.mean(0), x.std(0) + 1e-9
        model = (
            HistGradientBoostingClassifier(max_depth=3, max_iter=200, learning_rate=0.05, class_weight="balanced")
            if trees
            else LogisticRegression(class_weight="balanced", max_iter=2000)
        )
        self.model = model.fit((x - self.mu) / self.sd, y)
        self.threshold = choose_threshold(y, self(x))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.model.predict_proba((x - self.mu) / self.sd)[:, 1]


def lever_row(columns, feats, labels, folds, augment=None, trees=False, kind="swaps/shuffles") -> dict:
    """``augment``: (source index of each synthetic pair in the 1,000) -- a fold trains on the synthetic pairs made
    from its own training side only, and its held-out side's synthetic pairs give the dev AUC of meaning. Synthetic
    sets of negatives only (the counterfactuals) are scored against their own human-equivalent sources. Sources of
    -1 (pairs from elsewhere: the item-rule pairs) join every fold's training side and have no dev AUC."""
    x = {s: np.stack([feats[s][c] for c in columns], 1) for s in feats}
    oof = np.zeros(len(labels["train"]))
    aug_oof = np.zeros(len(labels["aug"])) if augment is not None else None
    for train, held in folds:
        xs, ys = x["train"][train], labels["train"][train]
        if augment is not None:
            mine = np.isin(augment, train) | (augment < 0)
            xs, ys = np.concatenate([xs, x["aug"][mine]]), np.concatenate([ys, labels["aug"][mine]])
        head = Head(xs, ys, trees)
        oof[held] = head(x["train"][held])
        if augment is not None and (augment >= 0).any():
            theirs = np.isin(augment, held)
            aug_oof[theirs] = head(x["aug"][theirs])
    name = " + ".join(columns) + (" (trees)" if trees else "") + (f" + {kind}" if augment is not None else "")
    row = {"lever": name, "cv_1000": scored(labels["train"], oof, 0.5)}
    row["cv_synthetic"] = None
    if augment is not None and (augment >= 0).any():
        y, s = labels["aug"], aug_oof
        if not y.any():  # negatives only: against the human-equivalent pairs they were made from
            y, s = np.concatenate([y, labels["train"][augment]]), np.concatenate([s, oof[augment]])
        row["cv_synthetic"] = scored(y, s, 0.5)
    xs, ys = x["train"], labels["train"]
    if augment is not None:
        xs, ys = np.concatenate([xs, x["aug"]]), np.concatenate([ys, labels["aug"]])
    head = Head(xs, ys, trees)
    for name in CHECK_NAMES:
        row[name] = scored(labels[name], head(x[name]), head.threshold)
    return row


def export_row(name: str, path: str, sets: dict) -> dict:
    from darling.classifier.scoring import load_scorer  # loads torch

    clf = load_scorer(path)
    row = {"lever": f"export {name} ({path})", "cv_1000": None, "cv_synthetic": None}
    for check in CHECK_NAMES:
        pairs = sets[check]
        row[check] = scored(
            np.array([p.similar for p in pairs]), clf.prob_equivalent([p.texts for p in pairs]), clf.threshold
        )
    return row


def markdown(rows: list[dict]) -> str:
    def cell(v):
        return "–" if v is None else f"{v['roc_auc'][0]:.3f} [{v['roc_auc'][1]:.2f}, {v['roc_auc'][2]:.2f}]"

    lines = [
        "| lever (untrained MiniLM + overlap, LR head) | grouped 5-fold CV AUC on the 1,000 | CV AUC, synthetic "
        "pairs | AUC on the 100 held-out | AUC on the minimal pairs | balanced acc. 100 / minimal |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        bal = " / ".join(f"{r[c]['balanced_accuracy'][0]:.3f}" for c in CHECK_NAMES)
        cells = [cell(r[k]) for k in ("cv_1000", "cv_synthetic", *CHECK_NAMES)]
        lines.append(f"| {r['lever']} | {' | '.join(cells)} | {bal} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--augment", action="store_true", help="also the levers trained with synthetic pairs")
    ap.add_argument("--item-pairs", type=Path, default=None, help="also the levers trained with these item-rule pairs")
    ap.add_argument("--export", action="append", default=[], help="NAME=DIR: a trained export's rows on the checks")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    train = load_pairs("noveltybench")
    sets = {"train": train.pairs, **{name: load_pairs(name).pairs for name in CHECK_NAMES}}
    labels = {s: np.array([p.similar for p in pairs]) for s, pairs in sets.items()}
    position = {id(p): i for i, p in enumerate(train.pairs)}
    folds = [
        ([position[id(p)] for p in tr], [position[id(p)] for p in he]) for tr, he in kfold_pairs(train, FOLDS, CV_SEED)
    ]
    feats = features_of(sets, args.out / "features.npz")
    rows = [lever_row(list(c), feats, labels, folds) for c in LEVERS]
    if args.augment:
        index = {p.pair_id: i for i, p in enumerate(train.pairs)}
        kinds = {"swaps/shuffles": augmented, "counterfactual negatives": counterfactual_negatives}
        for (kind, make), cache in zip(kinds.items(), ("features-aug.npz", "features-cf.npz"), strict=True):
            synthetic = make(train.pairs)
            source = np.array([index[p.pair_id.split(":", 1)[1]] for p in synthetic])
            feats["aug"] = features_of({"aug": synthetic}, args.out / cache)["aug"]
            labels["aug"] = np.array([p.similar for p in synthetic])
            print(f"{kind}: {int((labels['aug'] == 0).sum())} negatives, {int(labels['aug'].sum())} positives")
            for columns in AUGMENTED_LEVERS:
                for trees in (False, True):
                    rows.append(lever_row(list(columns), feats, labels, folds, source, trees, kind))
    if args.item_pairs:
        items = load_pairs(str(args.item_pairs)).pairs
        feats["aug"] = features_of({"aug": items}, args.out / "features-items.npz")["aug"]
        labels["aug"] = np.array([p.similar for p in items])
        print(f"item-rule pairs: {int((labels['aug'] == 0).sum())} negatives, {int(labels['aug'].sum())} positives")
        elsewhere = np.full(len(items), -1)
        for columns in AUGMENTED_LEVERS:
            for trees in (False, True):
                rows.append(lever_row(list(columns), feats, labels, folds, elsewhere, trees, "item pairs"))
    rows += [export_row(*spec.split("=", 1), sets) for spec in args.export]
    for row in rows:
        print(json.dumps(row), flush=True)
    (args.out / "levers.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "levers.md").write_text(markdown(rows) + "\n")
    print(markdown(rows))
    assert roc_auc_score(labels["minimal-pairs"], feats["minimal-pairs"]["jaccard"]) < 0.1  # the set's construction


if __name__ == "__main__":
    main()
