"""Where DARLING's quality cost on the training prompts comes from (issue 36, item 5).

``relevant-short-answer`` is a format score times the relevance proxy (the cosine of the prompt's and the answer's
MiniLM embeddings). DARLING keeps more distinct answers than GRPO and loses 0.03-0.05 of that quality on the prompts it
trained on. This script takes two policies' ``eval novelty`` outputs on the same prompts (a pipeline run's
``eval-novelty-train/darling-rl`` and ``.../grpo-rl``, or several seeds' runs) and splits the difference:

- **format**: the share of answers the format score passes (1 to ``max_words`` words, ``--strict-length``), and the
  share in a list format ("1. Bananas");
- **relevance** among the answers that pass, and within it:
  - **shared answers**: relevance of the normalised answers both policies gave for that prompt, each policy's
    mean over its own samples of them;
  - **answers only DARLING gave**: their relevance against the shared answers' (the rarer names);
- **rarity**: the rank correlation between an answer's relevance and how often the two policies together sampled it
  for its prompt (positive: the proxy scores the common answers higher, so a policy that spreads over rarer answers
  loses quality by construction).

The difference in mean quality is split exactly into format and relevance parts (a two-factor Shapley split of
``share_passing x mean relevance of the passing``). Prints a markdown table; ``--json`` writes the figures.

    .venv/bin/python bench/studies/quality_cost.py runs/pipeline            # a pipeline run (eval-novelty-train/)
    .venv/bin/python bench/studies/quality_cost.py runs/study/seed-1 runs/study/seed-2 --json runs/quality-cost.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import polars as pl
from scipy.stats import spearmanr

from darling.core.quality import Relevance, echoes_prompt, normalised_answer, short_answer_quality

LIST_FORMAT = re.compile(r"^\s*(\d+[.)]|[-*•])\s")


def answers(folder: Path, max_words: int, strict: bool, relevance: Relevance) -> pl.DataFrame:
    """One row per response of an eval novelty folder: prompt, normalised answer, format score, relevance."""
    frame = pl.read_parquet(folder / "scores.parquet").sort("prompt_id", "sample_index")
    texts = [t.strip() for t in frame["response"].to_list()]
    prompts = frame["prompt"].to_list()
    rel = relevance(prompts, texts)  # 0 for an echo of the prompt, as the quality scores it
    return pl.DataFrame(
        {
            "prompt_id": frame["prompt_id"].cast(pl.Utf8),
            "answer": [normalised_answer(t) for t in texts],
            "format": [short_answer_quality(t, max_words, strict) for t in texts],
            "relevance": rel,
            "listed": [bool(LIST_FORMAT.match(t)) for t in texts],
            "echo": [echoes_prompt(p, t) for p, t in zip(prompts, texts, strict=True)],
            "words": [len(t.split()) for t in texts],
        }
    ).with_columns(quality=pl.col("format") * pl.col("relevance"))


def shapley_split(a: pl.DataFrame, b: pl.DataFrame) -> dict[str, float]:
    """quality = share passing x relevance of the passing: a - b split into a format and a relevance part."""
    sa, sb = float((a["format"] > 0).mean()), float((b["format"] > 0).mean())
    ra = float(a.filter(pl.col("format") > 0)["quality"].mean() or 0.0)
    rb = float(b.filter(pl.col("format") > 0)["quality"].mean() or 0.0)
    return {"format_part": (sa - sb) * (ra + rb) / 2, "relevance_part": (ra - rb) * (sa + sb) / 2}


def seed_figures(run: Path, max_words: int, strict: bool, relevance: Relevance) -> dict[str, float]:
    folder = run / "eval-novelty-train"
    if not (folder / "darling-rl" / "scores.parquet").exists():
        sys.exit(f"{folder}: no darling-rl/scores.parquet (a pipeline run with evaluate_training_prompts)")
    darling = answers(folder / "darling-rl", max_words, strict, relevance)
    grpo = answers(folder / "grpo-rl", max_words, strict, relevance)
    passing_d, passing_g = darling.filter(pl.col("format") > 0), grpo.filter(pl.col("format") > 0)
    shared_keys = (
        passing_d.select("prompt_id", "answer")
        .unique()
        .join(passing_g.select("prompt_id", "answer").unique(), on=["prompt_id", "answer"])
    )
    shared_d = passing_d.join(shared_keys, on=["prompt_id", "answer"])
    shared_g = passing_g.join(shared_keys, on=["prompt_id", "answer"])
    only_d = passing_d.join(shared_keys, on=["prompt_id", "answer"], how="anti")
    both = pl.concat([passing_d, passing_g])
    counts = Counter(zip(both["prompt_id"].to_list(), both["answer"].to_list(), strict=True))
    frequency = [counts[key] for key in zip(both["prompt_id"].to_list(), both["answer"].to_list(), strict=True)]
    rho = spearmanr(frequency, both["relevance"].to_list()).statistic
    return {
        "quality_darling": float(darling["quality"].mean()),
        "quality_grpo": float(grpo["quality"].mean()),
        **shapley_split(darling, grpo),
        "passing_darling": float((darling["format"] > 0).mean()),
        "passing_grpo": float((grpo["format"] > 0).mean()),
        "listed_darling": float(darling["listed"].mean()),
        "listed_grpo": float(grpo["listed"].mean()),
        "echo_darling": float(darling["echo"].mean()),
        "echo_grpo": float(grpo["echo"].mean()),
        "words_darling": float(darling["words"].mean()),
        "words_grpo": float(grpo["words"].mean()),
        "relevance_passing_darling": float(passing_d["relevance"].mean()),
        "relevance_passing_grpo": float(passing_g["relevance"].mean()),
        "relevance_shared_darling": float(shared_d["relevance"].mean()),
        "relevance_shared_grpo": float(shared_g["relevance"].mean()),
        "relevance_only_darling": float(only_d["relevance"].mean()) if only_d.height else float("nan"),
        "share_only_darling": only_d.height / max(passing_d.height, 1),
        "rarity_spearman": float(rho),
    }


ROWS = {
    "quality (DARLING / GRPO)": ("quality_darling", "quality_grpo"),
    "share passing the format": ("passing_darling", "passing_grpo"),
    'share in a list format ("1. X")': ("listed_darling", "listed_grpo"),
    "share echoing the prompt (scored 0)": ("echo_darling", "echo_grpo"),
    "words per answer": ("words_darling", "words_grpo"),
    "relevance of the passing answers": ("relevance_passing_darling", "relevance_passing_grpo"),
    "relevance of the answers both gave": ("relevance_shared_darling", "relevance_shared_grpo"),
}


def render(figures: dict[str, dict[str, float]]) -> str:
    seeds = list(figures)
    head = ["| figure | " + " | ".join(f"run {s}" for s in seeds) + " |", "| --- |" + " ---: |" * len(seeds)]
    rows = [f"| {label} | " + " | ".join(f"{figures[s][a]:.3f} / {figures[s][b]:.3f}" for s in seeds) + " |"
            for label, (a, b) in ROWS.items()]  # fmt: skip
    single = {
        "DARLING - GRPO quality: format part": "format_part",
        "DARLING - GRPO quality: relevance part": "relevance_part",
        "relevance of the answers only DARLING gave": "relevance_only_darling",
        "share of DARLING's passing answers GRPO never gave": "share_only_darling",
        "Spearman(answer's frequency, its relevance)": "rarity_spearman",
    }
    rows += [f"| {label} | " + " | ".join(f"{figures[s][k]:+.3f}" for s in seeds) + " |" for label, k in single.items()]
    return "\n".join([*head, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="Pipeline run folders with eval-novelty-train/.")
    parser.add_argument("--max-words", type=int, default=4)
    parser.add_argument("--no-strict-length", dest="strict", action="store_false", help="Longer answers score 4/words.")
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    args = parser.parse_args()
    relevance = Relevance()
    figures = {str(run): seed_figures(run, args.max_words, args.strict, relevance) for run in args.runs}
    print(render(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
