#!/usr/bin/env bash
# Does a multi-rank rl-train end? ROUNDS rounds of two launches side by side (load, as in the pipeline's DARLING and
# GRPO runs), each `rl-train --preset paper-tiny --method grpo --max-steps 2` on 2 gloo ranks through the
# pipeline's own `multi-cpu` accelerate config; a launch still running after LIMIT seconds counts as a hang.
#     bash bench/rl_exit.sh [ROUNDS=12] [LIMIT=150]      (from the repository root; ~40 s a round on 2 cores)
# Prints a line per round (ok / hang / fail so far); the launches' logs and exit codes stay in $WORK.
set -uo pipefail
ROUNDS=${1:-12}
LIMIT=${2:-150}
WORK=${WORK:-$(mktemp -d /tmp/rl-exit-XXXX)}
PY=${PY:-.venv/bin/python}
$PY -c "from darling.pipeline.resources import accelerate_config; print(accelerate_config('multi-cpu', 2))" >"$WORK/accelerate.yaml"
echo "rl_exit: $(git rev-parse --short HEAD 2>/dev/null) ($(git status --porcelain | wc -l) changed files), $ROUNDS rounds, limit ${LIMIT}s, logs in $WORK"
ok=0 hang=0 fail=0
for r in $(seq 1 "$ROUNDS"); do
    for j in 1 2; do
        out=$WORK/run-$r-$j
        (
            CUDA_VISIBLE_DEVICES= timeout -k 5 "$LIMIT" "$PY" -m accelerate.commands.launch \
                --config_file "$WORK/accelerate.yaml" --num_processes 2 -m darling rl-train --preset paper-tiny \
                --method grpo --max-steps 2 --output "$out" >"$out.log" 2>&1
            echo $? >"$out.rc"
            rm -rf "$out"   # the policy and its checkpoints (~0.6 GB a launch): only the log and rc are kept
        ) &
    done
    wait
    for j in 1 2; do
        case $(cat "$WORK/run-$r-$j.rc") in
            0) ok=$((ok + 1)) ;;
            124 | 137) hang=$((hang + 1)) ;;
            *) fail=$((fail + 1)) ;;
        esac
    done
    echo "round $r: ok $ok  hang $hang  fail $fail  ($(date +%T))"
done
