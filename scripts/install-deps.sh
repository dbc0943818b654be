#!/usr/bin/env bash
# Installs the Debian packages pipeplan builds against (skips what is there);
# --fuzz adds what the fuzz harnesses need.
set -euo pipefail

packages=(
  cmake g++ make
  libfmt-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libboost-graph-dev libeigen3-dev
  libgtest-dev libbenchmark-dev
  openmpi-bin libopenmpi-dev
  pybind11-dev python3-dev python3-pytest python3-venv python3-pip python3-matplotlib
)

# The checks CI adds (scripts/check.sh): clang and its libFuzzer runtime.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-dev)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "installing: ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
