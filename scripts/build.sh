#!/usr/bin/env bash
# Configures and builds pipeplan (Release) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPIPEPLAN_WARNINGS_AS_ERRORS=ON "$@"
cmake --build build -j "$(nproc)"
