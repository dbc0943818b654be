#!/usr/bin/env bash
# Configures and builds pipeplan (Release) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Python module and its tests use Debian's interpreter, which has Debian's
# pytest and matplotlib (another python3 may come first on PATH).
python=()
if [ -x /usr/bin/python3 ]; then python=(-DPython_EXECUTABLE=/usr/bin/python3); fi
# The layering check (a test) reads the targets from CMake's file API: ask
# before the first configure, so that it answers then.
mkdir -p build/.cmake/api/v1/query && : > build/.cmake/api/v1/query/codemodel-v2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPIPEPLAN_WARNINGS_AS_ERRORS=ON "${python[@]}" "$@"
cmake --build build -j "$(nproc)"
