"""darling: a reproducible toolkit for DARLING (arXiv 2509.02534).

Subpackages follow the pipeline, data flowing one way:
``datagen`` -> ``classifier`` -> ``rl`` -> ``evals``; ``cli`` only parses arguments and calls them.
This module stays import-light: ``darling --version`` must not load torch.
"""

__version__ = "0.1.0"
