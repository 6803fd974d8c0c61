#!/usr/bin/env bash
# Issue 67's diagnosis: the item chain's own classifier data and classifier, by the commands `darling pipeline
# --preset cpu-items` runs (its datagen, pairs, labels, classifier blocks as at 9815d51: 16 answers per prompt at 0.7,
# 12 pairs of each label per prompt, the checker's labels, the cpu recipe for 12 steps), from the warm-up that
# item_classifier_data.sh trained for the seed (the chain's own first stage). Writes SEED_DIR/chain/.
#     bash bench/studies/item_chain_classifier.sh /work/runs/items67 1 2 3
set -euo pipefail
OUT=$1; shift
DARLING=${DARLING:-.venv/bin/darling}
for SEED in "$@"; do
  RUN=$OUT/seed-$SEED/chain
  WARMUP=$OUT/seed-$SEED/rl-warmup/final
  mkdir -p "$RUN"
  $DARLING datagen rollouts --problems items-train --output "$RUN/datagen" --model "start=$WARMUP" --system-prompt '' \
    --user-template '{problem}' --n 16 --temperature 0.7 --max-tokens 40 --seed "$SEED" --limit 18 --threads 2
  $DARLING datagen pairs --rollouts "$RUN/datagen" --output "$RUN/pairs" --no-cross-model-only \
    --max-pairs-per-problem 12 --checker items --seed "$SEED" --workers 1
  $DARLING datagen label --pairs "$RUN/pairs" --output "$RUN/labels" --checker items --seed "$SEED"
  $DARLING datagen training-pairs --output "$RUN/training-pairs" --labels "$RUN/labels" --source judge \
    --human-pairs 200 --seed "$SEED"
  [ -f "$RUN/classifier/darling.json" ] || $DARLING train-classifier --preset cpu --data "$RUN/training-pairs/pairs.jsonl" \
    --output "$RUN/classifier" --max-tokens-per-response 64 --warmup-steps 2 --max-steps 12 --threads 1 \
    --seed "$SEED" --log-every-n-steps 3 --checkpoint-every-n-steps 4 --set auc_floor=none
done
