#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (build-check/) and runs each for
# SECONDS seconds (default 30) from its seeds: configs/, tests/data/ and
# fuzz/seeds/, with fuzz/dict/. A crash, a sanitizer report, an input over
# 1 s or 1 GiB, or any exception but an InputError fails the run; the input
# is kept in build-check/findings/<target>/ (add it to tests/data/fuzz/).
# PIPEPLAN_FUZZ_RUNS=N also stops a harness after N executions.
#   ./scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
./scripts/configure-check.sh
cmake --build build-check -j "$(nproc)" --target pipeplan_fuzzers

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(layout schedule_csv units expression model_yaml hardware_yaml cluster_yaml study_file plan_file profile_file
           request_trace hf_config)
fi

# Seeds per target: what the project ships and tests, plus fuzz/seeds/.
seeds_of() {
  case "$1" in
    schedule_csv) ls tests/data/*.csv ;;
    model_yaml) ls configs/models/*.yaml ;;
    hf_config) ls configs/hf/*/config.json ;;
    hardware_yaml) ls configs/hardware/*.yaml ;;
    cluster_yaml) ls configs/clusters/*.yaml ;;
    study_file) ls configs/studies/*.yaml ;;
    profile_file) ls configs/profiles/*.yaml ;;
  esac
  if [ -d "fuzz/seeds/$1" ]; then ls "fuzz/seeds/$1"/*; fi
  if [ -d "tests/data/fuzz/$1" ]; then ls "tests/data/fuzz/$1"/*; fi
}

dict_of() {
  case "$1" in
    layout | schedule_csv | units | expression | request_trace | hf_config) echo "fuzz/dict/$1.dict" ;;
    *) echo "fuzz/dict/yaml.dict" ;;
  esac
}

status=0
for target in "${targets[@]}"; do
  corpus="build-check/corpus/$target"
  findings="build-check/findings/$target"
  mkdir -p "$corpus" "$findings"
  # Seeds keep their paths in their names: several are called config.json.
  seeds_of "$target" | while read -r seed; do cp "$seed" "$corpus/${seed//\//_}"; done
  echo "== $target: $seconds s"
  if ! "build-check/fuzz/${target}_fuzz" "$corpus" -dict="$(dict_of "$target")" -max_total_time="$seconds" \
      -runs="${PIPEPLAN_FUZZ_RUNS:--1}" \
      -timeout=1 -rss_limit_mb=1024 -malloc_limit_mb=1024 -artifact_prefix="$findings/" \
      -print_final_stats=1 2> "build-check/$target.log"; then
    status=1
    echo "finding in $target: see build-check/$target.log and $findings/"
    tail -40 "build-check/$target.log"
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-check/$target.log" | tr '\n' ' '
  echo
done
exit $status
