#!/usr/bin/env bash
# On a machine with a GPU (a lent H100/H200), in a few minutes: build with the CUDA Toolkit, run
# the CUDA kernels' tests against their references, time each kernel against the device's copy
# bandwidth, and run a one-GPU `simrun validate` of the small scenario (cpu backend: the cuda
# backend's step runner is not written yet, issue 27). Prints what it measured; nothing else.
#   exec/gpu_check.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
echo "== device"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
echo "== build (Release, CUDA kernels for sm_80/90/100)"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMRUN_CUDA=ON -DSIMRUN_TESTS=ON > build-gpu.log
cmake --build build-gpu -j "$(nproc)" --target test_kernels_cuda test_kernels_ref cuda_kernels simrun >> build-gpu.log
echo "== kernel tests against their references"
build-gpu/tests/test_kernels_cuda --success 2>&1 | grep -E "passed|failed|FAILED|skipped|no CUDA" | tail -8
build-gpu/tests/test_kernels_ref | tail -2
echo "== kernel bandwidth against the device copy"
build-gpu/bench/cuda_kernels
echo "== validate (1 rank, cpu backend)"
build-gpu/cli/simrun validate examples/validate-small.json --tp 1 --pp 1 --dp 1 --global-batch 2 --steps 3 \
  --warmup 1 --out build-gpu/validate-1 2>/dev/null | grep -E "^(host|step )" || true
