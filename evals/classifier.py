"""``darling eval classifier``: metrics of classifiers on labelled pairs, with bootstrap 95% intervals, ROC
and reliability plots (written by ``darling.classifier.report``).

Rows, all scored on the same pairs, each at its own threshold:
- ``model``: an export of either kind (its report goes to ``OUTPUT/``);
- ``compare=DIR2``: a second export (``OUTPUT/compare/``, ``metrics.json["compare"]``);
- ``zero_shot=BACKBONE``: an untrained embedding backbone, cosine with a, b and threshold fitted on
  ``fit_data`` (``OUTPUT/zero-shot/``, ``metrics.json["zero_shot"]``): what fine-tuning adds;
- ``baselines`` (default on): token Jaccard and ROUGE-1 F (``darling.core.lexical``), thresholds fitted on
  ``fit_data`` for ``baseline_objective`` (``OUTPUT/jaccard/``, ``OUTPUT/rouge1/``): what word overlap alone
  does. Without ``fit_data`` their thresholds are fitted on the evaluation pairs themselves, and every metric
  that depends on a threshold says so (``threshold_fitted_on``); ROC-AUC does not depend on one.
With more than one row, ``compare.md`` (a side-by-side table) and ``roc_compare.png`` are written too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from darling.classifier.export import ClassifierExport
from darling.classifier.labelled_pairs import PairSet, load_pairs
from darling.core.devices import resolve_device
from darling.core.lexical import BASELINES, overlap_scores
from darling.evals.config import ClassifierEvalConfig

# ROC-AUC and balanced accuracy first: they do not move with the share of equivalent pairs in the test set.
COMPARED = ("roc_auc", "balanced_accuracy", "accuracy", "precision", "recall", "f1", "ece", "threshold", "n")


@dataclass
class Row:
    name: str
    key: str  # "" for the main row, else its section of metrics.json
    probs: np.ndarray
    threshold: float
    extra: dict[str, Any]


@dataclass(frozen=True)
class ClassifierEvalInputs:
    """Every input of an evaluation, each read and checked once, before any model loads."""

    pairs: PairSet
    exports: dict[str, ClassifierExport]  # by row key: "" (``model``), "compare"
    fit: PairSet | None


def read_inputs(config: ClassifierEvalConfig) -> ClassifierEvalInputs:
    named = {"": config.model, "compare": config.compare}
    return ClassifierEvalInputs(
        pairs=load_pairs(config.data),
        exports={key: ClassifierExport(path) for key, path in named.items() if path is not None},
        fit=load_pairs(config.fit_data) if config.fit_data is not None else None,
    )


def _export_row(export: ClassifierExport, texts, config: ClassifierEvalConfig, key: str, device: str) -> Row:
    from darling.classifier.scoring import load_scorer  # loads torch

    # ``threshold`` is the main model's only: a threshold belongs to one model's probability scale
    threshold = config.threshold if key == "" else None
    # --device auto: this process's GPU when there is one: a 4B export scored on the CPU would take hours
    clf = load_scorer(export, threshold=threshold, device=device, batch_size=config.batch_size)
    used = clf.symmetric if config.symmetric is None else config.symmetric
    probs = clf.prob_equivalent(texts, symmetric=used)
    extra = {"model": str(export.path), "kind": clf.kind, "symmetric": used}
    return Row(str(export.path), key, probs, clf.threshold, extra)


def _zero_shot_row(backbone: str, fit: PairSet, fit_data, texts, batch_size: int, key: str, device: str) -> Row:
    from darling.classifier.zero_shot import zero_shot_classifier  # loads torch

    clf = zero_shot_classifier(backbone, fit.pairs, batch_size=batch_size, device=device)
    extra = {
        "model": f"zero-shot {backbone}",
        "kind": "bi-encoder (untrained)",
        "symmetric": False,
        "fit_data": str(fit_data),
        "fit_data_sha256": fit.sha256,
        "scale": clf.scale,
        "bias": clf.bias,
        "max_tokens_per_response": clf.encoder.max_tokens_per_response,
    }
    return Row(f"zero-shot {backbone}", key, clf.prob_equivalent(texts), clf.threshold, extra)


def _baseline_rows(config: ClassifierEvalConfig, inputs: ClassifierEvalInputs) -> list[Row]:
    """Token Jaccard, ROUGE-1 F and the content-word rule, each at a threshold fitted on ``fit_data`` (else on these
    pairs, said so)."""
    from darling.classifier.checks import overlap_threshold  # loads scikit-learn

    fit = (inputs.fit or inputs.pairs).pairs
    fitted_on = str(config.fit_data) if config.fit_data is not None else "these pairs (no --fit-data): optimistic"
    rows = []
    for key, (name, _) in BASELINES.items():
        threshold = overlap_threshold(fit, key, config.baseline_objective)
        extra = {
            "model": name,
            "kind": "word overlap",
            "symmetric": False,
            "threshold_fitted_on": fitted_on,
            "threshold_objective": config.baseline_objective,
        }
        rows.append(Row(name, key, overlap_scores(inputs.pairs.pairs, key), threshold, extra))
    return rows


def evaluate_classifier(config: ClassifierEvalConfig, inputs: ClassifierEvalInputs | None = None) -> dict[str, Any]:
    """Metrics of ``config.model`` on ``config.data``, and of ``compare`` / ``zero_shot`` on the same pairs.

    ``threshold`` applies to ``model`` only: every other row is judged at its own calibrated threshold
    (a threshold belongs to one model's probability scale). ``symmetric``, when given, applies to every
    cross-encoder export. ``inputs``: what ``read_inputs(config)`` returned, when the caller read them first.
    """
    c = config
    inputs = inputs or read_inputs(c)  # every input checked before any model loads
    if c.threads:
        import torch

        torch.set_num_threads(c.threads)
    texts = [p.texts for p in inputs.pairs.pairs]
    device = resolve_device(c.device)
    rows = [_export_row(export, texts, c, key, device) for key, export in inputs.exports.items()]
    if c.zero_shot is not None:
        assert inputs.fit is not None  # validate() refuses zero_shot without fit_data
        key = "zero_shot" if rows else ""
        rows.append(_zero_shot_row(c.zero_shot, inputs.fit, c.fit_data, texts, c.batch_size, key, device))
    if c.baselines:
        rows += _baseline_rows(c, inputs)
    return write_rows(rows, inputs.pairs, c.data, Path(c.output))


def write_rows(rows: list[Row], pairs, data, output: Path) -> dict[str, Any]:
    from darling.classifier.report import write_report  # loads scikit-learn

    common = {"data": str(data), "data_sha256": pairs.sha256}
    sections = {}
    for row in rows[1:]:
        folder = output / row.key.replace("_", "-")
        sections[row.key] = write_report(
            pairs.pairs, row.probs, row.threshold, folder, row.name, {**common, **row.extra}
        )
    metrics = write_report(
        pairs.pairs, rows[0].probs, rows[0].threshold, output, rows[0].name, {**common, **rows[0].extra, **sections}
    )
    if len(rows) > 1:
        names = _names([r.name for r in rows])
        _write_text(output / "compare.md", compare_table([metrics, *sections.values()], names))
        labels = np.array([p.similar for p in pairs.pairs])
        if len(set(labels.tolist())) == 2:
            plot_roc_rows(labels, {n: r.probs for n, r in zip(names, rows, strict=True)}, output / "roc_compare.png")
    return metrics


def _names(names: list[str]) -> list[str]:
    """Folder names, or the full paths when two rows share a folder name (runs/x/clf vs runs/y/clf)."""
    short = [Path(n).name if not n.startswith("zero-shot") else n for n in names]
    return short if len(set(short)) == len(short) else names


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _cell(m: dict[str, Any], key: str) -> str:
    value = m[key]
    if isinstance(value, int):
        return str(value)
    interval = m.get("intervals_95", {}).get(key)
    return f"{value:.4f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def compare_table(metrics: list[dict[str, Any]], names: list[str]) -> str:
    """Markdown: one row per metric, every classifier side by side (bootstrap 95% intervals in brackets) and
    each one's difference from the first (``difference`` when there are two)."""
    diffs = ["difference"] if len(names) == 2 else [f"{n} - {names[0]}" for n in names[1:]]
    lines = [
        f"# Classifier comparison on `{metrics[0]['data']}`",
        "",
        "| metric | " + " | ".join(names + diffs) + " |",
        "| --- |" + " ---: |" * (len(names) + len(diffs)),
    ]
    for key in COMPARED:
        cells = [_cell(m, key) for m in metrics]
        cells += [_cell({key: m[key] - metrics[0][key]}, key) for m in metrics[1:]]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    kinds = "; ".join(
        f"{n}: {m['kind']}{', both orders' if m.get('symmetric') else ''}" for n, m in zip(names, metrics, strict=True)
    )
    lines += ["", f"Each at its own threshold. {kinds}. Intervals: percentile bootstrap over pairs.", ""]
    return "\n".join(lines)


def plot_roc_rows(labels: np.ndarray, probs: dict[str, np.ndarray], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_auc_score, roc_curve

    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    for name, p in probs.items():
        fpr, tpr, _ = roc_curve(labels, p)
        ax.plot(fpr, tpr, label=f"{name} (AUC {roc_auc_score(labels, p):.3f})")
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=0.8)
    ax.set(xlabel="false positive rate", ylabel="true positive rate", title="ROC comparison")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
