#!/usr/bin/env bash
# The checks beyond the test suite, as CI runs them after scripts/test.sh:
# the whole suite built with AddressSanitizer and UndefinedBehaviorSanitizer
# (build-check/; any report fails a test), then every fuzz harness for
# PIPEPLAN_FUZZ_SECONDS seconds each (default 20; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/configure-check.sh
cmake --build build-check -j "$(nproc)"
(
  cd build-check
  # OpenMPI's own allocations outlive MPI_Finalize: frames in its libraries
  # alone are suppressed (tests/lsan.supp). Its components are unloaded by
  # then, so only stacks unwound in full (fast_unwind_on_malloc=0) still
  # reach a libmpi frame the suppressions can match.
  export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:strict_string_checks=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$PWD/../tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # Whole plan searches repeated many times (unpruned against pruned, every
  # thread count, every README example) take an hour under full unwinding;
  # they run in the plain suite, and the searches' code runs here in the
  # lighter plan tests.
  ctest --output-on-failure -j "$(nproc)" \
    -E '^(PlanPruning\.|Determinism\.PlansDoNotDependOnThreads|PlanSearch\.Llama405b|SearchAxes\.|ContextParallel\.LongContext|FirstHour\.PlanErrorsInsideTheSearch|FirstHour\.TheInfeasibleCap|Readme\.)'
)
./scripts/fuzz.sh "${PIPEPLAN_FUZZ_SECONDS:-20}"
