#!/usr/bin/env bash
# Issue 68, step 1: do the partitions differ on the start policy's answers to the phrase form of the item prompts?
# The base SmolLM2 (the warm-up's start) answers each form's training and held-out categories (8 answers a prompt at
# 1.0, rl-train's temperature, and at 0.7, eval novelty's); `darling eval partitions` then counts, per partition
# (the checker, the 4-gram rule, the content-word rule, a classifier if one is given), the share of same-item pairs
# it splits and of different-item pairs it joins, and the share of answers naming a member.
#   bash bench/studies/item_phrase_partitions.sh OUT [CLASSIFIER_EXPORT]
set -euo pipefail
OUT=${1:?output folder}
CLASSIFIER=${2:-}
D=".venv/bin/darling"
for temperature in 1.0 0.7; do
  for form in items items-phrase; do
    tokens=48; [ "$form" = items-phrase ] && tokens=24
    for part in train heldout; do
      folder="$OUT/T$temperature/$form-$part"
      $D eval novelty --output "$folder" --prompts "$form-$part" \
        --model "base=smollm2" --k 8 --temperature "$temperature" --max-tokens "$tokens" --seed 0 --engine hf \
        ${CLASSIFIER:+--classifier "$CLASSIFIER"}
    done
  done
  answers=()
  for form in items items-phrase; do
    for part in train heldout; do answers+=(--answers "$form-$part=$OUT/T$temperature/$form-$part/base"); done
  done
  $D eval partitions --output "$OUT/T$temperature/partitions" "${answers[@]}" \
    ${CLASSIFIER:+--classifier "items67=$CLASSIFIER"} --checker items
done
# The warm-up's answers (the chain's RL start), as measured in docs/measurements.md:
#   darling rl-train --preset items-phrase --output OUT/rl-warmup --limit 18 --method grpo --no-strict-length \
#       --per-device-train-batch-size 16 --set trainable_layers=none --temperature 1.0 --max-steps 16 --seed 0
#   then eval novelty (--model warm=OUT/rl-warmup/final, --temperature 0.7 --max-tokens 24) on both phrase sets and
#   eval partitions over them, as above.
