"""How ``eval novelty`` stores a model's generations: one Parquet row per (prompt, sample), in a resumable
``ShardStore`` under ``OUTPUT/generations/`` whose ``run.json`` holds the generations' identity."""

from __future__ import annotations

GENERATION_KEY = ("prompt_id", "sample_index")
GENERATION_COLUMNS = {
    "prompt_id": "String",
    "prompt": "String",
    "category": "String",  # null when the prompt set has none
    "sample_index": "Int64",
    "response": "String",  # null when status == "failed"
    "finish_reason": "String",
    "num_tokens": "Int64",
    "status": "String",  # ok | failed (failed samples are retried by a rerun, never scored)
    "error": "String",
}
