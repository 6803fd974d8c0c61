#!/usr/bin/env bash
# Issue 68, step 2: at which budget does the checker's exact partition (checker-ceiling) beat GRPO on held-out item
# categories (the phrase form)? One lever and seed per call: GRPO and checker-ceiling from one GRPO warm-up (shared by
# every lever with the same warm-up settings and seed), with the same settings and seed, each with one thread side by
# side (as the pipeline's jobs = 2 runs them); then both policies answer the 30 held-out categories (eval novelty, 8
# answers at 0.7, as the chain evaluates) and `eval compare` gives checker-ceiling - grpo per prompt (distinct items
# by the checker, quality) and each run's acted share (its training log). Pool seeds with `eval study --pair
# "checker-ceiling - grpo"` over OUT/LEVER/seed-*/compare. No classifier trains: eval novelty needs one to run, and
# distinct items do not read it (CLASSIFIER: any export, e.g. the items classifier of issue 67).
#   STEPS=16 BATCH=32 LAYERS=10 TEMP=0.7 LR=3e-5 WARM_STEPS=16 WARM_TEMP=1.0 \
#     bash bench/studies/item_ceiling_levers.sh OUT LEVER SEED CLASSIFIER
# Every command resumes: rerun the same call after a kill.
set -euo pipefail
OUT=${1:?output folder}
LEVER=${2:?lever name}
SEED=${3:?seed}
CLASSIFIER=${4:?classifier export}
D=${DARLING:-.venv/bin/darling}
STEPS=${STEPS:-16}
BATCH=${BATCH:-32}              # completions a step: 8 per prompt
LAYERS=${LAYERS:-10}            # trainable_layers (none: every layer)
TEMP=${TEMP:-0.7}
LR=${LR:-3e-5}
WARM_STEPS=${WARM_STEPS:-16}    # 0: from the base policy
WARM_TEMP=${WARM_TEMP:-1.0}
PROMPTS=${PROMPTS:-items-phrase}  # the task variant: items-phrase or items (sentences)
RL_PRESET=${RL_PRESET:-items-phrase}
TOKENS=${TOKENS:-24}
QUALITY=${QUALITY:-item-phrase}  # item-sentence for PROMPTS=items

start=smollm2
if [ "$WARM_STEPS" != 0 ]; then
  warm="$OUT/warmup-$RL_PRESET-w$WARM_STEPS-t$WARM_TEMP/seed-$SEED"
  [ -f "$warm/log_history.json" ] || $D rl-train --preset "$RL_PRESET" --output "$warm" --limit 18 --method grpo \
    --no-strict-length --per-device-train-batch-size 16 --set trainable_layers=none --temperature "$WARM_TEMP" \
    --max-steps "$WARM_STEPS" --save-steps 4 --prune-checkpoints --seed "$SEED" --threads 2 \
    $( ls -d "$warm"/checkpoint-* >/dev/null 2>&1 && echo --resume ) > "$OUT/warmup-$SEED-$WARM_STEPS.log" 2>&1
  start="$warm/final"
fi

run="$OUT/$LEVER/seed-$SEED"
mkdir -p "$run"
arm() {  # METHOD: one RL run from the start policy
  local folder="$run/rl-$1" extra=()
  [ "$1" = checker-ceiling ] && extra=(--checker items)
  [ -f "$folder/log_history.json" ] || $D rl-train --preset "$RL_PRESET" --output "$folder" --policy "$start" \
    --limit 18 --method "$1" "${extra[@]}" --no-strict-length --per-device-train-batch-size "$BATCH" \
    --set "trainable_layers=$LAYERS" --set "learning_rate=$LR" --temperature "$TEMP" --max-steps "$STEPS" \
    --save-steps 4 --prune-checkpoints --seed "$SEED" --threads 1 \
    $( ls -d "$folder"/checkpoint-* >/dev/null 2>&1 && echo --resume ) > "$run/rl-$1.log" 2>&1
}
t0=$(date +%s)
arm grpo & g=$!
arm checker-ceiling & c=$!
wait $g; wait $c
echo "$LEVER seed $SEED: RL $(( $(date +%s) - t0 )) s" >> "$OUT/times.log"
t0=$(date +%s)
$D eval novelty --output "$run/eval" --classifier "$CLASSIFIER" --prompts "$PROMPTS-heldout" \
  --model "grpo=$run/rl-grpo/final" --model "checker-ceiling=$run/rl-checker-ceiling/final" --k 8 \
  --temperature 0.7 --max-tokens "$TOKENS" --limit 30 --seed "$SEED" --engine hf --threads 2 > "$run/eval.log" 2>&1
echo "$LEVER seed $SEED: eval $(( $(date +%s) - t0 )) s" >> "$OUT/times.log"
$D eval compare --output "$run/compare" --novelty "checker-ceiling=$run/eval/checker-ceiling" \
  --novelty "grpo=$run/eval/grpo" --training "checker-ceiling=$run/rl-checker-ceiling" \
  --training "grpo=$run/rl-grpo" --pairs checker-ceiling:grpo --quality "$QUALITY" \
  --seed "$SEED" > "$run/compare.log" 2>&1
# Keep the policies' answers and logs, not their weights (0.54 GB each).
rm -rf "$run/rl-grpo/final" "$run/rl-checker-ceiling/final"
