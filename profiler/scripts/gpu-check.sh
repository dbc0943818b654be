#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one go: configure and
# build, run the CUDA tests, profile llama3-8b's layers at modest shapes
# and, with two or more GPUs, sweep the NCCL link. Sized to finish in about
# 8 minutes on one H200, build included. Every output lands in
# ${OUT:-./gpu-out}; a failing step is reported and the next ones still
# run, so one session on a GPU yields everything it can. Exit status:
# nonzero if any step failed.
#
#   profiler/scripts/gpu-check.sh              # from the checkout's root
#   OUT=/tmp/h200 CUDA_ARCH=90 profiler/scripts/gpu-check.sh
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-./gpu-out}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
cd "$root" || exit 1
arch="${CUDA_ARCH:-native}"  # the GPUs present; e.g. 90 for an H200
jobs="$(nproc)"
failed=()

step() { printf '\n== %s (%ds elapsed)\n' "$1" "$SECONDS"; }
# run NAME LIMIT_S COMMAND...: the command's output to the terminal and $out/NAME.txt.
run() {
  local name="$1" limit="$2"
  shift 2
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.txt"
  local status="${PIPESTATUS[0]}"
  if [ "$status" -ne 0 ]; then
    failed+=("$name (exit $status)")
    echo "!! $name failed with exit status $status"
  fi
  return "$status"
}

step "GPUs"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee "$out/gpus.csv"
gpus="$(nvidia-smi --list-gpus | wc -l)"

step "configure and build (CUDA architectures: $arch, $jobs jobs)"
if ! run configure 120 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DPIPEPLAN_BUILD_BENCH=OFF \
    "-DCMAKE_CUDA_ARCHITECTURES=$arch" >/dev/null; then
  tail -40 "$out/configure.txt"
  exit 1
fi
if ! run build 420 cmake --build build-gpu --target pipeplan pipeplan_cuda_tests -j "$jobs" >/dev/null; then
  grep -E "error|Error" -A4 "$out/build.txt" | head -60
  exit 1
fi

step "CUDA tests"
run cuda-tests 180 build-gpu/tests/pipeplan_cuda_tests

step "profile llama3-8b (bf16)"
run profile 240 build-gpu/cli/pipeplan profile --backend cuda --model llama3-8b --micro-batch-size 1,2 \
  --seq 1024,4096 --warmup 2 --repeats 5 --out "$out/profile-h200.yaml"

step "NCCL link sweep"
if [ "$gpus" -ge 2 ]; then
  run links 120 build-gpu/cli/pipeplan profile links --backend nccl --max-bytes 256MiB --out "$out/links-nccl.yaml"
else
  echo "one GPU: no link to sweep (needs 2)" | tee "$out/links.txt"
fi

step "done"
ls -l "$out"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all steps passed"
