#!/usr/bin/env bash
# The item chain's classifier stage, timed: `train-classifier` as cpu-items runs it (the items preset, --threads 1,
# the three packaged checks) against the chain's former 12-step command, on the same pairs, one after the other,
# ROUNDS times. Prints each run's wall seconds and peak memory and the median ratio items / former.
#     bash bench/classifier_recipe_time.sh [PAIRS=item-pairs] [ROUNDS=1]    (from the repository root; ~2 min a round)
# PAIRS: a pairs file or a packaged set (item-pairs: 348 pairs of one seed's chain, the cpu-items size).
set -euo pipefail
PAIRS=${1:-item-pairs}
ROUNDS=${2:-1}
WORK=${WORK:-$(mktemp -d /tmp/classifier-time-XXXX)}
PY=${PY:-.venv/bin/python}
COMMON=(--data "$PAIRS" --max-tokens-per-response 64 --threads 1 --seed 0 --log-every-n-steps 3)
declare -A RECIPE=(
    [items]="--preset items --warmup-steps 5 --max-steps -1 --checkpoint-every-n-steps 50"
    [former]="--preset cpu --warmup-steps 2 --max-steps 12 --checkpoint-every-n-steps 4"
)
echo "classifier_recipe_time: $(git rev-parse --short HEAD) ($(git status --porcelain | wc -l) changed files), $PAIRS, $ROUNDS round(s)"
declare -A SECONDS_OF
for r in $(seq 1 "$ROUNDS"); do
    for name in items former; do
        out=$WORK/$name-$r
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %M" -o "$WORK/time" "$PY" -m darling train-classifier ${RECIPE[$name]} "${COMMON[@]}" \
            --output "$out" >"$out.log" 2>&1
        read -r wall kb <"$WORK/time"
        SECONDS_OF[$name]+="$wall "
        echo "round $r $name: ${wall} s wall, $((kb / 1024)) MiB peak"
    done
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
items=$(median "${SECONDS_OF[items]}")
former=$(median "${SECONDS_OF[former]}")
echo "median: items ${items} s, former ${former} s, ratio $(awk -v a="$items" -v b="$former" 'BEGIN {printf "%.2f", a/b}')x"
