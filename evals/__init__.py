"""Evaluation: classifiers on labelled pairs, math pass@k, NoveltyBench diversity, creative writing, comparisons."""
