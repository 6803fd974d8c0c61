"""``darling eval math``: n samples per problem, graded by math-verify, unbiased pass@k per dataset.

Generation is ``darling.datagen.rollouts.generate_rollouts``, so it is resumable, sharded, atomic and
graded the same way as training data. Each (dataset, model) pair gets its own rollouts folder,
``OUTPUT/generations/<dataset>/<model>/``: a folder is one experiment (``run.json`` refuses changed
sampling), so a later run can add a checkpoint to the same OUTPUT without touching the others, and the
loop runs models outside datasets so each model is loaded once. ``<dataset>`` is the problems' source
name (file stem, ``arithmetic``, hub name with ``/`` -> ``_``).

Metrics are recomputed from the Parquet rows alone (``generate=False``), over every row in the selected
folders: the report of a folder covers all problems generated there, whatever ``--limit`` this run had.

**pass@k** is the unbiased estimator of Chen et al. (2021), ``1 - C(n-c, k) / C(n, k)`` per problem
(product form: no huge binomials), averaged over problems; k = 1, 2, 4, ... up to n, plus n itself.
**Failed samples are never counted as wrong**: a problem is scored only when all its n samples are
``ok`` and graded. A problem with a failed or missing sample is *excluded* (counted in
``excluded_incomplete``; rerun to retry the failed requests); one without a reference answer is
excluded as ``excluded_ungraded``.

``metrics.json``::

    {"datasets": [names], "ks": [every k reported],
     "models": {MODEL: {
         "n": samples per problem (the smallest over its datasets), "ks": [k <= n],
         "sampling": {"n", "temperature", "top_p", "max_tokens", "seed"} (as generated),
         "datasets": {DATASET: {"n", "problems" (with rows), "scored", "excluded_incomplete",
                                "excluded_ungraded", "samples_ok", "samples_failed", "samples_missing",
                                "accuracy" (= pass@1), "pass@k": {"1": ..., "2": ..., ...}}},
         "mean": {"datasets" (averaged over), "problems" (scored, summed), "accuracy",
                  "pass@k": {...}}}}}

A dataset with no scored problem has ``null`` metrics and is left out of the model's mean; the mean is
unweighted over datasets (each benchmark counts once, as papers report it). ``report.md`` shows the
same numbers as tables, with ``passk.png`` (mean over datasets, one line per model) and
``passk_by_dataset.png`` (one panel per dataset).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, cast

import polars as pl

from darling.core.engine_config import engine_options
from darling.core.engines import build_engine
from darling.core.errors import UserInputError
from darling.core.numbers import MISSING, pct
from darling.core.shards import SHARD_GLOB, atomic_write_bytes
from darling.datagen.config import GeneratorSpec, RolloutConfig
from darling.datagen.problems import load_problems
from darling.datagen.rollouts import generate_rollouts, read_rollouts
from darling.evals.config import MathEvalConfig

GENERATIONS = "generations"


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k samples drawn without replacement from n, c of them correct, is correct).

    ``1 - C(n-c, k)/C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i)``: stable for any n, unlike the binomials.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:  # every k-subset contains a correct sample
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def default_ks(n: int) -> list[int]:
    ks = [1 << i for i in range(n.bit_length()) if 1 << i <= n]
    return ks if ks[-1] == n else [*ks, n]


def ks_for(n: int, ks: list[int] | None) -> list[int]:
    """The k reported for n samples: ``ks`` (default powers of two) up to n, always with 1 and n."""
    return sorted({k for k in (ks or default_ks(n)) if k <= n} | {1, n})


def slug(name: str) -> str:
    """A folder name for a dataset or model name (``Qwen/Qwen3-4B`` -> ``Qwen_Qwen3-4B``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "_"


def _unique(names: list[str], what: str) -> None:
    slugs: dict[str, str] = {}
    for name in names:
        if slug(name) in slugs:
            raise UserInputError(f"{what} {slugs[slug(name)]!r} and {name!r} would share the folder {slug(name)!r}")
        slugs[slug(name)] = name


def _dataset_names(config: MathEvalConfig) -> list[tuple[str, str]]:
    """(dataset name, problems spec) per ``--problems``; loading them here validates every file up front."""

    named = [(slug(load_problems(spec, limit=config.limit)[0].source), spec) for spec in config.problems]
    _unique([name for name, _ in named], "--problems")
    return named


def _check_models(config: MathEvalConfig, specs: list[GeneratorSpec]) -> None:
    if config.generate and config.ks is not None:
        biggest = max(s.n or config.n for s in specs)
        if max(config.ks) > biggest:
            raise UserInputError(f"--k {max(config.ks)} is larger than the samples per problem (--n {biggest})")
    _unique([s.name for s in specs], "models")


def generate(
    config: MathEvalConfig, specs: list[GeneratorSpec], datasets: list[tuple[str, str]], progress: bool
) -> dict[str, int]:
    """Fill ``generations/<dataset>/<model>/``; models outermost, each with an engine of its own settings (``vllm``:
    one server process per model, ended before the next starts) that serves every dataset."""

    counts = {"generated": 0, "skipped": 0, "failed": 0}
    sampling = ("engine", "n", "temperature", "top_p", "max_tokens", "seed", "paired_seeds", "limit", "shard_size")
    shared = {name: getattr(config, name) for name in sampling}  # the engine itself is made here, per model
    for spec in specs:
        engine = build_engine(config, engine_options(config, spec.engine_overrides()))
        try:
            for name, spec_problems in datasets:
                folder = config.output / GENERATIONS / name / slug(spec.name)
                rollouts = RolloutConfig(problems=spec_problems, output=folder, specs=[spec], **shared)
                summary = generate_rollouts(rollouts, engine=engine, progress=progress)
                for key in counts:
                    counts[key] += getattr(summary, key)
        finally:
            engine.close()
    return counts


def load_generations(output: Path, datasets: list[str] | None = None, models: list[str] | None = None) -> pl.DataFrame:
    """Every rollout row under ``OUTPUT/generations`` (optionally only some datasets / models), plus a
    ``dataset`` column (the folder name) and ``n`` (samples per problem, from the row's sampling)."""
    root = Path(output) / GENERATIONS
    names = datasets if datasets is not None else sorted(p.name for p in root.glob("*") if p.is_dir())
    frames = []
    for name in names:
        folders = [p for p in sorted((root / name).glob("*")) if p.is_dir() and any(p.glob(SHARD_GLOB))]
        if not folders:
            raise UserInputError(f"{root / name}: no generations for dataset {name!r}; run without --no-generate")
        for folder in folders:
            rows = read_rollouts(folder).with_columns(dataset=pl.lit(name))
            frames.append(rows.filter(pl.col("model").is_in(models)) if models is not None else rows)
    if not frames:
        raise UserInputError(f"{root}: no generations found; run `darling eval math` without --no-generate first")
    rows = pl.concat(frames, how="vertical")
    if models is not None and (absent := sorted(set(models) - set(rows["model"].unique().to_list()))):
        raise UserInputError(f"{root}: no generations of model {absent[0]!r}")
    n = pl.col("sampling").str.json_path_match("$.n").cast(pl.Int64)
    return rows.with_columns(n=n).filter(pl.col("sample_index") < pl.col("n"))


def _problem_table(rows: pl.DataFrame) -> pl.DataFrame:
    ok = pl.col("status") == "ok"
    per_problem = rows.group_by("model", "dataset", "problem_id").agg(
        n=pl.col("n").max(),
        ok=ok.sum(),
        failed=(pl.col("status") == "failed").sum(),
        correct=(ok & pl.col("correct").fill_null(False)).sum(),
        ungraded=(ok & pl.col("correct").is_null()).sum(),
    )
    # group_by's order is random: sorted, the float sums (and metrics.json) are bit-identical on every rerun.
    return per_problem.sort("model", "dataset", "problem_id")


def scored_problems(output: Path) -> dict[str, dict[tuple[str, str], tuple[int, int]]]:
    """Per model of an eval math OUTPUT: ``{(dataset, problem_id): (n, correct)}`` for every problem whose n samples
    all came back graded (the problems its pass@k is computed over)."""
    problems = _problem_table(load_generations(output))
    scored = problems.filter((pl.col("ok") == pl.col("n")) & (pl.col("ungraded") == 0))
    out: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
    for r in scored.iter_rows(named=True):
        out.setdefault(r["model"], {})[(r["dataset"], r["problem_id"])] = (int(r["n"]), int(r["correct"]))
    return out


def _dataset_metrics(problems: pl.DataFrame, ks: list[int] | None) -> dict[str, Any]:
    n = int(cast(int, problems["n"].max()))  # an integer column
    scored = problems.filter((pl.col("ok") == pl.col("n")) & (pl.col("ungraded") == 0))
    complete = problems.filter(pl.col("ok") == pl.col("n"))
    counts = [(int(r["n"]), int(r["correct"])) for r in scored.iter_rows(named=True)]
    values = {
        str(k): sum(pass_at_k(m, c, k) for m, c in counts) / len(counts) if counts else None for k in ks_for(n, ks)
    }
    return {
        "n": n,
        "problems": problems.height,
        "scored": scored.height,
        "excluded_incomplete": problems.height - complete.height,
        "excluded_ungraded": complete.height - scored.height,
        "samples_ok": int(problems["ok"].sum()),
        "samples_failed": int(problems["failed"].sum()),
        "samples_missing": int((problems["n"] - problems["ok"] - problems["failed"]).sum()),
        "accuracy": values.get("1"),
        "pass@k": values,
    }


def compute_metrics(rows: pl.DataFrame, ks: list[int] | None = None, models: list[str] | None = None) -> dict:
    """The metrics.json dict (see the module docstring) from rows of ``load_generations``."""
    problems = _problem_table(rows)
    datasets = sorted(problems["dataset"].unique().to_list())
    models = models or sorted(problems["model"].unique().to_list())
    result: dict[str, Any] = {"datasets": datasets, "ks": [], "models": {}}
    for model in models:
        mine = problems.filter(pl.col("model") == model)
        present = [d for d in datasets if d in set(mine["dataset"].to_list())]
        per = {d: _dataset_metrics(mine.filter(pl.col("dataset") == d), ks) for d in present}
        n = min(m["n"] for m in per.values())
        own_ks = ks_for(n, ks)  # defined on every dataset: one mean over the same datasets for every k
        used = [m for m in per.values() if m["scored"]]
        mean = {str(k): sum(m["pass@k"][str(k)] for m in used) / len(used) if used else None for k in own_ks}
        sampling = json.loads(rows.filter(pl.col("model") == model)["sampling"][0])
        summary = {"datasets": len(used), "problems": sum(m["scored"] for m in used), "accuracy": mean["1"]}
        result["models"][model] = {
            "n": n,
            "ks": own_ks,
            "sampling": sampling,
            "datasets": per,
            "mean": {**summary, "pass@k": mean},
        }
    every = (d["pass@k"] for m in result["models"].values() for d in m["datasets"].values())
    result["ks"] = sorted({int(k) for values in every for k in values})
    return result


def render_report(metrics: dict) -> str:
    """report.md: pass@1 and pass@n (models x datasets), the full pass@k table, and exclusions."""
    datasets, models = metrics["datasets"], metrics["models"]
    head = "| model | " + " | ".join(datasets) + " | **mean** |\n|---|" + "---:|" * (len(datasets) + 1) + "\n"

    def table(pick) -> str:
        lines = []
        for model, m in models.items():
            cells = [pct(pick(m, m["datasets"][d])) if d in m["datasets"] else MISSING for d in datasets]
            lines.append(f"| {model} | " + " | ".join(cells) + f" | **{pct(pick(m, m['mean']))}** |")
        return head + "\n".join(lines) + "\n"

    parts = [
        "# Math evaluation: pass@k\n",
        "Percentages. Unbiased pass@k (Chen et al., 2021) per problem, averaged over problems; **mean** is the "
        "unweighted mean over datasets. Graded by math-verify. Problems with a failed or missing sample are "
        "excluded, never counted wrong (see *Exclusions*).\n",
        "![pass@k averaged over datasets](passk.png)\n",
        "## pass@1 (mean accuracy)\n",
        table(lambda m, d: d["pass@k"].get("1")),
        "## pass@n (n = each model's samples per problem)\n",
        table(lambda m, d: d["pass@k"].get(str(m["n"]))),
        "## pass@k per dataset\n",
    ]
    ks = metrics["ks"]
    lines = [
        "| model | dataset | n | scored problems | " + " | ".join(f"pass@{k}" for k in ks) + " |",
        "|---|---|---:|---:|" + "---:|" * len(ks),
    ]
    for model, m in models.items():  # problems = scored problems (the ones pass@k averages over)
        rows = [(name, d["n"], d["scored"], d["pass@k"]) for name, d in m["datasets"].items()]
        for name, n, count, values in [*rows, ("**mean**", m["n"], m["mean"]["problems"], m["mean"]["pass@k"])]:
            cells = [pct(values.get(str(k))) for k in ks]
            lines.append(f"| {model} | {name} | {n} | {count} | " + " | ".join(cells) + " |")
    parts.append("\n".join(lines) + "\n")
    if len(datasets) > 1:
        parts.append("![pass@k per dataset](passk_by_dataset.png)\n")
    parts.append("## Exclusions\n")
    lines = [
        "| model | dataset | problems | scored | incomplete | ungraded | failed samples | missing samples |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for model, m in models.items():
        for name, d in m["datasets"].items():
            lines.append(
                f"| {model} | {name} | {d['problems']} | {d['scored']} | {d['excluded_incomplete']} | "
                f"{d['excluded_ungraded']} | {d['samples_failed']} | {d['samples_missing']} |"
            )
    parts.append("\n".join(lines) + "\n\nRerun the same command to retry failed samples.\n")
    parts.append("## Sampling\n\n" + "\n".join(f"- {m}: `{json.dumps(v['sampling'])}`" for m, v in models.items()))
    return "\n".join(parts) + "\n"


def plot_passk(metrics: dict, output: Path) -> list[Path]:
    """passk.png (mean over datasets) and, with several datasets, passk_by_dataset.png (one panel each)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def curve(ax, values: dict[str, float | None], label: str) -> None:
        points = [(int(k), v) for k, v in values.items() if v is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=label)

    def style(ax, title: str) -> None:
        ax.set_xscale("log", base=2)
        ax.set_xticks(metrics["ks"], [str(k) for k in metrics["ks"]])
        ax.set(xlabel="k", ylabel="pass@k", title=title, ylim=(-0.02, 1.02))
        ax.minorticks_off()
        ax.grid(alpha=0.3)

    written = []
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for model, m in metrics["models"].items():
        curve(ax, m["mean"]["pass@k"], model)
    style(ax, f"pass@k, mean over {len(metrics['datasets'])} dataset(s)")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(output / "passk.png", dpi=120)
    plt.close(fig)
    written.append(output / "passk.png")
    if len(metrics["datasets"]) > 1:
        cols = min(4, len(metrics["datasets"]))
        rows = math.ceil(len(metrics["datasets"]) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.2 * rows), squeeze=False)
        for ax, name in zip(axes.flat, metrics["datasets"], strict=False):
            for model, m in metrics["models"].items():
                if name in m["datasets"]:
                    curve(ax, m["datasets"][name]["pass@k"], model)
            style(ax, name)
        for ax in list(axes.flat)[len(metrics["datasets"]) :]:
            ax.set_visible(False)
        axes.flat[0].legend(loc="lower right", fontsize="small")
        fig.tight_layout()
        fig.savefig(output / "passk_by_dataset.png", dpi=110)
        plt.close(fig)
        written.append(output / "passk_by_dataset.png")
    return written


def write_report(metrics: dict, output: Path) -> None:
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(output / "metrics.json", (json.dumps(metrics, indent=2) + "\n").encode())
    atomic_write_bytes(output / "report.md", render_report(metrics).encode())
    plot_passk(metrics, output)


def evaluate_math(config: MathEvalConfig, progress: bool = False) -> dict[str, Any]:
    """Generate what is missing (unless ``generate=False``), then write metrics.json, report.md, plots.

    Returns the metrics.json dict plus ``"generation"``: this run's ``generated / skipped / failed``
    sample counts (``None`` with ``generate=False``), which is not part of metrics.json so a report-only
    rerun writes the same file.
    """
    specs = config.generator_specs()
    _check_models(config, specs)
    if config.generate:
        engine_options(config)  # a bad engine option fails before any problem file is read
    datasets = _dataset_names(config) if config.problems else None
    counts: dict[str, int] | None = None
    if config.generate:
        assert datasets is not None  # validate() refuses generating without --problems
        counts = generate(config, specs, datasets, progress)
    names = [s.name for s in specs] or None
    rows = load_generations(config.output, [d for d, _ in datasets] if datasets else None, names)
    metrics = compute_metrics(rows, config.ks, names)
    write_report(metrics, config.output)
    return {**metrics, "generation": counts}
