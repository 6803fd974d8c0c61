"""The shared core under every stage: what two stages use lives here (errors, the one reader of user files, record
schemas, resumable shards, the config system, local models and encoders, generation engines, math grading, quality
signals, the reward model, the pooling client and replicas).

It imports nothing from the stage packages (``datagen``, ``classifier``, ``rl``, ``evals``, ``pipeline``,
``cli``); ``tests/core/test_layers.py`` fails if it ever does. Import-light: nothing here loads torch at import time.
"""
