"""Two partitions of the same generations, side by side (``darling eval agreement``): for example darling's
``partitions.jsonl`` from ``eval novelty --noveltybench`` and NoveltyBench's own. Per prompt, whether they are the
same partition (up to class numbering) and their adjusted Rand index (scikit-learn's), each mean with a bootstrap
interval over prompts; and, where a file sits in an ``eval novelty`` folder, the settings it was made with, so the
differences that explain a disagreement (tokens per side, pair order, the short-answer rule, the threshold) show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError
from darling.core.numbers import percentile_interval
from darling.core.shards import atomic_write_bytes
from darling.evals.agreement_config import AgreementConfig
from darling.evals.config import NOVELTYBENCH, UNION_FIND, named
from darling.evals.noveltybench_files import first_appearance, read_partitions

# What NoveltyBench's published partition does; a file with no eval novelty folder around it is read as made so.
NOVELTYBENCH_SETTINGS = {
    "tokens per side": "128 (its DeBERTa)",
    "pair order": "(class representative, candidate)",
    "answers of at most 5 words": "word overlap",
    "threshold": "0.102 (P > threshold)",
    "partition": NOVELTYBENCH,
}


# How each of eval novelty's partitions (metrics.json's partition.method) compares answers.
PARTITION_SETTINGS = {
    NOVELTYBENCH: {
        "pair order": "(class representative, candidate)",
        "answers of at most 5 words": "word overlap",
    },
    UNION_FIND: {
        "pair order": "every pair (earlier answer, later answer); classes are the transitive closure",
        "answers of at most 5 words": "no rule: the classifier decides",
    },
}


def settings_of(path: Path) -> dict[str, str]:
    """The partition settings recorded beside ``path`` (an eval novelty folder's metrics.json: the partition it used,
    its export's tokens and its threshold), else NoveltyBench's published ones."""
    metrics_file = path.parent / "metrics.json"
    if not metrics_file.exists():
        return {**NOVELTYBENCH_SETTINGS, "source": "not recorded: NoveltyBench's published settings assumed"}
    metrics = json.loads(metrics_file.read_text())
    export = Path(str(metrics.get("classifier"))) / "darling.json"
    tokens = json.loads(export.read_text()).get("max_tokens_per_response") if export.exists() else None
    partition = metrics.get("partition", {})
    method = partition.get("method", NOVELTYBENCH)
    return {
        "tokens per side": str(tokens if tokens is not None else "128 (a foreign HF classifier)"),
        **PARTITION_SETTINGS[method],
        "threshold": f"{metrics.get('threshold')} ({metrics.get('threshold_source')}; {partition.get('decision')})",
        "partition": method,
        "source": str(metrics_file),
    }


def agreement(a: dict[str, list[int]], b: dict[str, list[int]], seed: int = 0) -> dict[str, Any]:
    """Per common prompt: exact agreement (0/1) and the adjusted Rand index; means with bootstrap intervals."""
    import numpy as np  # loads numpy and scikit-learn: only when it runs
    from sklearn.metrics import adjusted_rand_score

    common = [pid for pid in a if pid in b]
    if not common:
        raise UserInputError("the two partitions share no prompt id: are they of the same generations?")
    for pid in common:
        if len(a[pid]) != len(b[pid]):
            raise UserInputError(f"prompt {pid!r}: {len(a[pid])} answers in one partition, {len(b[pid])} in the other")
    exact = np.array([first_appearance(a[p]) == first_appearance(b[p]) for p in common], dtype=float)
    ari = np.array([adjusted_rand_score(a[p], b[p]) for p in common])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(common), size=(2000, len(common)))
    return {
        "prompts": len(common),
        "only_in_one": len(set(a) ^ set(b)),
        "exact": {"mean": float(exact.mean()), "interval": percentile_interval(exact[draws].mean(axis=1))},
        "ari": {"mean": float(ari.mean()), "interval": percentile_interval(ari[draws].mean(axis=1))},
        "per_prompt": {p: {"exact": bool(e), "ari": float(r)} for p, e, r in zip(common, exact, ari, strict=True)},
    }


def render(result: dict[str, Any]) -> str:
    (name_a, a), (name_b, b) = result["files"].items()
    shown = lambda f: f"{f['mean']:.3f} [{f['interval'][0]:.2f}, {f['interval'][1]:.2f}]"  # noqa: E731
    lines = [
        f"# {name_a} against {name_b}: two partitions of the same generations",
        "",
        f"{result['prompts']} prompts in both ({result['only_in_one']} in only one, left out); bootstrap 95% intervals "
        "over prompts.",
        "",
        "| figure | value |",
        "| --- | ---: |",
        f"| prompts partitioned identically (up to class numbering) | {shown(result['exact'])} |",
        f"| adjusted Rand index, mean per prompt | {shown(result['ari'])} |",
        "",
        f"| setting | {name_a} | {name_b} |",
        "| --- | --- | --- |",
        *(f"| {key} | {a['settings'][key]} | {b['settings'][key]} |" for key in a["settings"]),
        f"| `distinct` in the file | {a['convention']} | {b['convention']} |",
        "",
    ]
    return "\n".join(lines)


def evaluate_agreement(config: AgreementConfig) -> dict[str, Any]:
    files = named(config.partitions, "--partitions", must_exist=False)  # a missing file: read_partitions says so
    read = {name: read_partitions(path) for name, path in files.items()}
    (name_a, (a, _)), (name_b, (b, _)) = read.items()
    result = agreement(a, b, config.seed)
    result["files"] = {
        name: {"path": str(files[name]), "convention": convention, "settings": settings_of(files[name])}
        for name, (_, convention) in read.items()
    }
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(output / "report.md", render(result).encode())
    atomic_write_bytes(output / "agreement.json", (json.dumps(result, indent=2) + "\n").encode())
    return result
