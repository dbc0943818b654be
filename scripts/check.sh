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
  # alone are suppressed (tests/lsan.supp). pipeplan-measure unwinds its stacks
  # in full so that they still reach such a frame
  # (cli/measure_sanitizer_options.cc), and the tests that start `pipeplan
  # study` under mpirun ask for it in ASAN_OPTIONS; everything else unwinds fast.
  export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$PWD/../tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # Whole plan searches repeated many times (unpruned against pruned, every
  # thread and job count, every README example) run in the plain suite; the
  # searches' code runs here in the lighter plan and study tests.
  ctest --output-on-failure -j "$(nproc)" \
    -E '^(PlanPruning\.|Determinism\.|PlanSearch\.Llama405b|SearchAxes\.|ContextParallel\.LongContext|FirstHour\.PlanErrorsInsideTheSearch|FirstHour\.TheInfeasibleCap|Pages/Readme\.)'
)
./scripts/fuzz.sh "${PIPEPLAN_FUZZ_SECONDS:-20}"
