"""``darling pipeline``: the whole DARLING chain in one command, each stage in its own folder of RUN.

datagen (rollouts) -> pairs -> judge labels -> classifier (training pairs; train, calibrate, export) -> RL
(DARLING and its GRPO baseline) -> eval math (pass@k) -> eval novelty -> compare.

Every stage runs as its ``darling`` commands in their own processes, launched as ``RUN/commands.sh`` launches them
(``pipeline/commands_sh.py`` writes the script, ``pipeline/runner.py`` runs its blocks as written), on CPU and GPU
alike; each stage's settings are a table of the config (``pipeline/config.py``).

```python
from darling.pipeline import build_config, run_pipeline

result = run_pipeline(build_config("cpu", "runs/pipe"))         # ~10 minutes on 2 CPU cores
result = run_pipeline(build_config("paper-tiny", "runs/pt"))    # the paper chain with tiny models, on CPU
result = run_pipeline(build_config("paper", "runs/paper"))      # GPUs; on a CPU machine: writes commands.sh only
```

Writes ``RUN/report.md`` (every stage's numbers and wall time), ``RUN/stages.json`` (resumable stage records),
``RUN/commands.sh`` (what runs), ``RUN/logs/`` (each stage's output), ``RUN/manifest.json`` (command line, config,
versions, SHA-256 of every input and output file) and ``RUN/run.json`` (the run's identity).
"""

from darling.pipeline.config import PipelineConfig, build_config
from darling.pipeline.runner import run_pipeline

__all__ = ["PipelineConfig", "build_config", "run_pipeline"]
