#!/usr/bin/env bash
# Issue 82: the world chain (`darling pipeline --preset cpu-world`, three seeds) with one setting changed each, one run
# after another; then world_levers.py tables them. Ran at the commit named in docs/measurements.md ("The world").
set -euo pipefail
out=${1:-runs/world-levers}
for lever in "plain:" "long:--set world.wording=long" "short:--set world.wording=short" \
  "rl400:--set rl.max_steps=400" "clf10:--set classifier.epochs=10"; do
  name=${lever%%:*}
  args=${lever#*:}
  # shellcheck disable=SC2086
  darling pipeline --preset cpu-world --output "$out/$name" $args > "$out-$name.log" 2>&1
done
python bench/studies/world_levers.py "plain=$out/plain" "long=$out/long" "short=$out/short" "rl400=$out/rl400" \
  "clf10=$out/clf10" --output bench/studies/results/world_levers
