"""The shared core under every pipeline stage: errors, the one reader of user files, record schemas, shards and
atomic writes, progress bars, packaged models and resources, generation engines and the reward model.

It imports nothing from the stage packages (``datagen``, ``classifier``, ``rl``, ``evals``, ``pipeline``,
``cli``); ``tests/core/test_layers.py`` fails if it ever does. Import-light: nothing here loads torch at import time.
"""
