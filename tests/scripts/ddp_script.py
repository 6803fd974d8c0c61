"""Run by test_training.py::test_ddp_on_two_cpu_processes. Lightning's DDP launcher re-executes this
script once per rank, so it must be a file, not a function."""

import json
import sys
from pathlib import Path

from helpers import save_tiny_bert_backbone, synthetic_pairs, write_jsonl

from darling.classifier.backbones import resolve_backbone
from darling.classifier.config import PACKAGED_MINILM, build_config
from darling.classifier.train import train_classifier

if __name__ == "__main__":
    work = Path(sys.argv[1])
    backbone = work / "backbone"
    if not (backbone / "config.json").exists():
        save_tiny_bert_backbone(backbone, resolve_backbone(PACKAGED_MINILM))
    data = write_jsonl(work / "pairs.jsonl", synthetic_pairs(64))
    cfg = build_config(
        "cpu-cross",
        overrides=dict(
            backbone=str(backbone),
            max_steps=4,
            batch_size=4,
            max_tokens_per_response=16,
            freeze_layers=0,
            strategy="ddp",
            devices="2",
            accelerator="cpu",
            threads=1,
            val_fraction=0.25,
        ),
    )
    result = train_classifier(cfg, data, work / "clf", progress=False)
    print("RESULT " + json.dumps({"step": result.global_step, "exported": result.model is not None}), flush=True)
