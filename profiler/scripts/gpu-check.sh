#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one go: configure and
# build (or take the programs already built in $PIPEPLAN_BUILD_DIR), run the
# CUDA tests, sweep the bf16 GEMM rate beside the time model's estimate,
# profile llama3-8b's layers and llama3-70b's at t = 8 (one rank's shard),
# validate single-GPU plans (measured against predicted, gradients against
# the fp32 reference) and, with two or more GPUs, sweep the NCCL link and
# validate a 2-rank pipeline. Sized to finish in about 8 minutes on one
# H200 with the build, about 4 without. Every output lands in
# ${OUT:-./gpu-out}; a failing step is reported and the next ones still
# run, so one session on a GPU yields everything it can. Exit status:
# nonzero if any step failed.
#
#   profiler/scripts/gpu-check.sh              # from the checkout's root
#   OUT=/tmp/h200 CUDA_ARCH=90 profiler/scripts/gpu-check.sh
#   PIPEPLAN_BUILD_DIR=build-gpu profiler/scripts/gpu-check.sh   # built already
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-./gpu-out}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
cd "$root" || exit 1
arch="${CUDA_ARCH:-native}"  # the GPUs present; e.g. 90 for an H200
hardware="${HARDWARE:-h200-sxm}"  # the hardware file the measurements are set beside
build="${PIPEPLAN_BUILD_DIR:-build-gpu}"
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
nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$out/gpus.csv"
nvidia-smi | grep -o "CUDA Version: [0-9.]*" | tee -a "$out/gpus.csv"
gpus="$(nvidia-smi --list-gpus | wc -l)"

if [ -x "$build/cli/pipeplan-measure" ] && [ -x "$build/tests/profiler/pipeplan_profiler_cuda_tests" ] && [ -x "$build/tests/validate/pipeplan_validate_cuda_tests" ] && [ -n "${PIPEPLAN_BUILD_DIR:-}" ]; then
  step "programs already built in $build"
else
  step "configure and build (CUDA architectures: $arch, $jobs jobs)"
  if ! run configure 120 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPIPEPLAN_BUILD_BENCH=OFF \
      "-DCMAKE_CUDA_ARCHITECTURES=$arch" >/dev/null; then
    tail -40 "$out/configure.txt"
    exit 1
  fi
  if ! run build 420 cmake --build "$build" --target pipeplan pipeplan-measure pipeplan_profiler_cuda_tests \
      pipeplan_validate_cuda_tests -j "$jobs" \
      >/dev/null; then
    grep -E "error|Error" -A4 "$out/build.txt" | head -60
    exit 1
  fi
fi
pipeplan="$build/cli/pipeplan"

step "CUDA tests"
run cuda-tests 120 "$build/tests/profiler/pipeplan_profiler_cuda_tests" "--gtest_output=xml:$out/cuda-tests.xml"
run cuda-validate-tests 120 "$build/tests/validate/pipeplan_validate_cuda_tests" \
  "--gtest_output=xml:$out/cuda-validate-tests.xml"

step "bf16 GEMM sweep beside $hardware's time model"
run gemm 120 "$pipeplan" profile gemm --backend cuda --hardware "$hardware" --out "$out/gemm-h200.yaml"

step "profile llama3-8b, and llama3-70b at t = 8 (bf16)"
run profile-8b 240 "$pipeplan" profile --backend cuda --model llama3-8b --micro-batch-size 1,2 \
  --seq 1024,4096,8192 --warmup 2 --repeats 5 --out "$out/llama3-8b-h200.yaml"
run profile-70b-t8 240 "$pipeplan" profile --backend cuda --model llama3-70b --tp 8 --micro-batch-size 1,2 \
  --seq 1024,4096,8192 --warmup 2 --repeats 5 --out "$out/llama3-70b-t8-h200.yaml"

step "validate single-GPU plans: tiny's gradients, gpt2-small's timing (1F1B)"
# The gradient check runs the whole model in fp32 on the host: tiny only.
if run plan-tiny 60 "$pipeplan" plan --model tiny --hardware "$hardware" --tp 1 --gpus 1 --pp 1 \
    --global-batch 8 --seq 128 --micro-batch-size 2 --schedule 1F1B --out "$out/plan-tiny.yaml"; then
  run validate-tiny 120 "$pipeplan" validate --plan "$out/plan-tiny.yaml" --backend cuda \
    --check-gradients --iterations 3 --out "$out/validate-tiny"
fi
plan_args=(--model gpt2-small --hardware "$hardware" --tp 1 --global-batch 16 --seq 1024 --micro-batch-size 2)
if run plan-1gpu 60 "$pipeplan" plan "${plan_args[@]}" --gpus 1 --pp 1 --schedule 1F1B \
    --out "$out/plan-1gpu.yaml"; then
  run validate-1gpu 180 "$pipeplan" validate --plan "$out/plan-1gpu.yaml" --backend cuda \
    --iterations 5 --out "$out/validate-1gpu"
fi

step "NCCL link sweep and a 2-rank pipeline"
if [ "$gpus" -ge 2 ]; then
  run links 120 "$pipeplan" profile links --backend nccl --max-bytes 256MiB --out "$out/links-nccl.yaml"
  if run plan-2gpu 60 "$pipeplan" plan "${plan_args[@]}" --gpus 2 --pp 2 --schedule ZBH1 \
      --out "$out/plan-2gpu.yaml"; then
    run validate-2gpu 180 mpirun --allow-run-as-root -np 2 "$pipeplan" validate \
      --plan "$out/plan-2gpu.yaml" --backend cuda --iterations 5 --out "$out/validate-2gpu"
  fi
else
  echo "one GPU: no link to sweep and no pipeline across GPUs (needs 2)" | tee "$out/links.txt"
fi

step "done"
ls -l "$out"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all steps passed"
