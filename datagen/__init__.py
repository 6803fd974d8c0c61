"""Data generation for the classifier: rollouts, same-answer pairs, the LLM judge's labels."""
