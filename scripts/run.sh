#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on its built-in
# default: the plan for Llama 3 70B on 64 H100s (global batch 256 x 8192
# tokens), then every schedule compared on the measured costs of a real
# model (the 1.5B GPT of Zero Bubble's Table 9, 8 stages, 24 micro-batches).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >&2   # progress on stderr; the plan on stdout
./build/cli/pipeplan plan --model llama3-70b --hardware h100-sxm --gpus 64 --global-batch 256 --seq 8192 "$@"
echo
./build/cli/pipeplan simulate --schedule all
