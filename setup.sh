#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running simrun.
#   ./setup.sh        install missing Debian packages (apt), build, run the main job on the
#                     headline example (Llama-3 70B on 1,024 H100s)
#   ./setup.sh test   the same, then the whole test suite through CTest, then the test suite
#                     again under AddressSanitizer + UndefinedBehaviorSanitizer
# Build folders: build/ (Release) and build-asan/ (sanitizers). Needs root or sudo for apt.
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-run}"
case "$mode" in run|test) ;; *) echo "usage: $0 [test]" >&2; exit 2 ;; esac

packages=(cmake ninja-build g++ pkg-config
          nlohmann-json3-dev libfmt-dev libcli11-dev libboost-graph-dev libeigen3-dev catch2
          libopenmpi-dev openmpi-bin   # MPI: optional to CMake; simrun validate, simrun plan under mpirun
          libimgui-dev libglfw3-dev libgl-dev xvfb xauth)  # simrun-gui and its headless tests (optional to CMake)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs="$(nproc)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"

echo
echo "== simrun examples/llama3-70b-h100.json"
./build/cli/simrun examples/llama3-70b-h100.json

if [ "$mode" = test ]; then
  echo
  echo "== test suite (Release)"
  ctest --test-dir build --output-on-failure -j "$jobs"
  echo
  echo "== test suite (ASan + UBSan)"
  # -O1 with line tables: what the sanitizers' docs advise for usable reports, and about 40%
  # less compile time than RelWithDebInfo's -O2 -g (the suite runs as fast under either). No
  # benchmarks: they time the instrumentation. Device code for one architecture: the sanitizers
  # see only host code, which is the same for any.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSIMRUN_SANITIZE=ON -DSIMRUN_BENCH=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi
