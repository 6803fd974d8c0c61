"""Evaluation: classifier quality, diversity, math pass@k."""
