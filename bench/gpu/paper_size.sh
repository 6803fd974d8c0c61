#!/usr/bin/env bash
#     OUT=/some/dir bash bench/gpu/paper_size.sh   (one GPU of >= 80 GiB, ~60 GB of free disk, ~6 min)
# The paper's classifier recipe at its real size on one GPU: a randomly initialised Qwen3 of Qwen3-Embedding-4B's
# shape (36 layers, width 2560, GQA 32/8 heads of 128, the real Qwen vocabulary), trained with `--preset paper`
# unchanged except for the backbone folder and the step count (FSDP, activation checkpointing, bf16-mixed, batch 1
# x 64 accumulated, 2048 tokens per response), then eval classifier and in-process scoring (fp32 vs bf16) of the
# 4B export. Random weights: the numbers measure time and memory, not quality.
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
REPO=$PWD; : "${OUT:?}"; LOG=$OUT/log.txt; : >"$LOG"
if [ -d .whl ]; then  # a machine with no package index: the wheels travelled beside the tree (bench/gpu/smoke.sh)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    python3 -c "import tarfile; tarfile.open('.gpu/polars_runtime.tar.xz').extractall('/tmp/site')"
    mkdir -p /tmp/pkg && ln -sfn "$REPO" /tmp/pkg/darling
    export PYTHONPATH=/tmp/pkg:/tmp/site HOME=/tmp/home
fi
W=/tmp/paper-size; rm -rf "$W"; mkdir -p "$W/data"; cd "$W"
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 1000 >"$W/gpu.csv" &
SMI=$!
t() { local t0=$SECONDS; "$@" 2>&1 | tee -a "$LOG"; local rc=${PIPESTATUS[0]}; echo "== rc=$rc $((SECONDS - t0))s: $*" | tee -a "$LOG"; return $rc; }
t python3 - <<'PY'
import json, time, torch
from transformers import Qwen3Model
from darling.core.local_models import qwen_tokenizer, tiny_qwen3_config
from darling.classifier.labelled_pairs import load_pairs, split_pairs
# Qwen3-Embedding-4B's config.json shape
config = tiny_qwen3_config(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                           num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000)
t0 = time.time()
torch.manual_seed(0)
with torch.device("cuda"):
    model = Qwen3Model(config).to(torch.bfloat16)
print(f"random Qwen3 (Embedding-4B shape): {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters, "
      f"built in {time.time() - t0:.0f} s")
model.save_pretrained("/tmp/paper-size/qwen3-4b-shape", safe_serialization=True)
qwen_tokenizer().save_pretrained("/tmp/paper-size/qwen3-4b-shape")
del model; torch.cuda.empty_cache()
pairs = load_pairs("noveltybench")
train, held = split_pairs(pairs, 0.15, 1234)
tok = qwen_tokenizer()
for name, rows in (("train", train), ("heldout", held)):
    with open(f"data/{name}.jsonl", "w") as fh:
        for p in rows:
            fh.write(json.dumps({"id": p.pair_id, "prompt": p.prompt, "generation_0": p.generation_0,
                                 "generation_1": p.generation_1, "similar": p.similar}) + "\n")
lengths = [len(tok(p.generation_0).input_ids) + len(tok(p.generation_1).input_ids) + len(tok(p.prompt).input_ids)
           for p in train]
print(f"train {len(train)} pairs, mean {sum(lengths) / len(lengths):.0f} tokens per pair (prompt + 2 responses), max {max(lengths)}")
PY
# 64 GiB of disk: the random backbone (8 GB) + the end-of-fit checkpoint with Adam's state (45 GB) + the fp32 export
# (16 GB) do not fit together; the checkpoint is removed once written (this run never resumes)
( while :; do f=$W/clf/training/checkpoints/last.ckpt; if [ -f "$f" ]; then a=$(stat -c %s "$f"); sleep 5;
  [ "$a" = "$(stat -c %s "$f" 2>/dev/null)" ] && { echo "removing $f ($a bytes)"; rm -f "$f"; break; }; else sleep 2; fi; done ) &
t python3 -m darling train-classifier --preset paper --backbone "$W/qwen3-4b-shape" --accelerator gpu --devices 1 \
    --max-steps 3 --warmup-steps 1 --checkpoint-every-n-steps 100 --log-every-n-steps 1 \
    --data "$W/data/train.jsonl" --test "$W/data/heldout.jsonl" --output "$W/clf"
cp "$W/clf/darling.json" "$OUT/clf-darling.json" 2>/dev/null
find "$W/clf" -maxdepth 6 -name "*.csv" | head -3 | tee -a "$LOG"
for f in $(find "$W/clf" -maxdepth 6 -name "metrics.csv" | head -1); do cp "$f" "$OUT/train-metrics.csv"; done
du -sh "$W/clf" | tee -a "$LOG"; ls -la "$W/clf" | tee -a "$LOG"
t python3 -m darling eval classifier --model "$W/clf" --data "$W/data/heldout.jsonl" --output "$W/clf-eval"
t python3 "$REPO/bench/gpu/score_bench.py" --model "$W/clf" --device cuda --pairs 256 --batch-size 32 --out "$OUT/score_bench_4b.json"
kill $SMI
sort -t, -k2 -n "$W/gpu.csv" | tail -1 | sed 's/^/peak GPU memory sample: /' | tee -a "$LOG"
cp "$W/gpu.csv" "$OUT/gpu.csv"
