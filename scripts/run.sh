#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on its built-in
# default: every schedule compared on the measured costs of a real model
# (the 1.5B GPT of Zero Bubble's Table 9, 8 stages, 24 micro-batches), then
# the best zero-bubble schedule in detail. Extra arguments go to `simulate`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh > /dev/null
./build/cli/pipeplan simulate --schedule all "$@"
echo
./build/cli/pipeplan simulate --schedule ZBH2 "$@"
