"""``darling pipeline``: the whole DARLING chain in one command, each stage in its own folder of RUN.

datagen (rollouts) -> pairs -> judge labels -> classifier (train, calibrate, export) -> DARLING RL ->
eval math (pass@k before/after RL) -> eval novelty (distinct/utility with the fresh classifier).

```python
from darling.pipeline import build_config, run_pipeline

result = run_pipeline(build_config("cpu", "runs/pipe"))        # ~10 minutes on 2 CPU cores
result = run_pipeline(build_config("paper", "runs/paper"))     # GPUs; on a CPU machine: writes commands.sh only
```

Writes ``RUN/report.md`` (every stage's numbers and wall time), ``RUN/stages.json`` (resumable stage
records), ``RUN/commands.sh`` (the same chain as ``darling`` commands), ``RUN/manifest.json`` (command line,
config, versions, SHA-256 of every input and output file) and ``RUN/run.json`` (the run's identity).
"""

from darling.pipeline.config import PipelineConfig, build_config
from darling.pipeline.runner import run_pipeline

__all__ = ["PipelineConfig", "build_config", "run_pipeline"]
