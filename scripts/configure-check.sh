#!/usr/bin/env bash
# Configures build-check/: clang with AddressSanitizer, UndefinedBehavior-
# Sanitizer and libFuzzer's instrumentation, the test suite and the fuzz
# harnesses (scripts/check.sh and scripts/fuzz.sh build in it). -O2 with line
# tables: the CPU backend's Eigen passes, which validation runs, are tens of
# times slower at -O1. No CUDA (its runtime and ASan's shadow memory do not
# mix); no Python module (an ASan library cannot load into an uninstrumented
# interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --fuzz
# The layering check (a test) reads the targets from CMake's file API: ask
# before the first configure, so that it answers then.
mkdir -p build-check/.cmake/api/v1/query && : > build-check/.cmake/api/v1/query/codemodel-v2
cmake -S . -B build-check -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None \
      -DCMAKE_CXX_FLAGS="-O2 -gline-tables-only" -DPIPEPLAN_FUZZ=ON -DPIPEPLAN_CUDA=OFF \
      -DPIPEPLAN_BUILD_BENCH=OFF -DPIPEPLAN_PYTHON=OFF -DPIPEPLAN_NATIVE_CPU=ON > /dev/null
