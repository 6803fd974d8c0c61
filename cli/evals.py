"""``darling eval math | novelty | creative | classifier | compare | study | partitions``: one sub-application; each
command's flags are the fields of its config (``darling.evals.config``, ``creative_config``, ``partitions_config``),
built by ``cli/options.py``."""

from __future__ import annotations

import typer

from darling.cli.classifier import metrics_line
from darling.cli.common import out
from darling.cli.eval_creative import eval_creative_cmd
from darling.cli.eval_math import eval_math_cmd
from darling.cli.eval_novelty import eval_novelty_cmd
from darling.cli.help import HelpCommand
from darling.cli.options import config_command
from darling.evals.agreement_config import AgreementConfig
from darling.evals.config import ClassifierEvalConfig, CompareConfig, StudyConfig
from darling.evals.partitions_config import PartitionsConfig
from darling.evals.partitions_report import CEILING

CLASSIFIER_DOC = """Accuracy, precision, recall, F1, ROC-AUC and calibration error of a classifier on labelled pairs.

Example:

    darling eval classifier --model runs/clf --data heldout.jsonl \\
        --output runs/clf-eval

Two classifiers side by side (adds OUTPUT/compare/, compare.md, roc_compare.png, metrics.json "compare"):

    darling eval classifier --model runs/clf --compare runs/clf-qwen \\
        --data heldout.jsonl --output runs/cmp

What fine-tuning adds: the untrained backbone (cosine; a, b and threshold fitted on --fit-data) beside it:

    darling eval classifier --model runs/clf \\
        --zero-shot packaged:all-MiniLM-L6-v2 --fit-data train.jsonl \\
        --data heldout.jsonl --output runs/zs

Metrics carry bootstrap 95% intervals (metrics.json "intervals_95").
Every setting below is a field of `darling.evals.config.ClassifierEvalConfig`.
"""


def eval_classifier(config: ClassifierEvalConfig) -> None:
    from darling.evals.classifier import evaluate_classifier, read_inputs  # loads numpy; torch when it scores

    inputs = read_inputs(config)  # bad input is refused before torch and scikit-learn load (seconds)
    metrics = evaluate_classifier(config, inputs)
    rows = [metrics] + [metrics[k] for k in ("compare", "zero_shot") if k in metrics]
    for m in rows:
        auc = m.get("intervals_95", {}).get("roc_auc")
        shown = f" [{auc[0]:.3f}, {auc[1]:.3f}]" if auc else ""
        out.print(f"{m['model']}: {m['n']} pairs: " + metrics_line("", m).removeprefix(": ") + f"  (auc 95%{shown})")
    out.print(f"-> {config.output}/metrics.json" + (", compare.md" if len(rows) > 1 else ""))


eval_classifier_cmd = config_command(ClassifierEvalConfig, eval_classifier, doc=CLASSIFIER_DOC)

COMPARE_DOC = """Policies side by side: DARLING against its GRPO baseline (and the base policy) from what their runs
saved, each difference paired over the same prompts or problems with a bootstrap 95% interval.

Example (the folders `darling eval novelty`, `darling eval math` and `darling rl-train` wrote):

    darling eval compare --novelty darling=runs/nov-darling \\
        --novelty grpo=runs/nov-grpo --novelty base=runs/nov-base \\
        --math darling=runs/math-darling --math grpo=runs/math-grpo \\
        --math base=runs/math-base --training darling=runs/rl \\
        --training grpo=runs/rl-grpo --k 1 --k 16 --output runs/compare

Differences are every pair in the order the policies are named (darling - grpo, darling - base, grpo - base), or
--pairs A:B. Writes OUTPUT/compare.json, report.md and curves.png. Every setting below is a field of
`darling.evals.config.CompareConfig`.
"""


def eval_compare(config: CompareConfig) -> None:
    from darling.evals.compare import compare  # loads polars, numpy when run

    result = compare(config)
    if "novelty" in result:
        out.print(f"novelty: {result['novelty']['prompts']} prompts every policy completed")
    if "math" in result:
        out.print(f"math: {result['math']['problems']} problems every policy scored (n = {result['math']['n']})")
    out.print(f"-> {config.output}/compare.json, report.md")


eval_compare_cmd = config_command(CompareConfig, eval_compare, doc=COMPARE_DOC)

STUDY_DOC = """One comparison run with several seeds, pooled: each seed's DARLING minus GRPO (its own interval over
prompts) and one pooled interval from a hierarchical bootstrap (seeds, then prompts within each seed).

Example (the compare folders of `darling pipeline --seeds 1,2,3`, or of your own runs):

    darling eval study --compare 1=runs/study/seed-1/compare \\
        --compare 2=runs/study/seed-2/compare \\
        --compare 3=runs/study/seed-3/compare --output runs/study/study

Writes OUTPUT/study.json and study.md. Every setting below is a field of `darling.evals.config.StudyConfig`.
"""


def eval_study(config: StudyConfig) -> None:
    from darling.evals.study import study  # loads numpy when run

    result = study(config)
    for metric, figures in result["metrics"].items():
        pooled = figures["pooled"]
        lo, hi = pooled["interval"]
        out.print(
            f"{metric}: {result['pair']} = {pooled['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}] over {pooled['seeds']} seeds"
        )
    out.print(f"-> {config.output}/study.json, study.md")


eval_study_cmd = config_command(StudyConfig, eval_study, doc=STUDY_DOC)

PARTITIONS_DOC = """How classifiers and the n-gram rule partition a policy's answers where a checker knows which are the
same (item prompts: the member each answer names): of the same-key answer pairs, the share each partition splits
(rewording it would reward); of the different-key pairs, the share it joins.

Example (a policy's answers from `darling eval novelty` on items-heldout):

    darling eval partitions --answers start=runs/items/eval-novelty/base \\
        --classifier items=runs/items/classifier \\
        --classifier human=runs/pipeline/classifier --output runs/parts

Writes OUTPUT/partitions.json and report.md. Every setting below is a field of
`darling.evals.partitions_config.PartitionsConfig`.
"""


def eval_partitions(config: PartitionsConfig) -> None:
    from darling.evals.partitions import evaluate_partitions  # loads numpy, polars; torch when it scores

    result = evaluate_partitions(config)
    for name, table in result["sets"].items():
        for partition, row in table["partitions"].items():
            if partition == CEILING:
                continue
            split, join = row["splits_same_key"]["share"], row["joins_different_keys"]["share"]
            shown = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
            out.print(f"{name}: {partition}: splits {shown(split)} of same-key pairs, joins {shown(join)} of others")
    out.print(f"-> {config.output}/partitions.json, report.md")


eval_partitions_cmd = config_command(PartitionsConfig, eval_partitions, doc=PARTITIONS_DOC)

AGREEMENT_DOC = """Two partitions of the same generations side by side: the share of prompts they partition
identically and their adjusted Rand index (bootstrap intervals over prompts), with the settings each was made with
(tokens per side, pair order, the short-answer rule, the threshold) where its eval novelty folder records them.

Example (darling's partition of NoveltyBench's generations against NoveltyBench's own):

    darling eval novelty --noveltybench results/curated/gpt4o \\
        --classifier runs/clf --output runs/nb-gpt4o
    darling eval agreement \\
        --partitions darling=runs/nb-gpt4o/partitions.jsonl \\
        --partitions nb=results/curated/gpt4o/partitions.jsonl \\
        --output runs/agree

Writes OUTPUT/agreement.json and report.md. Every setting below is a field of
`darling.evals.agreement_config.AgreementConfig`.
"""


def eval_agreement(config: AgreementConfig) -> None:
    from darling.evals.agreement import evaluate_agreement  # loads numpy and scikit-learn

    result = evaluate_agreement(config)
    exact, ari = result["exact"], result["ari"]
    out.print(
        f"{result['prompts']} prompts: identical {exact['mean']:.3f} [{exact['interval'][0]:.2f}, "
        f"{exact['interval'][1]:.2f}], adjusted Rand index {ari['mean']:.3f} [{ari['interval'][0]:.2f}, "
        f"{ari['interval'][1]:.2f}]"
    )
    out.print(f"-> {config.output}/agreement.json, report.md")


eval_agreement_cmd = config_command(AgreementConfig, eval_agreement, doc=AGREEMENT_DOC)

eval_app = typer.Typer(help="Evaluate classifiers and generators.", no_args_is_help=True)
eval_app.command("math", cls=HelpCommand)(eval_math_cmd)
eval_app.command("novelty", cls=HelpCommand)(eval_novelty_cmd)
eval_app.command("creative", cls=HelpCommand)(eval_creative_cmd)
eval_app.command("classifier", cls=HelpCommand)(eval_classifier_cmd)
eval_app.command("compare", cls=HelpCommand)(eval_compare_cmd)
eval_app.command("study", cls=HelpCommand)(eval_study_cmd)
eval_app.command("partitions", cls=HelpCommand)(eval_partitions_cmd)
eval_app.command("agreement", cls=HelpCommand)(eval_agreement_cmd)
