#!/usr/bin/env bash
# Configures and builds pipeplan (Release) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Python module and its tests use Debian's interpreter, which has Debian's
# pytest and matplotlib (another python3 may come first on PATH).
python=()
if [ -x /usr/bin/python3 ]; then python=(-DPython_EXECUTABLE=/usr/bin/python3); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPIPEPLAN_WARNINGS_AS_ERRORS=ON "${python[@]}" "$@"
cmake --build build -j "$(nproc)"
