#!/usr/bin/env bash
# On a machine with a GPU (a lent H100/H200), in under 8 minutes: build with the CUDA Toolkit for
# this GPU, run the CUDA kernels' tests against their references, time each memory-bound kernel
# against the device's copy bandwidth and flash attention against cuBLAS's bf16 GEMM rate, and run
# a one-GPU `simrun validate --backend cuda` of the small scenario (cuBLASLt, our kernels, NCCL),
# printing the predicted and measured step. Full logs go to $OUT (or build-gpu/) when set.
#   exec/gpu_check.sh            (from the repository root)
# A lent machine lacks the simulator's Debian packages: carry them (exec/gpu_deps.sh fetch here,
# `carry: [".gpu-deps"]` there). Without them, or where they do not load, only the kernels build
# (SIMRUN_KERNELS_ONLY: their tests and benchmark) and validate is skipped, saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
logs="${OUT:-build-gpu}"
mkdir -p "$logs"
start=$(date +%s)
echo "== device"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
# shellcheck source=exec/gpu_deps.sh
[ -d .gpu-deps ] && source exec/gpu_deps.sh unpack
echo "== build (Release, CUDA for this GPU)"
build=build-gpu full=1
mpi=()  # the carried Open MPI, where exec/gpu_deps.sh unpacked it
[ -n "${MPI_CXX_COMPILER:-}" ] && mpi=(-DMPI_CXX_COMPILER="$MPI_CXX_COMPILER" -DMPIEXEC_EXECUTABLE="$MPIEXEC_EXECUTABLE")
nccl=()  # NCCL from PyTorch's wheel (nvidia-nccl-cu13) where the toolkit has none
if [ ! -e /usr/local/cuda/include/nccl.h ] && [ ! -e /usr/include/nccl.h ]; then
  d="$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)"
  if [ -n "$d" ] && [ -e "$d/include/nccl.h" ]; then
    nccl=(-DSIMRUN_NCCL_INCLUDE_DIR="$d/include" -DSIMRUN_NCCL_LIBRARY="$(ls "$d"/lib/libnccl.so* | head -1)")
    export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMRUN_CUDA=ON -DSIMRUN_TESTS=ON \
     -DCMAKE_CUDA_ARCHITECTURES=native "${mpi[@]}" "${nccl[@]}" > "$logs/configure.log" 2>&1; then
  echo "the full build does not configure here ($(grep -m1 -E 'Could not find|CMake Error' "$logs/configure.log" | cut -c1-120)):"
  echo "building the kernels alone (SIMRUN_KERNELS_ONLY)"
  build=build-gpu-kernels full=0
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMRUN_KERNELS_ONLY=ON \
    -DCMAKE_CUDA_ARCHITECTURES=native > "$logs/configure.log" 2>&1 || { tail -20 "$logs/configure.log"; exit 1; }
fi
grep "simrun:" "$logs/configure.log" || true
targets=(test_kernels_cuda test_kernels_cuda_attention test_kernels_ref cuda_kernels)
((full)) && targets+=(simrun)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" > "$logs/build.log" 2>&1 \
  || { grep -m20 -E "error|FAILED" "$logs/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
echo "== kernel tests against their references"
for t in test_kernels_cuda test_kernels_cuda_attention test_kernels_ref; do
  if "$build/tests/$t" > "$logs/$t.log" 2>&1; then
    echo "$t: $(tail -2 "$logs/$t.log" | tr '\n' ' ')"
  else
    echo "$t FAILED:"; grep -E "FAILED|with expansion|kernel .* plain|^  [A-Z]+\(" "$logs/$t.log" | head -40
  fi
done
echo "== kernels against the measured ceilings"
"$build/bench/cuda_kernels" 2>&1 | tee "$logs/cuda_kernels.txt"
echo "== validate, 1 GPU, cuda backend"
if ((full)); then
  if "$build/cli/simrun" validate examples/validate-small.json --backend cuda --gpus 1 --tp 1 --pp 1 --dp 1 \
      --global-batch 4 --steps 5 --warmup 2 --out "$logs/validate-cuda" > "$logs/validate-cuda.txt" \
      2> "$logs/validate-cuda.err"; then
    head -32 "$logs/validate-cuda.txt"
  else
    echo "validate --backend cuda failed:"; tail -5 "$logs/validate-cuda.err"
  fi
else
  echo "skipped: the full build needs the packages of exec/gpu_deps.sh"
fi
echo "== total $(( $(date +%s) - start )) s"
