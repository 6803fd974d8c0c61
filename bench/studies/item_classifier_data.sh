#!/usr/bin/env bash
# Issue 67's data: for each seed, the item chain's warm-up (the same command `darling pipeline --preset cpu-items`
# runs as its first stage) and its answers, as `darling datagen rollouts` writes them:
#   warm-T07   the warm-up at the chain's temperature (0.7), 32 answers per items-train prompt (the chain takes 16)
#   warm-T10   the warm-up at the warm-up's own temperature (1.0), 16 per prompt
#   base-T07   SmolLM2 before any training (the seed's sampling), 16 per prompt
#   heldout    the warm-up on the 30 held-out categories, 8 per prompt at 0.7, 48 tokens (as eval novelty samples)
# Every command resumes by itself; rerun after a stop.
#     bash bench/studies/item_classifier_data.sh /work/runs/items67 0 1 2 3 4
set -euo pipefail
OUT=$1; shift
DARLING=${DARLING:-.venv/bin/darling}
for SEED in "$@"; do
  RUN=$OUT/seed-$SEED
  mkdir -p "$RUN/logs"
  [ -f "$RUN/rl-warmup/log_history.json" ] || $DARLING rl-train --preset items --output "$RUN/rl-warmup" --limit 18 \
    --method grpo --no-strict-length --per-device-train-batch-size 16 --set trainable_layers=none --temperature 1.0 \
    --max-steps 16 --save-steps 4 --prune-checkpoints --seed "$SEED" --threads 2 \
    $( ls -d "$RUN"/rl-warmup/checkpoint-* >/dev/null 2>&1 && echo --resume ) > "$RUN/logs/rl-warmup.log" 2>&1
  gen() {  # NAME MODEL PROBLEMS N TEMPERATURE MAX_TOKENS
    $DARLING datagen rollouts --problems "$3" --output "$RUN/answers/$1" --model "start=$2" --system-prompt '' \
      --user-template '{problem}' --n "$4" --temperature "$5" --max-tokens "$6" --seed "$SEED" --limit 30 \
      --threads 2 > "$RUN/logs/answers-$1.log" 2>&1
  }
  gen warm-T07 "$RUN/rl-warmup/final" items-train 32 0.7 40
  gen heldout "$RUN/rl-warmup/final" items-heldout 8 0.7 48
  gen warm-T10 "$RUN/rl-warmup/final" items-train 16 1.0 40
  gen base-T07 smollm2 items-train 16 0.7 40
  echo "seed $SEED done"
done
