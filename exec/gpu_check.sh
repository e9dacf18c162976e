#!/usr/bin/env bash
# On a machine with a GPU (a lent H100/H200), in under 8 minutes: build with the CUDA Toolkit, run
# the CUDA kernels' tests against their references, time each memory-bound kernel against the
# device's copy bandwidth and flash attention against cuBLAS's bf16 GEMM rate, and run a one-GPU
# `simrun validate --backend cuda` of the small scenario (cuBLASLt, our kernels, NCCL), printing
# the predicted and measured step. Full logs go to $OUT (or build-gpu/) when set.
#   exec/gpu_check.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
logs="${OUT:-build-gpu}"
mkdir -p "$logs"
echo "== device"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
echo "== build (Release, CUDA kernels for sm_80/90/100, the cuda backend)"
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMRUN_CUDA=ON -DSIMRUN_TESTS=ON \
  > "$logs/build-gpu.log" 2>&1
grep "simrun:" "$logs/build-gpu.log" || true
cmake --build build-gpu -j "$(nproc)" --target test_kernels_cuda test_kernels_cuda_attention test_kernels_ref \
  cuda_kernels simrun >> "$logs/build-gpu.log" 2>&1 || { tail -30 "$logs/build-gpu.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
echo "== kernel tests against their references"
for t in test_kernels_cuda test_kernels_cuda_attention test_kernels_ref; do
  build-gpu/tests/$t > "$logs/$t.log" 2>&1 && echo "$t: $(tail -2 "$logs/$t.log" | tr '\n' ' ')" \
    || { echo "$t FAILED:"; grep -E "FAILED|with expansion|REQUIRE|CHECK|kernel .* plain" "$logs/$t.log" | head -40; }
done
echo "== kernels against the measured ceilings"
build-gpu/bench/cuda_kernels 2>&1 | tee "$logs/cuda_kernels.txt"
echo "== validate, 1 GPU, cuda backend"
if build-gpu/cli/simrun validate examples/validate-small.json --backend cuda --tp 1 --pp 1 --dp 1 \
    --global-batch 4 --steps 5 --warmup 2 --out "$logs/validate-cuda" > "$logs/validate-cuda.txt" \
    2> "$logs/validate-cuda.err"; then
  head -32 "$logs/validate-cuda.txt"
else
  echo "validate --backend cuda failed:"; tail -5 "$logs/validate-cuda.err"
fi
echo "== total $(( $(date +%s) - start )) s"
