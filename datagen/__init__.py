"""Data generation: rollouts, same-answer pairs, judge labels (issue: darling datagen)."""
