"""The report of ``darling eval partitions`` (``report.md``, and the pipeline report's table), from its
``partitions.json`` alone; kept light (no numpy) so the pipeline's report renders it without loading one."""

from __future__ import annotations

from typing import Any

from darling.core.numbers import MISSING

RESULT_FILE, REPORT_FILE = "partitions.json", "report.md"
CEILING = "checker (ceiling)"  # the checker's own partition: exact by definition, the ceiling of every other


def cell(figure: dict[str, Any]) -> str:
    if figure["share"] is None:
        return MISSING
    lo, hi = figure["interval"]
    return f"{figure['share']:.3f} [{lo:.2f}, {hi:.2f}] (of {figure['pairs']})"


def table_lines(table: dict[str, Any]) -> list[str]:
    lines = [
        "| partition | classes per prompt | splits same-key pairs | joins different-key pairs | one-key answers: "
        "splits | one-key answers: joins |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in table["partitions"].items():
        one = row.get("one_key") or {}  # absent in a partitions.json written before it
        one_cells = [cell(one[k]) if k in one else MISSING for k in ("splits_same_key", "joins_different_keys")]
        lines.append(
            f"| {name} | {row['classes_per_prompt']:.2f} | {cell(row['splits_same_key'])} | "
            f"{cell(row['joins_different_keys'])} | {' | '.join(one_cells)} |"
        )
    return lines


def auc_cell(figure: dict[str, Any] | None) -> str:
    if not figure or figure["auc"] is None:
        return MISSING
    lo, hi = figure["interval"]
    return f"{figure['auc']:.3f} [{lo:.2f}, {hi:.2f}] (of {figure['pairs']})"


def auc_lines(table: dict[str, Any]) -> list[str]:
    """Each scorer's AUC over the keyed pairs (absent in a partitions.json written before it)."""
    aucs = table.get("auc") or {}
    if not aucs:
        return []
    rows = [f"| {name} | {auc_cell(figure)} |" for name, figure in aucs.items()]
    return ["| scorer (its own score, no threshold) | AUC over keyed pairs |", "| --- | ---: |", *rows]


def render(result: dict[str, Any]) -> str:
    lines = [
        f"# How each partition splits and joins answers the {result['checker']} checker calls the same",
        "",
        "Each partition is the one DARLING's reward would make of these answers (classifiers: union-find at their "
        "threshold). Splits: of the answer pairs with the same key, the share put in different classes; joins: of "
        "the pairs with two different keys, the share put in one class. An answer naming several keys is read by its "
        "first, a convention; the one-key columns count only the pairs of answers that name one key each. AUC: how "
        "well a scorer's own score (P(equivalent), a Jaccard) puts the same-key pairs above the different-key ones, "
        "over every pair of keyed answers. Bootstrap 95% intervals over prompts.",
        "",
    ]
    for name, table in result["sets"].items():
        keyed = MISSING if table["keyed_share"] is None else f"{table['keyed_share']:.3f}"
        one = MISSING if table.get("one_key_share") is None else f"{table['one_key_share']:.3f}"
        lines += [
            f"**{name}** ({table['prompts']} prompts, {table['answers']} answers; share with a key: {keyed}, "
            f"naming one key: {one})",
            "",
            *table_lines(table),
            "",
            *auc_lines(table),
            "",
        ]
    return "\n".join(lines)
