"""darling: a reproducible toolkit for DARLING (arXiv 2509.02534).

Subpackages, each importing only those below it (tests/core/test_layers.py checks it, README draws it)::

    core  <-  datagen, world, classifier  <-  rl, evals  <-  pipeline  <-  cli

``core`` holds what two stages share (engines, config, readers, math grading, quality signals, the reward model, the
pooling client and replicas); ``datagen`` and ``classifier`` build the classifier's data and the classifier; ``rl``
trains policies with it and ``evals`` measures them; ``pipeline`` chains the commands; ``cli`` only parses and calls.
This module stays import-light: ``darling --version`` must not load torch.
"""

__version__ = "0.1.0"
