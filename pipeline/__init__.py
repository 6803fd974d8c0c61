"""``darling pipeline``: the whole DARLING chain in one command, each stage in its own folder of RUN.

A GRPO warm-up (when asked) -> datagen (rollouts) -> pairs -> labels -> classifier (training pairs; train,
calibrate, export) -> RL (DARLING, its GRPO baseline, the other arms) -> eval math (pass@k) -> eval novelty -> eval
creative (when asked) -> compare: ``pipeline/stages/``, one room per stage, ``STAGES`` the order.

Every stage runs as its ``darling`` commands in their own processes, launched as ``RUN/commands.sh`` launches them
(``pipeline/script.py`` writes the script, ``pipeline/runner.py`` runs its blocks as written), on CPU and GPU
alike; each stage's settings are a table of the config (declared in ``pipeline/schema.py``).

```python
from darling.pipeline import build_config, run_pipeline

result = run_pipeline(build_config("cpu", "runs/pipe"))         # ~30 minutes on 2 CPU cores
result = run_pipeline(build_config("paper-tiny", "runs/pt"))    # the paper chain with tiny models, on CPU
result = run_pipeline(build_config("paper", "runs/paper"))      # GPUs; on a CPU machine: writes commands.sh only
```

Writes ``RUN/report.md`` (every stage's numbers and wall time), ``RUN/stages.json`` (resumable stage records),
``RUN/commands.sh`` (what runs), ``RUN/logs/`` (each stage's output), ``RUN/manifest.json`` (command line, config,
versions, SHA-256 of every input and output file) and ``RUN/run.json`` (the run's identity).
"""

from __future__ import annotations

from darling.core import lazy_exports

# The names load on first use (PEP 562): importing ``darling.pipeline.config`` (what the command line does to build
# its flags) must not import the runner, and through it every stage's code.
_EXPORTS = {"PipelineConfig": "config", "build_config": "config", "run_pipeline": "runner"}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
